"""At ``--num-envs 1``, ``mlagents-learn`` steps its environment in the trainer's own process.

ML-Agents 1.1.0's ``learn.run_training`` always builds a ``SubprocessEnvManager``: one worker process per
environment copy that serves the build's gRPC connection and hands every step to the trainer process through a
pipe and a queue (actions pickled one way, observations, rewards, side-channel stats and timers the other).  With
one copy nothing runs in parallel with the trainer that the trainer could not do itself (the trainer waits for
each step), so the hop is pure cost: about 1.8 CPU ms per env step in the worker on HalfCheetah-v5 with one agent
(bench/results/fast-sac-cpu-split-2026-11-28), some 10% of a fast_sac step.

``env_manager`` takes ``SubprocessEnvManager``'s place in ``learn`` and, for one copy, returns
``InProcessEnvManager``: what the worker of ``subprocess_env_manager.worker`` does, in the trainer's process.

* The same side channels per environment: environment parameters, the engine configuration of ``--width``,
  ``--time-scale`` and the rest, the stats channel (``Environment/...`` statistics of the build, drained after
  every step as the worker does), the training-analytics channel where the build has the capability.  The
  environment is created at the first call that needs it (the initial reset), as the worker's creation surfaced
  at the first reply, so a build that never connects or exits at start raises the same exception (with
  ``connect_errors``' text) from the same place, inside ``start_learning``.
* Environment parameters and curriculum lessons: only ``ParameterRandomizationSettings`` reach the channel (as the
  worker applies them); they are kept and sent again to a restarted environment.
* A step that fails (a crashed or hung build: ``UnityCommunicationException``, ``UnityTimeOutException``, ...)
  closes that environment and, within ``--max-lifetime-restarts`` and ``--restarts-rate-limit-n`` per
  ``--restarts-rate-limit-period-s`` (``SubprocessEnvManager``'s own quota methods, so the same checks and
  messages), creates a new one and resets, with "Restarting worker[0] after ..." as upstream logs it; other
  exceptions are logged as the worker logs them and raised.
* Ctrl+C and ``threaded: true`` crashes (``trainer_thread_crash``) raise ``KeyboardInterrupt`` in the main
  thread as before; ``close`` (``learn``'s ``finally``) closes the environment and its build.
* ``kill -9`` of the trainer: ``worker_lifetime`` made the worker end its build; here the build is the trainer's
  own child, so a watcher process (``util.build_guard``, one per manager, no CPU while waiting) ends it.
* ``loopback_bind``, ``rpc_channel`` and ``connect_errors`` act on ``mlagents_envs`` classes and are installed in
  this process by the same hook, so they apply as they did in the worker.  ``env_wait`` and ``worker_lifetime``
  have nothing to do here (no queue, no worker).

Where it stays ML-Agents' ``SubprocessEnvManager``: ``--num-envs`` above 1 (copies step in parallel there), and
when something else has already replaced ``learn.SubprocessEnvManager`` (``mlagents-plugins-learn``'s Ray
manager).  The environment's timers appear in ``timers.json`` under the trainer's own ``env_step`` instead of the
merged ``workers`` node.  ``MLAGENTS_PLUGINS_ENV_WORKER=1`` keeps the worker process (``patches`` lists it).
"""
import datetime
import logging
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

from mlagents.trainers.env_manager import EnvironmentStep, EnvManager
from mlagents.trainers.settings import ParameterRandomizationSettings
from mlagents.trainers.subprocess_env_manager import SubprocessEnvManager
from mlagents.trainers.training_analytics_side_channel import TrainingAnalyticsSideChannel
from mlagents_envs.exception import (
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
)
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig, EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel
from mlagents_envs.timers import timed

from mlagents_plugins.host import patches

#: ML-Agents' ``learn.SubprocessEnvManager`` (the class) once replaced
ORIGINAL = None

logger = logging.getLogger(__name__)

#: the worker id ML-Agents gives the one copy (its port offset, its seed offset, its log file)
WORKER_ID = 0
#: the exceptions after which ML-Agents' worker ends quietly (logged at debug) and its manager may restart it
UNITY_FAILURES = (UnityCommunicationException, UnityTimeOutException, UnityEnvironmentException,
                  UnityCommunicatorStoppedException)


class BuildGuard:
    """The trainer's side of ``util.build_guard``: started at the first build, told each build's pid."""

    def __init__(self) -> None:
        self.process: Optional[subprocess.Popen] = None

    def watch(self, build_pid: int) -> None:
        from mlagents_plugins.util import process_lifetime

        try:
            if self.process is None:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "mlagents_plugins.util.build_guard", str(os.getpid())],
                    stdin=subprocess.PIPE, start_new_session=True, close_fds=True)
            token = process_lifetime.start_time(build_pid)
            self.process.stdin.write(f"{build_pid} {'-' if token is None else token}\n".encode())
            self.process.stdin.flush()
        except OSError as err:  # no guard: the build still ends with a normal close
            logger.warning("mlagents-plugins: could not start the watcher that ends the build if the trainer is "
                           "killed: %s", err)

    def release(self) -> None:
        """Tell the watcher the builds were closed normally, and wait for it."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            process.stdin.write(b"exit\n")
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class InProcessEnvManager(EnvManager):
    """``SubprocessEnvManager`` with one copy and no worker process: its worker's loop, run by the trainer."""

    # ML-Agents' restart quota, the same functions (they read run_options, restart_counts and
    # recent_restart_timestamps), so the same limits and messages
    _assert_worker_can_restart = SubprocessEnvManager._assert_worker_can_restart
    _worker_has_restart_quota = SubprocessEnvManager._worker_has_restart_quota
    _drop_old_restart_timestamps = SubprocessEnvManager._drop_old_restart_timestamps

    def __init__(self, env_factory: Callable, run_options: Any):
        super().__init__()
        self.env_factory = env_factory
        self.run_options = run_options
        self.env = None  # created at the first call that needs it
        self.env_parameters: Optional[Dict] = None  # sent again to a restarted environment
        self.previous_step: EnvironmentStep = EnvironmentStep.empty(WORKER_ID)
        self.previous_all_action_info: Dict = {}
        # SubprocessEnvManager's restart bookkeeping (its quota methods read these), for the one copy
        self.recent_restart_timestamps: List[List[datetime.datetime]] = [[]]
        self.restart_counts: List[int] = [0]
        self._param_channel = None
        self._stats_channel = None
        self._analytics_channel = None
        self._guard = BuildGuard()

    # -- the environment's life, as the worker process had it ------------------------------------------------
    def _ensure_env(self):
        """The environment, created with the worker's side channels if there is none (call through ``_call``)."""
        if self.env is not None:
            return self.env
        settings = self.run_options.engine_settings
        params = EnvironmentParametersChannel()
        engine = EngineConfigurationChannel()
        engine.set_configuration(EngineConfig(
            width=settings.width, height=settings.height, quality_level=settings.quality_level,
            time_scale=settings.time_scale, target_frame_rate=settings.target_frame_rate,
            capture_frame_rate=settings.capture_frame_rate))
        stats = StatsSideChannel()
        analytics = TrainingAnalyticsSideChannel()  # the worker of id 0 carries it
        env = self.env_factory(WORKER_ID, [params, engine, stats, analytics])
        self.env, self._param_channel, self._stats_channel = env, params, stats
        process = getattr(env, "_process", None)
        if process is not None:
            self._guard.watch(process.pid)
        capabilities = getattr(env, "academy_capabilities", None)
        if not capabilities or not capabilities.trainingAnalytics:
            analytics = None  # the build would not know the channel
        self._analytics_channel = analytics
        if analytics is not None:
            analytics.environment_initialized(self.run_options)
        return env

    @staticmethod
    def _log_failure(ex: BaseException) -> None:
        if isinstance(ex, UNITY_FAILURES):
            logger.debug(f"UnityEnvironment worker {WORKER_ID}: environment stopping.")
        else:
            logger.exception(f"UnityEnvironment worker {WORKER_ID}: environment raised an unexpected exception.")

    def _close_env(self) -> None:
        env, self.env = self.env, None
        self._param_channel = self._stats_channel = self._analytics_channel = None
        if env is None:
            return
        logger.debug(f"UnityEnvironment worker {WORKER_ID} closing.")
        try:
            env.close()
        except UNITY_FAILURES as ex:  # already closed by its own failure
            logger.debug(f"UnityEnvironment worker {WORKER_ID}: close: {ex}")
        logger.debug(f"UnityEnvironment worker {WORKER_ID} done.")

    def _env_failed(self, ex: BaseException) -> None:
        """What the worker did when a command raised: log it, close the environment."""
        self._log_failure(ex)
        self._close_env()

    def _call(self, action: Callable[[], Any]) -> Any:
        """Run one of the worker's commands; a failure ends this environment as it ended the worker."""
        try:
            return action()
        except Exception as ex:
            self._env_failed(ex)
            raise

    def _generate_all_results(self) -> Dict:
        env = self.env
        return {brain_name: env.get_steps(brain_name) for brain_name in env.behavior_specs}

    # -- EnvManager ----------------------------------------------------------------------------------------
    def _env_step(self, all_action_info: Dict) -> Any:
        env = self._ensure_env()
        for brain_name, action_info in all_action_info.items():
            if len(action_info.agent_ids) > 0:
                env.set_actions(brain_name, action_info.env_action)
        env.step()
        all_step_result = self._generate_all_results()
        return all_step_result, self._stats_channel.get_and_reset_stats()

    def _step(self) -> List:
        while True:
            all_action_info = self._take_step(self.previous_step)
            self.previous_all_action_info = all_action_info
            try:
                all_step_result, env_stats = self._call(lambda: self._env_step(all_action_info))
            except Exception as ex:
                self._restart(ex)  # raises when ML-Agents would not restart the worker
                continue
            self.previous_step = EnvironmentStep(all_step_result, WORKER_ID, all_action_info, env_stats)
            return [self.previous_step]

    def _restart(self, ex: Exception) -> None:
        """``SubprocessEnvManager._restart_failed_workers`` for the one copy."""
        self._assert_worker_can_restart(WORKER_ID, ex)
        logger.warning(f"Restarting worker[{WORKER_ID}] after '{ex}'")
        self.recent_restart_timestamps[WORKER_ID].append(datetime.datetime.now())
        self.restart_counts[WORKER_ID] += 1
        # As upstream: clear the trajectories in flight, reset with the parameters last sent.
        self.reset(self.env_parameters)

    def _reset_env(self, config: Optional[Dict] = None) -> List:
        self.set_env_parameters(config)

        def reset() -> Dict:
            self.env.reset()
            return self._generate_all_results()

        self.previous_step = EnvironmentStep(self._call(reset), WORKER_ID, {}, {})
        return [self.previous_step]

    def set_env_parameters(self, config: Optional[Dict] = None) -> None:
        self.env_parameters = config
        self._call(self._ensure_env)
        for key, value in (config or {}).items():
            if isinstance(value, ParameterRandomizationSettings):  # what the worker applies
                value.apply(key, self._param_channel)

    def on_training_started(self, behavior_name: str, trainer_settings: Any) -> None:
        self._call(self._ensure_env)
        if self._analytics_channel is not None:
            self._call(lambda: self._analytics_channel.training_started(behavior_name, trainer_settings))

    @property
    def training_behaviors(self) -> Dict:
        return dict(self._call(self._ensure_env).behavior_specs)

    def close(self) -> None:
        logger.debug("InProcessEnvManager closing.")
        try:
            self._close_env()
        finally:
            self._guard.release()

    @timed
    def _take_step(self, last_step) -> Dict:
        all_action_info: Dict = {}
        for brain_name, step_tuple in last_step.current_all_step_result.items():
            if brain_name in self.policies:
                all_action_info[brain_name] = self.policies[brain_name].get_action(step_tuple[0], WORKER_ID)
        return all_action_info


def env_manager(env_factory: Callable, run_options: Any, n_env: int = 1):
    """``learn.SubprocessEnvManager(env_factory, run_options, n_env)`` of ML-Agents 1.1.0: for one copy the
    environment in this process, otherwise ML-Agents' worker processes."""
    if n_env == 1:
        return InProcessEnvManager(env_factory, run_options)
    return (ORIGINAL or SubprocessEnvManager)(env_factory, run_options, n_env)


def install_inprocess_env() -> bool:
    """Replace ``learn.SubprocessEnvManager`` (once) unless something else has replaced it; returns whether the
    patch is active."""
    try:
        from mlagents.trainers import learn, subprocess_env_manager
    except ImportError:
        return False
    current = learn.SubprocessEnvManager
    if current is not env_manager and current is not subprocess_env_manager.SubprocessEnvManager:
        logger.debug("learn.SubprocessEnvManager is %r (not ML-Agents' class): left alone", current)
        return False
    return patches.replace_attribute("inprocess_env", learn, "SubprocessEnvManager", env_manager,
                                     sys.modules[__name__])
