"""A scene with two behaviors (balance_and_reach): specs, ids, message order and actions per behavior, stats,
and the tools that read one scene's reward refusing it."""
import numpy as np
import pytest

from mlagents_envs.base_env import ActionTuple
from mlagents_envs.exception import UnityActionException
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from mlagents_plugins.envs.academy import STAT_SUCCESS_RATE, Academy
from mlagents_plugins.envs.demo_writer import record_demo
from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.envs.scenes import SCENES, SPLIT, scene_behaviors, scene_class

GROUP = "balance_and_reach"
BALANCE, REACH = "Balance?team=0", "Reach?team=0"


def balance_actions(t, n):
    """Different for every agent and step, so rows sent to the wrong agent change the trajectory."""
    rows = np.arange(n)[:, None]
    return ActionTuple(continuous=(0.3 * np.sin(0.7 * t + rows + np.array([0.0, 1.3]))).astype(np.float32))


def reach_actions(t, n):
    rows = np.arange(n)[:, None]
    return ActionTuple(discrete=((t + rows + np.array([0, 1])) % 3).astype(np.int32))


def test_two_behaviors_with_their_own_specs_and_thresholds():
    env = SceneEnv(GROUP, num_areas=2, seed=0)
    assert list(env.behavior_specs) == [BALANCE, REACH]
    assert env.behavior_specs[BALANCE] == SceneEnv("balance").behavior_specs[BALANCE]
    assert env.behavior_specs[REACH] == SceneEnv("reach").behavior_specs[REACH]
    assert [c.success_threshold for c in scene_behaviors(GROUP)] == [5.0, 1.2]
    assert SPLIT[GROUP] == "tuning"
    env.reset()
    dec_b, dec_r = env.get_steps(BALANCE)[0], env.get_steps(REACH)[0]
    assert len(dec_b) == len(dec_r) == 8
    assert dec_b.obs[0].shape == (8, 8) and dec_r.obs[0].shape == (8, 6)
    # one id counter for the whole academy, as Unity's episode ids
    assert set(dec_b.agent_id).isdisjoint(dec_r.agent_id)
    for call in (lambda: env.get_steps("Nope?team=0"),
                 lambda: env.set_actions("Nope?team=0", ActionTuple(continuous=np.zeros((8, 2), np.float32)))):
        with pytest.raises(UnityActionException, match="Nope"):
            call()
    with pytest.raises(UnityActionException):  # Reach's actions are not Balance's
        env.set_actions(BALANCE, reach_actions(0, 8))


def test_each_behavior_is_its_own_scene_with_its_own_actions():
    """The group's parts follow the scenes alone step by step: a swap of the two behaviors' actions, or of rows
    within one behavior, would change the trajectories."""
    group, alone = SceneEnv(GROUP, seed=4), {BALANCE: SceneEnv("balance", seed=4), REACH: SceneEnv("reach", seed=4)}
    make = {BALANCE: balance_actions, REACH: reach_actions}
    group.reset()
    for env in alone.values():
        env.reset()
    n_term = {BALANCE: 0, REACH: 0}
    for t in range(60):
        for name, env in alone.items():
            g_dec, g_term = group.get_steps(name)
            a_dec, a_term = env.get_steps(name)
            for g, a in ((g_dec, a_dec), (g_term, a_term)):
                np.testing.assert_array_equal(g.obs[0], a.obs[0])
                np.testing.assert_array_equal(g.reward, a.reward)
            np.testing.assert_array_equal(g_term.interrupted, a_term.interrupted)
            n_term[name] += len(g_term)
            group.set_actions(name, make[name](t, len(g_dec)))
            env.set_actions(name, make[name](t, len(a_dec)))
            env.step()
        group.step()
    assert n_term[BALANCE] > 0 and n_term[REACH] > 0  # both covered episode ends
    # the check can fail: the same actions swapped between rows give another Balance trajectory
    swapped = SceneEnv("balance", seed=4)
    swapped.reset()
    act = balance_actions(0, 4)
    swapped.set_actions(BALANCE, ActionTuple(continuous=act.continuous[::-1].copy()))
    swapped.step()
    alone_once = SceneEnv("balance", seed=4)
    alone_once.reset()
    alone_once.set_actions(BALANCE, act)
    alone_once.step()
    assert not np.array_equal(swapped.get_steps(BALANCE)[0].obs[0], alone_once.get_steps(BALANCE)[0].obs[0])


def test_a_behavior_without_actions_acts_with_zeros_and_the_other_is_unaffected():
    academy = Academy(GROUP, seed=1)
    first = academy.reset()
    out = academy.step({BALANCE: balance_actions(0, 4)})
    reach_pos = first[REACH].obs[0][:, :2]
    np.testing.assert_array_equal(out[REACH].obs[0][~out[REACH].done][:, :2], reach_pos)  # 0 = stay on both axes
    assert not np.array_equal(out[BALANCE].obs[0][:, :2], first[BALANCE].obs[0][:, :2])  # tilt moved
    with pytest.raises(ValueError, match="unknown behaviors"):
        academy.step({"Nope?team=0": balance_actions(0, 4)})


def test_ids_fresh_per_episode_and_terminal_then_new_info_per_behavior():
    academy = Academy(GROUP, seed=2, max_episode_steps=3)
    infos = academy.reset()
    seen = set()
    for name in (BALANCE, REACH):
        seen |= set(infos[name].agent_id.tolist())
    assert len(seen) == 8
    ended_any = {BALANCE: False, REACH: False}
    for t in range(7):
        prev = {name: i.agent_id[~i.done].copy() for name, i in infos.items()}
        infos = academy.step({BALANCE: balance_actions(t, 4), REACH: reach_actions(t, 4)})
        for name, info in infos.items():
            rows = info.agent_id.tolist()
            live = info.agent_id[~info.done]
            assert len(live) == 4  # one current info per slot
            for row in np.nonzero(info.done)[0]:
                ended_any[name] = True
                # the terminal info carries the slot's old id, the next row is its new episode under a fresh id
                assert rows[row] in prev[name] and not info.done[row + 1]
                assert info.agent_id[row + 1] not in seen and info.reward[row + 1] == 0.0
            new = set(live.tolist()) - set(prev[name].tolist())
            assert new.isdisjoint(seen)
            seen |= new
    assert all(ended_any.values())  # time-outs after 3 decisions at the latest, in both behaviors


def test_stats_report_both_behaviors_episode_ends():
    stats = StatsSideChannel()
    env = SceneEnv(GROUP, seed=0, max_episode_steps=2, side_channels=[stats])
    env.reset()
    env.step()
    env.step()
    ended = sum(len(env.get_steps(name)[1]) for name in (BALANCE, REACH))
    assert ended == 8
    assert len(stats.get_and_reset_stats()[STAT_SUCCESS_RATE]) == 8


def test_tools_that_read_one_reward_refuse_a_group(tmp_path):
    message = "has 2 behaviors \\(Balance, Reach\\).*needs a scene with one behavior"
    with pytest.raises(ValueError, match=message):
        scene_class(GROUP)
    with pytest.raises(ValueError, match=message):
        train_in_process({"trainer_type": "ppo"}, GROUP, max_steps=100, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match=message):
        record_demo(GROUP, str(tmp_path / "x.demo"), steps=10)
    assert scene_behaviors("balance") == (SCENES["balance"],)
