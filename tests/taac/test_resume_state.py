"""--resume exactness: the target-update period counter and the first-tau RNG come back from the checkpoint."""
import numpy as np
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import TrainerSettings
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.taac.optimizer import STATE_MODULE
from mlagents_plugins.taac.settings import TaacSettings
from mlagents_plugins.taac.trainer import TaacTrainer

from .test_trainer import synthetic_batch

SPEC = BehaviorSpec(
    [ObservationSpec((4,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs")], ActionSpec.create_continuous(2)
)


def wired_trainer(tmp_path, load, seed):
    settings = TrainerSettings(
        trainer_type="taac",
        hyperparameters=TaacSettings(target_update_period=3, target_update_tau=0.5, randomize_first_state_tau=True,
                                     compile_update=False),
        max_steps=1000,
    )
    settings.network_settings.hidden_units = 16
    trainer = TaacTrainer("Ball", 1, settings, True, load, seed, str(tmp_path))
    bid = BehaviorIdentifiers.from_name_behavior_id("Ball?team=0")
    trainer.add_policy(bid, trainer.create_policy(bid, SPEC))
    return trainer


def target_params(opt):
    return [p.detach().clone() for p in opt.q_target.parameters()]


def test_checkpoint_round_trip_restores_update_counter_and_first_tau_rng(tmp_path):
    torch.manual_seed(0)
    first = wired_trainer(tmp_path, load=False, seed=0)
    batch = synthetic_batch(first)
    for _ in range(5):
        first.optimizer.update(batch)
    first.policy.initial_memories(["a", "b", "c"])  # draws three random first trajectories
    first.save_model()
    expected_draws = first.policy.first_tau_rng.uniform(size=4)

    # A different seed: without the saved state, both would differ from the first run's.
    second = wired_trainer(tmp_path, load=True, seed=123)
    assert second.optimizer.num_updates == 5
    np.testing.assert_array_equal(second.policy.first_tau_rng.uniform(size=4), expected_draws)

    # Update 6 is a target update (period 3): the target moves; update 7 is not: the target stays.
    before = target_params(second.optimizer)
    second.optimizer.update(batch)
    assert any(not torch.equal(a, b) for a, b in zip(before, target_params(second.optimizer)))
    before = target_params(second.optimizer)
    second.optimizer.update(batch)
    assert all(torch.equal(a, b) for a, b in zip(before, target_params(second.optimizer)))


def test_fresh_run_starts_counter_at_zero_and_state_is_in_the_checkpoint(tmp_path):
    trainer = wired_trainer(tmp_path, load=False, seed=0)
    assert trainer.optimizer.num_updates == 0
    modules = trainer.optimizer.get_modules()
    state = modules[STATE_MODULE].state_dict()
    extra = next(v for k, v in state.items() if k.endswith("_extra_state"))
    assert extra["num_updates"] == 0 and extra["first_tau_rng"]["bit_generator"] == "PCG64"
