"""Step extras (policy -> trajectory -> named replay columns) and CheckpointState (non-tensor state in the .pt)."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.trajectory import AgentExperience, Trajectory
from mlagents_envs.base_env import ActionTuple

from tests.builders import behavior_spec
from mlagents_plugins.offpolicy import rows as R
from mlagents_plugins.offpolicy.checkpoint_state import CheckpointState
from mlagents_plugins.offpolicy.extras import STEP_EXTRAS_OUTPUT, StepExtras
from mlagents_plugins.replay.specs import FieldSpec
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import FastSACTrainer

EXTRAS = StepExtras(
    {"grid": FieldSpec((2, 3), "float32"), "flag": FieldSpec((), "bool"), "count": FieldSpec((), "int32")}
)


def values(n, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "grid": rng.normal(size=(n, 2, 3)).astype(np.float32),
        "flag": rng.random(n) < 0.5,
        "count": rng.integers(-1000, 100000, size=n).astype(np.int32),
    }


def test_pack_layout_and_round_trip():
    v = values(4)
    packed = EXTRAS.pack(v)
    assert EXTRAS.width == 8 and packed.shape == (4, 8) and packed.dtype == np.float32
    # Declaration order, each field flattened row-major: [grid (6) | flag (1) | count (1)].
    np.testing.assert_array_equal(packed[2, :6], v["grid"][2].reshape(-1))
    assert packed[1, 6] == float(v["flag"][1]) and packed[3, 7] == float(v["count"][3])
    back = EXTRAS.unpack(packed)
    assert back["flag"].dtype == bool and back["count"].dtype == np.int32 and back["grid"].shape == (4, 2, 3)
    for k in v:
        np.testing.assert_array_equal(back[k], v[k])


def test_bad_extras_are_refused_with_names():
    v = values(3)
    with pytest.raises(ValueError, match="count"):
        EXTRAS.pack({k: x for k, x in v.items() if k != "count"})
    with pytest.raises(ValueError, match="'grid'.*\\(3, 2, 3\\)"):
        EXTRAS.pack(dict(v, grid=np.zeros((3, 3, 2), np.float32)))
    with pytest.raises(ValueError, match="2\\*\\*24"):
        EXTRAS.pack(dict(v, count=np.full(3, 2 ** 25, np.int64)))
    with pytest.raises(ValueError, match=r"\[N, 8\].*\(3, 7\)"):
        EXTRAS.unpack(np.zeros((3, 7), np.float32))
    with pytest.raises(ValueError, match="float64"):
        StepExtras({"x": FieldSpec((), "float64")})


class ExtrasTrainer(FastSACTrainer):
    """fast_sac with a policy that records two extras per step (as a TAAC-like trainer would)."""

    def step_extras(self, spec):
        return EXTRAS

    def observe_rows(self, rows, trajectory):
        self.observed = getattr(self, "observed", []) + [dict(rows)]


def extras_trajectory(spec, n, seed):
    """What AgentProcessor builds: row i of the policy's outputs["log_probs"].continuous in each experience."""
    v = values(n, seed)
    outputs = EXTRAS.policy_outputs(v)
    assert outputs[STEP_EXTRAS_OUTPUT] is not v and set(outputs[STEP_EXTRAS_OUTPUT]) == set(v)
    lp = outputs["log_probs"]
    rng = np.random.default_rng(seed + 100)
    steps = [
        AgentExperience(
            obs=[rng.random(3).astype(np.float32)], reward=0.5, done=i == n - 1,
            action=ActionTuple(continuous=rng.uniform(-1, 1, 2).astype(np.float32)),
            action_probs=type(lp)(continuous=lp.continuous[i], discrete=lp.discrete[i]),
            action_mask=None, prev_action=np.zeros(0, np.int32), interrupted=False, memory=None,
            group_status=[], group_reward=0.0,
        )
        for i in range(n)
    ]
    return Trajectory(steps=steps, next_obs=[rng.random(3).astype(np.float32)], next_group_obs=[], agent_id="a",
                      behavior_id="B?team=0"), v


def test_base_stores_declared_extras_as_named_replay_columns(tmp_path):
    spec = behavior_spec()
    settings = TrainerSettings(trainer_type="fast_sac", hyperparameters=FastSACSettings(batch_size=4, buffer_size=50),
                               max_steps=1000)
    settings.network_settings.hidden_units = 8
    trainer = ExtrasTrainer("B", 10, settings, True, False, 0, str(tmp_path))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(bid, trainer.create_policy(bid, spec))
    layout = trainer.replay.fields
    assert set(R.transition_fields(spec)) | set(EXTRAS.fields) == set(layout)
    assert layout["grid"] == FieldSpec((2, 3), "float32")
    traj, v = extras_trajectory(spec, 5, seed=3)
    trainer._process_trajectory(traj)
    rows = trainer.replay.gather(np.arange(5))
    for k in v:
        np.testing.assert_array_equal(rows[k], v[k])
    assert set(trainer.observed[0]) == set(layout)  # observe_rows saw the complete rows


def test_extras_with_the_name_of_a_replay_field_are_refused(tmp_path):
    class Clash(FastSACTrainer):
        def step_extras(self, spec):
            return StepExtras({R.REWARD: FieldSpec((), "float32")})

    settings = TrainerSettings(trainer_type="fast_sac", hyperparameters=FastSACSettings(), max_steps=10)
    trainer = Clash("B", 10, settings, True, False, 0, str(tmp_path))
    with pytest.raises(ValueError, match="reward"):
        trainer.replay_layout(behavior_spec())


def test_checkpoint_state_round_trip_through_torch_save(tmp_path):
    box = {"n": 7}
    rng = np.random.default_rng(5)
    rng.uniform(size=3)
    state = CheckpointState()
    state.register("n", lambda: box["n"], lambda x: box.__setitem__("n", x))
    state.register_rng("rng", rng)
    path = str(tmp_path / "s.pt")
    torch.save({"m": state.state_dict()}, path)
    expected = rng.uniform(size=5)

    box2 = {"n": 0}
    rng2 = np.random.default_rng(999)
    other = CheckpointState()
    other.register("n", lambda: box2["n"], lambda x: box2.__setitem__("n", x))
    other.register_rng("rng", rng2)
    other.load_state_dict(torch.load(path, weights_only=True)["m"], strict=False)
    assert box2["n"] == 7
    np.testing.assert_array_equal(rng2.uniform(size=5), expected)
    with pytest.raises(ValueError, match="twice"):
        other.register("n", lambda: 0, lambda x: None)


def test_checkpoint_state_keeps_fresh_values_for_keys_an_old_checkpoint_lacks():
    box = {"a": 1, "b": 2}
    state = CheckpointState()
    for k in box:
        state.register(k, lambda k=k: box[k], lambda x, k=k: box.__setitem__(k, x))
    state.set_extra_state({"a": 10, "unknown": 3})
    assert box == {"a": 10, "b": 2}
