"""Scene logic: specs, determinism, episode ends, masks, parameters, thresholds vs expert/random."""
import numpy as np
import pytest

from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.incoming_message import IncomingMessage

from mlagents_plugins.envs.params import ParameterStore
from mlagents_plugins.envs.scenes import SCENES, scene_class
from mlagents_plugins.envs.scenes.branches import BranchesScene
from mlagents_plugins.envs.scenes.grid import MOVES

NAMES = sorted(SCENES)


def random_action(scene, rng, use_mask=True):
    spec = scene.action_spec
    n = scene.num_agents
    cont = rng.uniform(-1, 1, (n, spec.continuous_size)).astype(np.float32)
    disc = np.zeros((n, spec.discrete_size), dtype=np.int32)
    masks = scene.action_mask() if use_mask else None
    for b, size in enumerate(spec.discrete_branches):
        for i in range(n):
            allowed = np.arange(size) if masks is None else np.nonzero(~masks[b][i])[0]
            disc[i, b] = rng.choice(allowed)
    return ActionTuple(continuous=cont, discrete=disc)


def rollout(scene, policy, decisions, seed=0):
    rng = np.random.default_rng(seed)
    returns, successes, obs_trace = [], [], []
    for _ in range(decisions):
        action = scene.heuristic() if policy == "heuristic" else random_action(scene, rng)
        res = scene.step(action)
        returns += list(res.episode_return[res.done])
        successes += list(res.success[res.done])
        obs_trace.append([o.copy() for o in scene.observe()])
    return np.array(returns), np.array(successes), obs_trace


def test_registry_keys_and_names():
    assert set(SCENES) == {"balance", "branches", "camera", "hybrid", "reach", "reach_continuous", "switching"}
    assert [SCENES[k].behavior_name for k in NAMES] == ["Balance", "Branches", "Camera", "Hybrid", "Reach",
                                                         "ReachContinuous", "Switching"]
    with pytest.raises(ValueError, match="scene='nope'.*allowed: balance, balance_and_reach, balance_big_reward_long, .*, reach, reach_continuous, .*, reach_sparse_distractors, switching,"):
        scene_class("nope")


@pytest.mark.parametrize("kwargs, field", [({"num_areas": 0}, "num_areas"), ({"decision_period": 0}, "decision_period"),
                                           ({"max_episode_steps": -3}, "max_episode_steps")])
def test_bad_constructor_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SCENES["balance"](**kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_agents(name):
    scene = SCENES[name](num_areas=3, seed=1)
    assert scene.num_agents == 3 * scene.agents_per_area
    obs = scene.observe()
    assert [o.shape[1:] for o in obs] == [tuple(s.shape) for s in scene.observation_specs]
    assert all(o.shape[0] == scene.num_agents and o.dtype == np.float32 for o in obs)
    res = scene.step(random_action(scene, np.random.default_rng(0)))
    assert res.reward.shape == (scene.num_agents,) and res.reward.dtype == np.float32


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_for_seed_and_different_across_seeds(name):
    _, _, a = rollout(SCENES[name](num_areas=1, seed=7), "random", 60)
    _, _, b = rollout(SCENES[name](num_areas=1, seed=7), "random", 60)
    _, _, c = rollout(SCENES[name](num_areas=1, seed=8), "random", 60)
    for x, y in zip(a, b):
        for ox, oy in zip(x, y):
            np.testing.assert_array_equal(ox, oy)
    assert any(not np.array_equal(ox, oc) for x, z in zip(a, c) for ox, oc in zip(x, z))


@pytest.mark.parametrize("name", NAMES)
def test_expert_beats_threshold_and_random_does_not(name):
    cls = SCENES[name]
    ret_h, succ_h, _ = rollout(cls(num_areas=2, seed=0), "heuristic", 400)
    ret_r, _, _ = rollout(cls(num_areas=2, seed=0), "random", 400)
    assert len(ret_h) >= 8 and len(ret_r) >= 8
    assert ret_h.mean() > cls.success_threshold, (name, ret_h.mean())
    assert succ_h.mean() > 0.9
    assert ret_r.mean() < cls.success_threshold - 0.5, (name, ret_r.mean())


@pytest.mark.parametrize("name", NAMES)
def test_no_nan_even_for_nan_or_huge_actions(name):
    scene = SCENES[name](num_areas=1, seed=3)
    spec = scene.action_spec
    n = scene.num_agents
    for value in (np.nan, np.inf, -1e30):
        cont = np.full((n, spec.continuous_size), value, dtype=np.float32)
        disc = np.full((n, spec.discrete_size), 10**6, dtype=np.int32)
        for _ in range(20):
            res = scene.step(ActionTuple(continuous=cont, discrete=disc))
            assert np.all(np.isfinite(res.reward))
            assert all(np.all(np.isfinite(o)) for o in scene.observe())


def test_time_out_is_interrupted_and_restarts_episode():
    scene = SCENES["branches"](num_areas=1, seed=0, max_episode_steps=3)
    stay = ActionTuple(discrete=np.zeros((scene.num_agents, 2), dtype=np.int32))
    for t in range(1, 4):
        res = scene.step(stay)
        if t < 3:
            assert not res.done.any()
    assert res.done.all() and res.interrupted.all() and not res.success.any()
    np.testing.assert_allclose(res.episode_return, -0.03, atol=1e-6)
    assert np.all(scene.episode_step == 0)


def test_decision_period_repeats_the_action_and_sums_rewards():
    one = SCENES["balance"](seed=5, decision_period=1)
    three = SCENES["balance"](seed=5, decision_period=3)
    act = ActionTuple(continuous=np.full((4, 2), 0.3, dtype=np.float32))
    total = np.zeros(4)
    for _ in range(3):
        total += one.step(act).reward
    res = three.step(act)
    np.testing.assert_allclose(res.reward, total, rtol=1e-5)
    np.testing.assert_allclose(three.observe()[0], one.observe()[0], rtol=1e-6)


def test_balance_dynamics_by_hand():
    scene = SCENES["balance"](seed=0)
    scene.pos[0] = [0.2, -0.1]
    scene.vel[0] = [0.0, 0.5]
    scene.tilt[0] = [0.0, 0.0]
    scene.target[0] = [0.0, 0.0]
    act = np.zeros((4, 2), dtype=np.float32)
    act[0] = [1.0, -0.5]
    res = scene.step(ActionTuple(continuous=act))
    tilt = 0.5 * 0.35 * np.array([1.0, -0.5])
    vel = 0.98 * (np.array([0.0, 0.5]) + 0.1 * 7.0 * np.sin(tilt))
    pos = np.array([0.2, -0.1]) + 0.1 * vel
    np.testing.assert_allclose(scene.pos[0], pos, rtol=1e-9)
    assert res.reward[0] == pytest.approx(0.1 * (1 - np.linalg.norm(pos)), rel=1e-5)


def test_branches_masks_mark_exactly_the_invalid_actions():
    scene = BranchesScene(num_areas=1, seed=2)
    rng = np.random.default_rng(0)
    for _ in range(200):
        move_mask, use_mask = scene.action_mask()
        i = int(rng.integers(scene.num_agents))
        pos, door = scene.pos[i].copy(), scene.door[i].copy()
        for m in range(1, 5):  # naive check of each move against the grid
            nxt = pos + MOVES[m]
            bad = not (0 <= nxt[0] < 7 and 0 <= nxt[1] < 7) or scene.blocked[i, nxt[0], nxt[1]]
            assert move_mask[i, m] == bad
        assert not move_mask[i, 0]
        assert list(use_mask[i]) == [False] + [not np.array_equal(pos, door)] * 2
        scene.step(random_action(scene, rng))


def test_branches_taking_a_masked_action_fails_the_episode():
    scene = BranchesScene(num_areas=1, seed=4)
    n = scene.num_agents
    act = np.zeros((n, 2), dtype=np.int32)
    move_mask, use_mask = scene.action_mask()
    for i in range(n):
        if use_mask[i, 1]:
            act[i] = (0, 1)  # open away from the door
        else:
            act[i] = (0, 2 - scene.color[i])  # wrong key on the door
    res = scene.step(ActionTuple(discrete=act))
    assert res.done.all() and not res.success.any() and not res.interrupted.any()
    np.testing.assert_allclose(res.reward, -1.01, atol=1e-6)


def test_camera_image_is_centred_on_the_agent():
    from mlagents_plugins.envs.scenes.camera import CELL_PX, SIZE, VIEW

    scene = SCENES["camera"](num_areas=1, seed=0)
    frames = scene.render()
    assert frames.shape == (4, VIEW * CELL_PX, VIEW * CELL_PX, 3)

    def cell(frame, dx, dy):  # colour of the cell at offset (dx, dy) from the agent, read naively
        row = (VIEW // 2 - dy) * CELL_PX
        col = (VIEW // 2 + dx) * CELL_PX
        block = frame[row:row + CELL_PX, col:col + CELL_PX].reshape(-1, 3)
        assert (block == block[0]).all()
        return tuple(block[0])

    for i in range(4):
        x, y = scene.pos[i]
        gx, gy = scene.goal[i]
        assert cell(frames[i], 0, 0) == (230, 40, 40)
        assert cell(frames[i], gx - x, gy - y) == (40, 220, 60)
        for hx, hy in zip(*np.nonzero(scene.hazard[i])):
            assert cell(frames[i], hx - x, hy - y) == (50, 70, 230)
        for dx in (-x - 1, SIZE - x):  # just left / right of the grid, when inside the view
            if abs(dx) <= VIEW // 2:
                assert cell(frames[i], dx, 0) == (120, 120, 120)
    assert scene.hazard.sum() > 0
    img = scene.observe()[0][0]
    np.testing.assert_array_equal(img * 255.0, np.round(img * 255.0))  # exactly PNG-representable


def test_camera_reward_by_hand():
    scene = SCENES["camera"](num_areas=1, seed=0)
    scene.hazard[:] = False
    scene.pos[:] = [2, 2]
    scene.goal[:] = [[4, 2], [2, 3], [0, 0], [2, 0]]  # 5x5 grid
    moves = np.array([[4], [1], [4], [0]], dtype=np.int32)  # right, up, right, stay
    res = scene.step(ActionTuple(discrete=moves))
    # agent 0: one cell closer (+0.05); 1: reaches the goal; 2: one cell further (-0.05); 3: stays
    np.testing.assert_allclose(res.reward, [0.05 - 0.01, 1.0 - 0.01 + 0.05, -0.05 - 0.01, -0.01], atol=1e-6)
    assert list(res.success) == [False, True, False, False]


def test_switching_reward_by_hand():
    scene = SCENES["switching"](num_areas=1, seed=0, parameters=ParameterStore({"switch_cost": 0.5}))
    scene.pos[0], scene.vel[0], scene.target[0] = [0.1, -0.2], [0.05, 0.0], [0.6, 0.4]
    scene.prev_action[0] = [0.4, 0.4]
    act = np.zeros((4, 2), dtype=np.float32)
    act[0] = [-0.4, 1.0]
    res = scene.step(ActionTuple(continuous=act))
    vel = 0.85 * np.array([0.05, 0.0]) + 0.03 * np.array([-0.4, 1.0])
    pos = np.array([0.1, -0.2]) + vel
    before = np.hypot(0.5, 0.6)
    after = np.hypot(*(np.array([0.6, 0.4]) - pos))
    expected = (before - after) - 0.5 * (abs(-0.4 - 0.4) + abs(1.0 - 0.4)) / 2
    assert res.reward[0] == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(scene.observe()[0][0, 6:], [-0.4, 1.0])  # previous action is observed


def test_switching_default_cost_follows_difficulty():
    store = ParameterStore({"difficulty": 0.5})
    scene = SCENES["switching"](seed=0, parameters=store)
    np.testing.assert_allclose(scene.switch_cost, 0.02 + 0.18 * 0.5)


def _msgs(channel):
    return [IncomingMessage(bytes(m)) for m in channel.message_queue]


def test_parameter_store_reads_floats_and_samplers_like_unity():
    ch = EnvironmentParametersChannel()
    ch.set_float_parameter("difficulty", 0.25)
    ch.set_uniform_sampler_parameters("u", 2.0, 3.0, seed=11)
    ch.set_gaussian_sampler_parameters("g", 10.0, 0.5, seed=12)
    ch.set_multirangeuniform_sampler_parameters("m", [(0.0, 1.0), (5.0, 7.0)], seed=13)
    store = ParameterStore()
    for msg in _msgs(ch):
        store.apply_message(msg)
    assert store.get("difficulty", 9.0) == pytest.approx(0.25)
    assert store.get("missing", 9.0) == 9.0
    u = [store.get("u", 0) for _ in range(200)]
    g = [store.get("g", 0) for _ in range(2000)]
    m = [store.get("m", 0) for _ in range(3000)]
    assert 2.0 <= min(u) and max(u) <= 3.0 and len(set(u)) == 200
    assert abs(np.mean(g) - 10.0) < 0.05 and abs(np.std(g) - 0.5) < 0.05
    assert all((0 <= v <= 1) or (5 <= v <= 7) for v in m)
    assert abs(np.mean([v >= 5 for v in m]) - 2 / 3) < 0.05  # interval picked in proportion to width


def test_difficulty_sampler_draws_per_episode():
    ch = EnvironmentParametersChannel()
    ch.set_uniform_sampler_parameters("difficulty", 0.0, 1.0, seed=3)
    store = ParameterStore()
    for msg in _msgs(ch):
        store.apply_message(msg)
    scene = SCENES["branches"](num_areas=2, seed=0, parameters=store, max_episode_steps=1)
    scene.reset()
    seen = set(scene.difficulty.round(6))
    scene.step(ActionTuple(discrete=np.zeros((8, 2), dtype=np.int32)))
    seen |= set(scene.difficulty.round(6))
    assert len(seen) == 16
    # obstacles follow the drawn difficulty
    np.testing.assert_array_equal(scene.blocked.sum(axis=(1, 2)), np.round(8 * scene.difficulty))


def test_reach_has_two_unmasked_branches_and_rewards_by_hand():
    from mlagents_plugins.envs.scenes.reach import HALF, ReachScene

    scene = ReachScene(num_areas=1, seed=3)
    assert scene.action_spec.discrete_branches == (3, 3) and scene.action_mask() is None
    n = scene.num_agents
    scene.pos[:] = [[0, 0], [0, 0], [HALF, -HALF], [1, 1]]
    scene.target[:] = [[3, -2], [3, -2], [0, 0], [2, 2]]
    # slot 0: diagonal (+x, -y) towards the target; slot 1: +y, away from it along y, no closer; slot 2: off the grid (+x); slot 3: reaches it
    act = np.array([[2, 1], [0, 2], [2, 0], [2, 2]], dtype=np.int32)
    res = scene.step(ActionTuple(discrete=act))
    np.testing.assert_allclose(res.reward, [0.1 - 0.01, 0.0 - 0.01, -1.0 - 0.01, 1.0 + 0.1 - 0.01], atol=1e-6)
    assert list(res.done) == [False, False, True, True] and list(res.success) == [False, False, False, True]
    assert not res.interrupted.any() and n == 4
    obs = scene.observe()[0]
    # slot 0 now at (1, -1), target (3, -2): delta (2, -1), edge cells towards the target: x 3, y 3
    np.testing.assert_allclose(obs[0], [1 / HALF, -1 / HALF, 2 / HALF, -1 / HALF, 3 / (2 * HALF), 3 / (2 * HALF)], atol=1e-6)


def test_reach_continuous_dynamics_and_rewards_by_hand():
    from mlagents_plugins.envs.scenes.reach_continuous import (
        ACCEL, DRAG, FAIL_PENALTY, MAX_SPEED, ReachContinuousScene, _min_distance,
    )

    scene = ReachContinuousScene(num_areas=1, seed=3, max_episode_steps=2)
    n = scene.num_agents
    assert n == 8 and scene.action_spec.continuous_size == 2 and scene.action_spec.discrete_size == 0
    scene.pos[:] = 0.0
    scene.vel[:] = 0.0
    scene.target[:] = [0.5, -0.25]
    scene.vel[1] = [0.02, 0.0]
    scene.pos[2] = [0.99, 0.0]  # pushed out of the arena: failure
    scene.vel[2] = [0.05, 0.0]
    scene.target[3] = [0.02, 0.0]  # within reach after one step: +1 and a new target, the episode goes on
    act = np.zeros((n, 2), dtype=np.float32)
    act[0] = [1.0, -0.5]
    act[1] = [-1.0, 0.0]
    before = np.linalg.norm(scene.target - scene.pos, axis=1)
    res = scene.step(ActionTuple(continuous=act))
    vel = DRAG * np.array([[0.0, 0.0], [0.02, 0.0]]) + ACCEL * act[:2]
    after = np.linalg.norm(np.array([0.5, -0.25]) - vel, axis=1)
    np.testing.assert_allclose(res.reward[:2], before[:2] - after, rtol=1e-5)
    assert res.done[2] and not res.success[2] and not res.interrupted[2]
    np.testing.assert_allclose(res.reward[2], before[2] - np.linalg.norm([0.5 - 0.99 - DRAG * 0.05, -0.25 - 0.0])
                               - FAIL_PENALTY, rtol=1e-5)
    assert not res.done[3] and scene.reached[3] == 1
    np.testing.assert_allclose(res.reward[3], before[3] - 0.02 + 1.0, rtol=1e-5)
    assert np.linalg.norm(scene.target[3] - scene.pos[3]) >= _min_distance(scene.difficulty[3]) - 1e-9
    assert not res.done[:2].any() and not res.done[4:].any()
    obs = scene.observe()[0]
    # slot 1 kept going: position, velocity / MAX_SPEED, target, target - position
    np.testing.assert_allclose(obs[1], [vel[1, 0], 0.0, vel[1, 0] / MAX_SPEED, 0.0, 0.5, -0.25, 0.5 - vel[1, 0], -0.25],
                               rtol=1e-5, atol=1e-7)
    # the time-out: a success for the slot that reached a target, not for the others
    res = scene.step(ActionTuple(continuous=np.zeros((n, 2), np.float32)))
    assert res.interrupted[3] and res.success[3] and res.interrupted[0] and not res.success[0]


def test_reach_continuous_targets_keep_the_start_distance():
    from mlagents_plugins.envs.scenes.reach_continuous import ReachContinuousScene, _min_distance

    scene = ReachContinuousScene(num_areas=4, seed=11)
    for _ in range(40):
        dist = np.linalg.norm(scene.target - scene.pos, axis=1)
        fresh = scene.episode_step == 0
        assert (dist[fresh] >= _min_distance(scene.difficulty[fresh]) - 1e-9).all()
        assert (np.abs(scene.target) <= 1.0).all()
        scene.step(scene.heuristic())


def test_clip_unit_is_nan_to_num_then_clip_and_leaves_its_input_alone():
    from mlagents_plugins.envs.scenes.base import clip_unit

    rows = [np.array([[0.25, -3.0, 1.5, -0.0, 0.999, -1.0]], np.float32),
            np.array([[np.nan, np.inf, -np.inf, 0.5, -2.0, 7.0], [0.1, -0.2, 0.3, -0.4, 1.0, 2.0]], np.float64)]
    for values in rows:
        before = values.copy()
        got = clip_unit(values)
        want = np.clip(np.nan_to_num(np.asarray(values, dtype=np.float64)), -1.0, 1.0)
        assert got.dtype == np.float64 and got.shape == values.shape
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0
        np.testing.assert_array_equal(values, before)
        assert not np.shares_memory(got, values)
