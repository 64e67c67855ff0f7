"""``inprocess_env``: at one environment copy ``mlagents-learn`` steps the environment in the trainer's process,
with what ML-Agents' environment worker does (side channels, parameters, stats, restarts, errors); more copies,
the opt-out variable and a foreign replacement keep ML-Agents' ``SubprocessEnvManager``.  The end-to-end runs
through ``mlagents-learn`` (tests/envs/test_e2e.py, tests/fast_sac/test_kill_resume.py, ...) use it too."""
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from mlagents.trainers import learn
from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.settings import ConstantSettings, RunOptions, UniformSettings
from mlagents.trainers.subprocess_env_manager import SubprocessEnvManager
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.exception import UnityCommunicationException, UnityTimeOutException

from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.host import inprocess_env
from mlagents_plugins.util import build_guard, process_lifetime

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CapableSceneEnv(SceneEnv):
    """The in-process scene with the attribute ML-Agents' worker reads after creating an environment."""

    academy_capabilities = None
    created = []  # every environment made in this process, in order

    def __init__(self, *args, fail_at_step=None, fail_with=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps, self.fail_at_step, self.fail_with = 0, fail_at_step, fail_with
        CapableSceneEnv.created.append(self)

    def step(self):
        self.steps += 1
        if self.steps == self.fail_at_step:
            raise self.fail_with
        super().step()


def scene_factory(worker_id, side_channels):
    return CapableSceneEnv("balance", num_areas=2, seed=7 + worker_id, side_channels=side_channels,
                           max_episode_steps=6)


class ScriptedPolicy:
    """Actions that depend on the call count and the observations, the same in both managers."""

    def __init__(self, spec):
        self.size, self.calls = spec.action_spec.continuous_size, 0

    def get_action(self, decision_steps, worker_id=0):
        self.calls += 1
        n = len(decision_steps)
        obs = decision_steps.obs[0][:, : self.size] if n else np.zeros((0, self.size), np.float32)
        continuous = np.tanh(obs * 0.5 + 0.1 * (self.calls % 5) - 0.2).astype(np.float32)
        action = ActionTuple(continuous=continuous)
        return ActionInfo(action, action, {}, list(decision_steps.agent_id))


PARAMETERS = {"difficulty": UniformSettings(seed=3, min_value=0.2, max_value=0.9)}


def drive(manager, steps):
    """Reset with ``PARAMETERS`` and step ``steps`` times; per step what the trainer receives."""
    for name, spec in manager.training_behaviors.items():
        manager.set_policy(name, ScriptedPolicy(spec))
    manager.reset(PARAMETERS)
    record = []
    for _ in range(steps):
        (step,) = manager._step()
        for name, (decision, terminal) in sorted(step.current_all_step_result.items()):
            record.append((name, decision.obs[0].copy(), decision.reward.copy(), decision.agent_id.copy(),
                           terminal.reward.copy(), terminal.interrupted.copy(), step.worker_id))
        record.append(("stats", {k: list(v) for k, v in step.environment_stats.items()}))
    return record


def test_one_copy_gives_what_the_worker_gives():
    """The same scripted run through ML-Agents' SubprocessEnvManager (a forked worker) and through ours: the same
    observations, rewards, terminal steps and stats-channel statistics (episode success and the sampled
    difficulty: the parameters reached the environment) at every step."""
    steps = 30
    theirs_manager = SubprocessEnvManager(scene_factory, RunOptions(), 1)
    try:
        theirs = drive(theirs_manager, steps)
    finally:
        theirs_manager.close()
    ours_manager = inprocess_env.InProcessEnvManager(scene_factory, RunOptions())
    try:
        ours = drive(ours_manager, steps)
        engine = ours_manager.env.academy.engine_config
    finally:
        ours_manager.close()
    stats = [r[1] for r in ours if r[0] == "stats"]
    assert any("Scene/Success Rate" in s for s in stats) and any("Scene/Difficulty" in s for s in stats), stats
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[0] == b[0]
        if a[0] == "stats":
            assert a[1] == b[1]
        else:
            for x, y in zip(a[1:], b[1:]):
                np.testing.assert_array_equal(x, y)
    settings = RunOptions().engine_settings
    assert engine == dict(width=settings.width, height=settings.height, quality_level=settings.quality_level,
                          time_scale=settings.time_scale, target_frame_rate=settings.target_frame_rate,
                          capture_frame_rate=settings.capture_frame_rate)


def test_the_environment_is_created_at_the_first_reset_and_its_errors_raised_there():
    """As the worker's failure surfaced at the manager's first reply (inside start_learning), not at creation."""
    made = []

    def never_connects(worker_id, side_channels):
        made.append(worker_id)
        raise UnityTimeOutException("The build started for worker 0 did not connect on port 5005 within 1 s.")

    manager = inprocess_env.env_manager(never_connects, RunOptions(), 1)
    assert isinstance(manager, inprocess_env.InProcessEnvManager) and made == []
    with pytest.raises(UnityTimeOutException, match="did not connect on port 5005"):
        manager.reset({})
    assert made == [0]
    manager.close()


def test_a_failed_step_restarts_the_environment_with_its_parameters(caplog):
    CapableSceneEnv.created.clear()

    def factory(worker_id, side_channels):
        first = not CapableSceneEnv.created
        return CapableSceneEnv("balance", seed=1, side_channels=side_channels, fail_at_step=4 if first else None,
                               fail_with=UnityCommunicationException("build gone"))

    manager = inprocess_env.InProcessEnvManager(factory, RunOptions())
    try:
        for name, spec in manager.training_behaviors.items():
            manager.set_policy(name, ScriptedPolicy(spec))
        manager.reset(PARAMETERS)
        with caplog.at_level(logging.WARNING):
            for _ in range(6):
                (step,) = manager._step()
        assert "Restarting worker[0] after 'build gone'" in caplog.text
        assert len(CapableSceneEnv.created) == 2 and CapableSceneEnv.created[0]._closed
        assert manager.restart_counts == [1] and manager.env is CapableSceneEnv.created[1]
        assert manager.first_step_infos  # the reset after the restart, for the trainer's next advance
        assert CapableSceneEnv.created[1].academy.parameters.keys() == ["difficulty"]  # sent again
        # a curriculum lesson changes a parameter mid-run (TrainerController.reset_env_if_ready)
        manager.set_env_parameters({"difficulty": ConstantSettings(value=0.25)})
        manager._step()
        assert CapableSceneEnv.created[1].academy.parameters.describe("difficulty") == 0.25
    finally:
        manager.close()
    assert CapableSceneEnv.created[1]._closed


def test_no_restart_beyond_the_quota_and_unexpected_errors_are_raised(caplog):
    options = RunOptions()
    options.env_settings.max_lifetime_restarts = 0

    def factory(worker_id, side_channels):
        return CapableSceneEnv("balance", seed=1, side_channels=side_channels, fail_at_step=2,
                               fail_with=UnityCommunicationException("build gone"))

    manager = inprocess_env.InProcessEnvManager(factory, options)
    for name, spec in manager.training_behaviors.items():
        manager.set_policy(name, ScriptedPolicy(spec))
    manager.reset({})
    manager._step()
    with caplog.at_level(logging.ERROR), pytest.raises(UnityCommunicationException, match="build gone"):
        manager._step()
    assert "Worker 0 exceeded the allowed number of restarts." in caplog.text
    manager.close()

    def broken(worker_id, side_channels):
        return CapableSceneEnv("balance", seed=1, side_channels=side_channels, fail_at_step=1,
                               fail_with=ValueError("a bug in the environment"))

    manager = inprocess_env.InProcessEnvManager(broken, RunOptions())
    for name, spec in manager.training_behaviors.items():
        manager.set_policy(name, ScriptedPolicy(spec))
    manager.reset({})
    env = manager.env
    caplog.clear()
    with caplog.at_level(logging.ERROR), pytest.raises(ValueError, match="a bug in the environment"):
        manager._step()
    assert "UnityEnvironment worker 0: environment raised an unexpected exception." in caplog.text
    assert env._closed and manager.env is None and manager.restart_counts == [0]
    manager.close()


def test_more_copies_keep_the_worker_processes(monkeypatch):
    made = []
    monkeypatch.setattr(inprocess_env, "ORIGINAL", lambda factory, options, n: made.append(n) or "workers")
    assert inprocess_env.env_manager(scene_factory, RunOptions(), 2) == "workers" and made == [2]
    manager = inprocess_env.env_manager(scene_factory, RunOptions(), 1)
    assert isinstance(manager, inprocess_env.InProcessEnvManager) and made == [2]
    manager.close()


def test_install_switches_and_leaves_a_foreign_manager_alone(monkeypatch):
    from mlagents.trainers import subprocess_env_manager

    monkeypatch.setattr(learn, "SubprocessEnvManager", subprocess_env_manager.SubprocessEnvManager)
    monkeypatch.setenv("MLAGENTS_PLUGINS_ENV_WORKER", "1")
    assert inprocess_env.install_inprocess_env() is False
    assert learn.SubprocessEnvManager is subprocess_env_manager.SubprocessEnvManager
    monkeypatch.delenv("MLAGENTS_PLUGINS_ENV_WORKER")
    assert inprocess_env.install_inprocess_env() is True and learn.SubprocessEnvManager is inprocess_env.env_manager
    assert inprocess_env.install_inprocess_env() is True  # idempotent

    def ray_manager(factory, options, n):  # what mlagents-plugins-learn puts there for the run
        return None

    monkeypatch.setattr(learn, "SubprocessEnvManager", ray_manager)
    assert inprocess_env.install_inprocess_env() is False and learn.SubprocessEnvManager is ray_manager


# A "trainer" that launches a "build" in a new session (as mlagents_envs.env_utils.launch_executable does) and
# registers it with the build guard, as InProcessEnvManager does.
TRAINER = textwrap.dedent("""
    import subprocess, sys, time
    from mlagents_plugins.host.inprocess_env import BuildGuard
    build = subprocess.Popen(["sleep", "120"], start_new_session=True)
    guard = BuildGuard()
    guard.watch(build.pid)
    print(build.pid, guard.process.pid, flush=True)
    if sys.argv[1] == "release":  # the environment was closed normally (UnityEnvironment ends its build itself)
        guard.release()
        print(guard.process, flush=True)
    time.sleep(120)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="the test reads /proc")
def test_the_build_ends_when_the_trainer_is_killed():
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, "kill"], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        build_pid, guard_pid = (int(p) for p in trainer.stdout.readline().split())
        pids = [(p, process_lifetime.start_time(p)) for p in (build_pid, guard_pid)]
        time.sleep(0.5)  # the guard has read the build's line
        assert all(process_lifetime.process_alive(*p) for p in pids)
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        deadline = time.monotonic() + 2 + build_guard.BUILD_GRACE_S
        while time.monotonic() < deadline and any(process_lifetime.process_alive(*p) for p in pids):
            time.sleep(0.05)
        assert not [p for p in pids if process_lifetime.process_alive(*p)], pids
    finally:
        trainer.kill()
        trainer.wait()
        trainer.stdout.close()


@pytest.mark.skipif(sys.platform != "linux", reason="the test reads /proc")
def test_a_released_guard_exits_and_ends_nothing():
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, "release"], cwd=REPO, stdout=subprocess.PIPE,
                               text=True)
    build_pid = None
    try:
        build_pid, guard_pid = (int(p) for p in trainer.stdout.readline().split())
        assert trainer.stdout.readline().strip() == "None"  # release() waited for the guard
        assert not process_lifetime.process_alive(guard_pid)
        time.sleep(0.2)
        assert process_lifetime.process_alive(build_pid)  # the guard ended nothing
    finally:
        if build_pid:
            os.kill(build_pid, signal.SIGKILL)
        trainer.kill()
        trainer.wait()
        trainer.stdout.close()


def test_guard_lines():
    assert build_guard.parse_line("exit\n") == ["exit"]
    assert build_guard.parse_line("123 456\n") == [123, 456]
    assert build_guard.parse_line("123 -\n") == [123, None]
    assert build_guard.parse_line("x 1\n") is None and build_guard.parse_line("") is None
