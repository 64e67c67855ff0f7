"""Gymnasium tasks as one ML-Agents behavior (``envs/gym_env.py``): spaces, N copies, action scaling, terminal vs
interrupted, Discrete actions, seeds, the missing-extra error, the ``--gym-env`` stand-in options."""
import sys

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="the gym extra (requirements/gym.txt) is not installed")

from mlagents_envs.base_env import ActionTuple  # noqa: E402

from mlagents_plugins.envs.gym_env import (  # noqa: E402
    ActionScaler,
    GymExtraMissing,
    behavior_name_of,
    gym_env,
    gym_scene,
    import_gymnasium,
)

LOW = np.array([-2.0, 0.0, 1.0], np.float32)
HIGH = np.array([1.0, 4.0, 3.0], np.float32)


class RecordingTask(gym.Env):
    """Observation = [steps so far, the task action it last got (3 values)]; reward = the first action value;
    terminated once the task action's first value reaches its bound 1.0; a 4-step TimeLimit (registered)."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.action_space = gym.spaces.Box(LOW, HIGH, dtype=np.float32)
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        # a seeded first observation: copies and seeds are told apart by it
        return np.array([0.0, *self.np_random.uniform(-1, 1, 3)], np.float32), {}

    def step(self, action):
        self.t += 1
        action = np.asarray(action, np.float32)
        return (np.array([self.t, *action], np.float32), float(action[0]), bool(action[0] >= 1.0), False, {})


class DiscreteTask(gym.Env):
    """Discrete(3, start=5): the observation is the task action it got; never ends but by its 3-step TimeLimit."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(3, start=5)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.array([action], np.float32), 1.0, False, False, {}


class DictObsTask(gym.Env):
    observation_space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,))})
    action_space = gym.spaces.Box(-1, 1, (1,))


class UnboundedTask(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,))
    action_space = gym.spaces.Box(-np.inf, np.inf, (1,))


for _id, _cls, _limit in (("TestRecording-v0", RecordingTask, 4), ("TestDiscrete-v0", DiscreteTask, 3),
                          ("TestDictObs-v0", DictObsTask, None), ("TestUnbounded-v0", UnboundedTask, None)):
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=_cls, max_episode_steps=_limit)


def _steps(env):
    name = next(iter(env.behavior_specs))
    return name, env.get_steps(name)


def test_behavior_names():
    assert behavior_name_of("HalfCheetah-v5") == "HalfCheetah"
    assert behavior_name_of("ALE/Pong-v5") == "Pong"
    assert behavior_name_of("my_task-v12") == "mytask"
    with pytest.raises(ValueError, match="no behavior name"):
        behavior_name_of("--v1")


def test_action_scaler_maps_unit_box_to_asymmetric_bounds():
    scaler = ActionScaler(LOW, HIGH)
    got = scaler.to_task(np.array([[-1.0, 0.5, 0.25], [1.0, -1.0, 0.0], [2.0, np.nan, -3.0]]))
    # low + (a + 1) / 2 * (high - low), by hand; out-of-range values clipped, NaN -> 0 (the middle)
    want = np.array([[-2.0, 3.0, 2.25], [1.0, 0.0, 2.0], [1.0, 2.0, 1.0]])
    np.testing.assert_allclose(got, want)


def test_actions_reach_the_task_scaled_and_n_copies_act_independently():
    env = gym_env("TestRecording-v0", num_copies=3, seed=7)
    env.reset()
    name, (decision, terminal) = _steps(env)
    spec = env.behavior_specs[name]
    assert name == "TestRecording?team=0"
    assert spec.observation_specs[0].shape == (4,) and spec.action_spec.continuous_size == 3
    assert len(decision) == 3 and len(terminal) == 0
    actions = np.array([[-1.0, 0.5, 0.25], [0.0, -1.0, 1.0], [-0.5, 0.0, 0.0]], np.float32)
    env.set_actions(name, ActionTuple(continuous=actions))
    env.step()
    _, (decision, terminal) = _steps(env)
    want = LOW + (actions + 1.0) / 2.0 * (HIGH - LOW)
    np.testing.assert_allclose(decision.obs[0][:, 1:], want, rtol=1e-6)
    np.testing.assert_allclose(decision.reward, want[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(decision.obs[0][:, 0], [1, 1, 1])


def test_copies_are_seeded_seed_plus_index():
    env = gym_env("TestRecording-v0", num_copies=2, seed=11)
    env.reset()
    _, (decision, _) = _steps(env)
    for i in range(2):
        alone = gym.make("TestRecording-v0")
        want, _ = alone.reset(seed=11 + i)
        np.testing.assert_allclose(decision.obs[0][i], want)
    assert not np.allclose(decision.obs[0][0], decision.obs[0][1])


def test_terminated_is_terminal_and_time_limit_is_interrupted():
    env = gym_env("TestRecording-v0", num_copies=2, seed=0)
    env.reset()
    name, (decision, _) = _steps(env)
    first_ids = decision.agent_id.copy()
    # copy 0 drives its first action to the bound (terminated); copy 1 idles until the 4-step limit
    env.set_actions(name, ActionTuple(continuous=np.array([[1.0, 0, 0], [0, 0, 0]], np.float32)))
    env.step()
    _, (decision, terminal) = _steps(env)
    assert list(terminal.agent_id) == [first_ids[0]] and list(terminal.interrupted) == [False]
    np.testing.assert_allclose(terminal.obs[0][0], [1.0, 1.0, 2.0, 2.0])  # the end state, not the reset one
    assert terminal.reward[0] == pytest.approx(1.0)
    assert decision.agent_id[0] != first_ids[0] and decision.obs[0][0, 0] == 0.0  # a new episode, reset at once
    for _ in range(3):
        env.set_actions(name, ActionTuple(continuous=np.zeros((2, 3), np.float32)))
        env.step()
    _, (decision, terminal) = _steps(env)
    assert list(terminal.agent_id) == [first_ids[1]] and list(terminal.interrupted) == [True]
    assert terminal.obs[0][0, 0] == 4.0


def test_no_scene_stats_for_gym_tasks():
    scene = gym_scene("TestRecording-v0")
    assert scene.reports_scene_stats is False
    env = gym_env("TestRecording-v0", num_copies=1, seed=0)
    env.reset()
    name, _ = _steps(env)
    env.set_actions(name, ActionTuple(continuous=np.ones((1, 3), np.float32)))
    env.step()
    assert env.academy.outgoing_side_channels() == b""


def test_discrete_actions_get_the_space_start_back():
    env = gym_env("TestDiscrete-v0", num_copies=2, seed=0)
    env.reset()
    name, _ = _steps(env)
    spec = env.behavior_specs[name].action_spec
    assert spec.continuous_size == 0 and spec.discrete_branches == (3,)
    env.set_actions(name, ActionTuple(discrete=np.array([[2], [0]], np.int32)))
    env.step()
    _, (decision, _) = _steps(env)
    np.testing.assert_array_equal(decision.obs[0][:, 0], [7, 5])


def test_cartpole_discrete_ends_terminated_before_its_limit():
    env = gym_env("CartPole-v1", num_copies=2, seed=3)
    env.reset()
    name, (decision, _) = _steps(env)
    assert env.behavior_specs[name].action_spec.discrete_branches == (2,)
    ended = []
    for _ in range(100):
        env.set_actions(name, ActionTuple(discrete=np.ones((2, 1), np.int32)))  # always push right: falls over
        env.step()
        _, (_, terminal) = _steps(env)
        ended += list(terminal.interrupted)
    assert len(ended) >= 2 and not any(ended)


def test_halfcheetah_shapes():
    pytest.importorskip("mujoco", reason="MuJoCo (gymnasium[mujoco]) is not installed")
    env = gym_env("HalfCheetah-v5", num_copies=3, seed=0, max_episode_steps=2)
    env.reset()
    name, (decision, _) = _steps(env)
    assert name == "HalfCheetah?team=0"
    spec = env.behavior_specs[name]
    assert spec.observation_specs[0].shape == (17,) and spec.action_spec.continuous_size == 6
    assert decision.obs[0].shape == (3, 17) and decision.obs[0].dtype == np.float32
    for _ in range(2):
        env.set_actions(name, ActionTuple(continuous=np.zeros((3, 6), np.float32)))
        env.step()
    _, (_, terminal) = _steps(env)
    assert len(terminal) == 3 and terminal.interrupted.all()  # the (overridden) time limit: bootstrapped


@pytest.mark.parametrize("task, message", [("TestDictObs-v0", "is not a Box; allowed: Box"),
                                           ("TestUnbounded-v0", "infinite bounds")])
def test_spaces_the_adapter_cannot_take_are_refused_clearly(task, message):
    with pytest.raises(ValueError, match=message):
        gym_scene(task)


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # import gymnasium -> ImportError
    with pytest.raises(GymExtraMissing, match=r"pip install 'mlagents-plugins\[gym\]'"):
        import_gymnasium()
    with pytest.raises(ImportError, match=r"optional extra 'gym'"):
        gym_scene("Pendulum-v1", g=9.0)  # not made before: the import is tried


@pytest.fixture
def plugin_logging():
    """standin.main routes the mlagents_plugins loggers to its log; put them back afterwards."""
    import logging

    root = logging.getLogger("mlagents_plugins")
    saved = (root.handlers[:], root.level, root.propagate)
    yield
    root.handlers[:], root.level, root.propagate = saved[0], saved[1], saved[2]


def test_standin_gym_env_options(tmp_path, monkeypatch, plugin_logging):
    from mlagents_plugins.envs import standin

    assert standin.main(["--gym-env", "TestRecording-v0", "--write-builds", str(tmp_path)]) == standin.EXIT_OK
    launcher = (tmp_path / "TestRecording.x86_64").read_text()
    assert "--gym-env TestRecording-v0" in launcher and "-m mlagents_plugins.envs.standin" in launcher
    with pytest.raises(SystemExit):
        standin.main(["--scene", "balance", "--gym-env", "TestRecording-v0"])
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    log = tmp_path / "player.log"
    assert standin.main(["--gym-env", "Acrobot-v1", "-logFile", str(log)]) == standin.EXIT_USAGE
    assert "pip install 'mlagents-plugins[gym]'" in log.read_text()  # where mlagents-learn points a user
