"""fast_sac updates with every observation kind and visual encoder ML-Agents offers (its own network bodies)."""
import numpy as np
import pytest

from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from helpers import make_trainer
from tests.builders import trajectory


def _visual(shape):
    return ObservationSpec(
        shape,
        (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE),
        ObservationType.DEFAULT,
        "camera",
    )


VECTOR = ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vec")
ENTITIES = ObservationSpec(
    (4, 3), (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE), ObservationType.DEFAULT, "entities"
)
GOAL = ObservationSpec((2,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")


@pytest.mark.parametrize(
    "obs,encoder",
    [
        ([_visual((3, 20, 20)), VECTOR], "simple"),
        ([_visual((3, 36, 36))], "nature_cnn"),
        ([_visual((3, 15, 15))], "resnet"),
        ([_visual((3, 5, 5)), VECTOR], "match3"),
        ([_visual((1, 6, 6))], "fully_connected"),
        ([VECTOR, ENTITIES], "simple"),
        ([VECTOR, GOAL], "simple"),
    ],
)
def test_update_runs_for_observation_kind(tmp_path, obs, encoder):
    spec = BehaviorSpec(obs, ActionSpec(1, (2,)))
    trainer = make_trainer(spec, tmp_path, batch_size=8, buffer_init_steps=10 ** 6, encoder=encoder)
    rng = np.random.default_rng(0)
    for _ in range(2):
        trainer._process_trajectory(trajectory(spec, 6, rng))
    before = [p.detach().clone() for p in trainer.optimizer.head.q_params]
    stats = trainer.update_once()
    assert np.isfinite(stats["Losses/Q1 Loss"]) and np.isfinite(stats["Losses/Policy Loss"])
    assert any(bool((b != p).any()) for b, p in zip(before, trainer.optimizer.head.q_params))
    for name, field in trainer.replay.fields.items():
        if name.startswith("obs_") and len(field.shape) == 3:
            assert field.dtype == "uint8"
