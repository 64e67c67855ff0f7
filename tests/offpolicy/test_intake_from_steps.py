"""Intake reads each trajectory chunk straight from its steps, with the values ``Trajectory.to_agentbuffer()``
would give: rows, step extras, the normalizer's update, the reward totals of the summaries.

The reference is written here from ML-Agents' own ``AgentBuffer`` of the chunk, as intake did before (one
``to_agentbuffer()`` per chunk); chunks mix what an off-policy row must carry: vector and camera observations,
continuous and discrete actions with masks, time-outs, episode ends, group rewards, float64 rewards.
"""
from typing import Dict

import numpy as np
import pytest
from mlagents.trainers.buffer import AgentBuffer, BufferKey
from mlagents.trainers.trajectory import ObsUtil, Trajectory

from mlagents_plugins.offpolicy import rows as R
from mlagents_plugins.offpolicy.extras import StepExtras
from mlagents_plugins.replay.specs import FieldSpec
from tests.builders import behavior_spec, trajectory
from tests.fast_sac.helpers import make_trainer


def reference_rows(spec, traj: Trajectory) -> Dict[str, np.ndarray]:
    """Standard rows from the chunk's ``AgentBuffer`` (the former intake)."""
    buf: AgentBuffer = traj.to_agentbuffer()
    n = buf.num_experiences
    rows = {}
    for i, o in enumerate(spec.observation_specs):
        compact = len(o.shape) == 3
        for field, key in ((R.obs_field(i), ObsUtil.get_name_at(i)), (R.next_obs_field(i), ObsUtil.get_name_at_next(i))):
            x = np.asarray(buf[key], dtype=np.float32)
            rows[field] = np.clip(np.rint(x * 255.0), 0, 255).astype(np.uint8) if compact else x
    a = spec.action_spec
    if a.continuous_size:
        rows[R.CONT_ACTION] = np.asarray(buf[BufferKey.CONTINUOUS_ACTION], dtype=np.float32).reshape(n, -1)
    if a.discrete_size:
        rows[R.DISC_ACTION] = np.asarray(buf[BufferKey.DISCRETE_ACTION]).reshape(n, -1).astype(np.int32)
        mask = np.asarray(buf[BufferKey.ACTION_MASK], dtype=np.float32) > 0.5
        rows[R.ACTION_MASK] = mask
        rows[R.NEXT_ACTION_MASK] = np.concatenate([mask[1:], np.ones_like(mask[:1])])
    rows[R.REWARD] = np.asarray(buf[BufferKey.ENVIRONMENT_REWARDS], dtype=np.float32)
    rows[R.TERMINAL] = np.arange(n) == n - 1 if traj.done_reached and not traj.interrupted else np.zeros(n, bool)
    return rows


# (behavior spec, chunk length, how the chunk ends): no end, episode end, max-step end (interrupted), one step.
CHUNKS = [
    (dict(obs_shapes=((5,), (3,)), cont=2), 7, dict(done=False)),
    (dict(obs_shapes=((3, 20, 20), (2,)), cont=0, branches=(3, 4)), 7, dict(done=True)),
    (dict(obs_shapes=((4,),), cont=1, branches=(5,)), 7, dict(done=True, interrupted=True)),
    (dict(obs_shapes=((3, 12, 12),), cont=2, branches=(2, 3)), 1, dict(done=True, interrupted=True)),
]


@pytest.mark.parametrize("case", range(len(CHUNKS)))
def test_rows_equal_the_agent_buffer_rows(case):
    spec_kw, length, traj_kw = CHUNKS[case]
    spec = behavior_spec(**spec_kw)
    rng = np.random.default_rng(case)
    masks = None
    if spec.action_spec.discrete_size:
        masks = [[rng.random(b) < 0.3 for b in spec.action_spec.discrete_branches] for _ in range(length)]
    traj = trajectory(spec, length, rng, masks=masks, reward=lambda t: 0.1 * t - 0.25, **traj_kw)
    expected, got = reference_rows(spec, traj), R.trajectory_to_rows(spec, traj)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    stacked = R.stacked_observations(traj)
    assert all(x.dtype == np.float32 and len(x) == length for x in stacked)
    np.testing.assert_array_equal(R.trajectory_to_rows(spec, traj, stacked)[R.obs_field(0)], expected[R.obs_field(0)])


def test_a_chunk_without_masks_allows_every_action():
    """An environment that sends no mask: the buffer holds ones of the branch count (not a [n, A] mask), which the
    former intake read as "everything allowed"; so does the new one."""
    spec = behavior_spec(obs_shapes=((4,),), cont=0, branches=(2, 3))
    traj = trajectory(spec, 3, np.random.default_rng(0))
    traj = Trajectory(steps=[s._replace(action_mask=None) for s in traj.steps], next_obs=traj.next_obs,
                      next_group_obs=[], agent_id=traj.agent_id, behavior_id=traj.behavior_id)
    assert np.asarray(traj.to_agentbuffer()[BufferKey.ACTION_MASK]).shape == (3, 2)
    rows = R.trajectory_to_rows(spec, traj)
    assert rows[R.ACTION_MASK].shape == (3, 5) and rows[R.ACTION_MASK].all() and rows[R.NEXT_ACTION_MASK].all()


def test_step_extras_read_from_the_steps_as_from_the_buffer():
    extras = StepExtras({"a": FieldSpec((2,), "float32"), "flag": FieldSpec((), "bool"), "k": FieldSpec((), "int32")})
    spec = behavior_spec(obs_shapes=((3,),), cont=4)
    traj = trajectory(spec, 5, np.random.default_rng(1), random_log_probs=True)
    steps = [s._replace(action_probs=s.action_probs.__class__(
        continuous=np.array([0.5 * t, -t, float(t % 2), float(3 * t)], np.float32), discrete=s.action_probs.discrete))
        for t, s in enumerate(traj.steps)]
    traj = Trajectory(steps=steps, next_obs=traj.next_obs, next_group_obs=[], agent_id="x", behavior_id="B?team=0")
    got = extras.read(traj)
    expected = extras.unpack(np.asarray(traj.to_agentbuffer()[BufferKey.CONTINUOUS_LOG_PROBS], dtype=np.float32))
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])
    assert got["k"].tolist() == [0, 3, 6, 9, 12] and got["flag"].tolist() == [False, True, False, True, False]


def test_intake_updates_the_normalizer_and_reward_totals_as_the_buffer_path(tmp_path):
    """Two trainers fed the same chunks: one through intake, one through the former steps (its AgentBuffer)."""
    spec = behavior_spec(obs_shapes=((4,),), cont=2)
    ours = make_trainer(spec, tmp_path / "a", normalize=True, buffer_init_steps=10 ** 6)
    reference = make_trainer(spec, tmp_path / "b", normalize=True, buffer_init_steps=10 ** 6)
    rng = np.random.default_rng(3)
    for k in range(4):
        traj = trajectory(spec, 6, rng, agent_id=f"a{k % 2}",  # no episode end: the totals are kept
                          observe=lambda t: [rng.normal(2.0, 3.0, 4).astype(np.float32)])
        steps = [s._replace(reward=float(rng.normal()), group_reward=0.5 * (t % 3 == 0))
                 for t, s in enumerate(traj.steps)]
        traj = Trajectory(steps=steps, next_obs=traj.next_obs, next_group_obs=[], agent_id=traj.agent_id,
                          behavior_id=traj.behavior_id)
        ours._process_trajectory(traj)
        buf = traj.to_agentbuffer()
        reference.policy.actor.update_normalization(buf)
        reference.collected_rewards["environment"][traj.agent_id] += float(np.sum(buf[BufferKey.ENVIRONMENT_REWARDS]))
        for name, signal in reference.optimizer.reward_signals.items():
            reference.collected_rewards[name][traj.agent_id] += float(np.sum(signal.evaluate(buf) * signal.strength))
    for key in ("environment", "extrinsic"):
        assert dict(ours.collected_rewards[key]) == dict(reference.collected_rewards[key]), key
    assert ours.collected_rewards["extrinsic"]["a0"] != ours.collected_rewards["environment"]["a0"]  # group rewards
    norm, ref_norm = (t.policy.actor.network_body.observation_encoder.processors[0].normalizer for t in (ours, reference))
    for attr in ("running_mean", "running_variance", "normalization_steps"):
        assert torch_equal(getattr(norm, attr), getattr(ref_norm, attr)), attr
    assert ours.replay.size == 24


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))
