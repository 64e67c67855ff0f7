"""SceneEnv as a BaseEnv: steps, terminal semantics, ids, masks, side channels."""
import numpy as np
import pytest

from mlagents_envs.base_env import ActionTuple
from mlagents_envs.exception import UnityActionException
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod, StatsSideChannel

from mlagents_plugins.envs.academy import STAT_DIFFICULTY, STAT_SUCCESS_RATE
from mlagents_plugins.envs.inprocess import SceneEnv


def test_specs_and_first_steps():
    env = SceneEnv("camera", num_areas=2, seed=0)
    assert list(env.behavior_specs) == ["Camera?team=0"]
    spec = env.behavior_specs["Camera?team=0"]
    assert [tuple(o.shape) for o in spec.observation_specs] == [(3, 27, 27), (2,)]
    assert spec.action_spec.discrete_branches == (5,)
    env.reset()
    dec, term = env.get_steps("Camera?team=0")
    assert len(dec) == 8 and len(term) == 0
    assert dec.obs[0].shape == (8, 3, 27, 27) and dec.obs[0].dtype == np.float32
    assert list(dec.agent_id) == list(range(8))
    assert [m.shape for m in dec.action_mask] == [(8, 5)]
    with pytest.raises(UnityActionException):
        env.set_actions("Nope?team=0", spec.action_spec.empty_action(8))


def test_time_out_gives_interrupted_terminal_then_new_ids():
    env = SceneEnv("balance", seed=1, max_episode_steps=5)
    name = "Balance?team=0"
    env.reset()
    zero = ActionTuple(continuous=np.zeros((4, 2), dtype=np.float32))
    for t in range(5):
        dec, term = env.get_steps(name)
        env.set_actions(name, zero)
        env.step()
    dec, term = env.get_steps(name)
    # with zero tilt nobody falls in 5 steps: all four time out together
    assert list(term.agent_id) == [0, 1, 2, 3] and term.interrupted.all()
    assert list(dec.agent_id) == [4, 5, 6, 7]
    assert np.all(dec.reward == 0.0) and np.all(term.reward >= 0.0) and term.reward.max() > 0.0
    # the terminal observation is the last state of the old episode, the decision one a fresh start
    assert not np.allclose(term.obs[0], dec.obs[0])


def test_failure_is_not_interrupted_and_masks_follow_the_grid():
    env = SceneEnv("branches", seed=3)
    name = "Branches?team=0"
    env.reset()
    dec, _ = env.get_steps(name)
    act = np.zeros((4, 2), dtype=np.int32)
    act[:, 1] = np.where(dec.action_mask[1][:, 1], 1, 0)  # open away from the door where masked
    crashing = dec.action_mask[1][:, 1]
    env.set_actions(name, ActionTuple(discrete=act))
    env.step()
    dec2, term = env.get_steps(name)
    assert sorted(term.agent_id) == sorted(dec.agent_id[crashing])
    assert not term.interrupted.any()
    np.testing.assert_allclose(term.reward, -1.01, atol=1e-6)
    assert len(dec2) == 4


def test_set_action_for_agent_and_missing_actions_default_to_zero():
    a = SceneEnv("hybrid", seed=5)
    b = SceneEnv("hybrid", seed=5)
    name = "Hybrid?team=0"
    a.reset(), b.reset()
    cont = np.array([[0.5, -0.2]], dtype=np.float32)
    disc = np.array([[1]], dtype=np.int32)
    a.set_action_for_agent(name, 2, ActionTuple(continuous=cont, discrete=disc))
    full = ActionTuple(continuous=np.zeros((4, 2), np.float32), discrete=np.zeros((4, 1), np.int32))
    full.continuous[2], full.discrete[2] = cont[0], disc[0]
    b.set_actions(name, full)
    a.step(), b.step()
    np.testing.assert_array_equal(a.get_steps(name)[0].obs[0], b.get_steps(name)[0].obs[0])
    with pytest.raises(IndexError):
        a.set_action_for_agent(name, 99, ActionTuple(continuous=cont, discrete=disc))


def test_side_channels_parameters_in_stats_out():
    params, stats = EnvironmentParametersChannel(), StatsSideChannel()
    env = SceneEnv("branches", num_areas=1, seed=0, side_channels=[params, stats], max_episode_steps=2)
    params.set_float_parameter("difficulty", 0.25)
    env.reset()
    assert env.academy.behaviors[0].scene.difficulty.tolist() == [0.25] * 4
    name = "Branches?team=0"
    for _ in range(2):
        env.set_actions(name, ActionTuple(discrete=np.zeros((4, 2), np.int32)))
        env.step()
    got = stats.get_and_reset_stats()
    assert got[STAT_SUCCESS_RATE] == [(0.0, StatsAggregationMethod.AVERAGE)] * 4
    assert got[STAT_DIFFICULTY] == [(0.25, StatsAggregationMethod.AVERAGE)] * 4


def test_same_seed_same_trajectory_across_envs():
    def run(seed):
        env = SceneEnv("switching", num_areas=2, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        out = []
        for _ in range(30):
            dec, term = env.get_steps("Switching?team=0")
            out.append(dec.obs[0].copy())
            env.set_actions("Switching?team=0", ActionTuple(continuous=rng.uniform(-1, 1, (len(dec), 2)).astype(np.float32)))
            env.step()
        return np.concatenate(out)

    np.testing.assert_array_equal(run(4), run(4))
    assert not np.array_equal(run(4), run(5))
