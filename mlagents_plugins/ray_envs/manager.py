"""``RayEnvManager``: ML-Agents' ``EnvManager`` with every environment copy in a Ray actor.

It takes the place of ``SubprocessEnvManager`` (``mlagents/trainers/subprocess_env_manager.py``) and keeps
its contract, so every trainer - built-in or plugin - runs unchanged:

* Policy inference stays here, in the learner process and on its device (the SEED RL shape): for each
  copy whose last step is back, ``policy.get_action`` runs here and only the environment actions travel to
  the actor, which applies them and returns decision/terminal steps and the stats side channel's data.
* ``_step`` returns as soon as at least one copy has a result (``ray.wait``), like the subprocess manager
  polling its step queue, so a slow copy or node never holds the others back.
* Environment parameters (curricula, samplers) and the engine configuration go to every copy through the
  usual side channels; Ray runs an actor's calls in submission order, so parameters sent before a reset or
  step are applied before it.

Faults.  A copy whose build dies (a Unity exception inside the actor) gets its build relaunched by the same
actor; a copy whose actor dies gets a new actor, preferably on the same node.  Both count against the
rate limit of ``SubprocessEnvManager`` (``--restarts-rate-limit-n`` per ``--restarts-rate-limit-period-s``
and ``--max-lifetime-restarts``).  Unlike the subprocess manager, which resets every copy after a restart,
only the failed copy's partial trajectories are dropped (its agent ids are cleaned from the agent
processors, as ``end_episode`` does for all of them) and the other copies keep stepping.  When a copy's
node is gone and no other node has room for it, the run goes on with fewer copies and a warning.
"""
import datetime
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.env_manager import EnvManager, EnvironmentStep
from mlagents.trainers.settings import RunOptions
from mlagents_envs.base_env import BehaviorName, BehaviorSpec
from mlagents_envs.exception import UnityException
from mlagents_envs.logging_util import get_logger
from mlagents_envs.timers import TimerNode, hierarchical_timer

from mlagents_plugins.ray_envs.actor import BuildNotFoundError, EnvCopy, LaunchSpec

logger = get_logger(__name__)

# Summary keys (written to each behavior's StatsReporter, so they appear in the console summaries'
# TensorBoard files next to the trainer's own stats).
STAT_STEPS_PER_SECOND = "Ray/Env Steps Per Second"
STAT_COPY_STEPS_PER_SECOND = "Ray/Env Steps Per Second (copy {})"
STAT_ROUND_TRIP_MS = "Ray/Round Trip Latency (ms)"
STAT_BUILD_STEP_MS = "Ray/Build Step Time (ms)"
STAT_RESTARTS = "Ray/Restarts"
STAT_COPIES_ALIVE = "Ray/Copies Alive"
RATE_WINDOW_S = 2.0  # steps/s are measured over windows of at least this long
CLOSE_TIMEOUT_S = 10.0


class RayEnvError(RuntimeError):
    """A problem with the Ray setup that training cannot go on from (placement, no copies left, ...)."""


@dataclass
class RayOptions:
    """How copies are placed; filled from the ``--ray-*`` options of ``mlagents-plugins-learn``."""

    cpus_per_env: float = 1.0
    gpus_per_env: float = 0.0
    resources: Dict[str, float] = field(default_factory=dict)  # custom resources each copy needs
    start_timeout_s: float = 300.0  # how long a copy may take to be placed and launch its build


@dataclass
class _Copy:
    worker_id: int
    actor: Any
    node_id: str = ""
    node_ip: str = ""
    alive: bool = True
    pending: Any = None  # ObjectRef of the step in flight
    sent_at: float = 0.0
    previous_step: Optional[EnvironmentStep] = None
    previous_action_info: Dict[str, ActionInfo] = field(default_factory=dict)
    restarts: int = 0
    recent_restarts: List[datetime.datetime] = field(default_factory=list)
    window_start: float = 0.0
    window_steps: int = 0
    steps_per_second: float = 0.0


class RayEnvManager(EnvManager):
    def __init__(self, spec: LaunchSpec, run_options: RunOptions, n_env: int, options: RayOptions):
        super().__init__()
        if not ray.is_initialized():
            raise RayEnvError("RayEnvManager needs ray.init() first (mlagents-plugins-learn does it for --ray-address)")
        self.spec = spec
        self.run_options = run_options
        self.options = options
        self.env_parameters: Optional[Dict] = None
        self.behavior_specs: Dict[BehaviorName, BehaviorSpec] = {}
        self._reporters_with_cluster_stats = 0  # behaviors whose summaries already got Copies Alive / Restarts
        self.copies: List[_Copy] = [_Copy(i, self._new_actor(i)) for i in range(n_env)]
        starts = [c.actor.start.remote() for c in self.copies]
        try:
            infos = self._get_starts(starts, [c.worker_id for c in self.copies])
        except BaseException:
            self._kill_all()
            raise
        for copy, info in zip(self.copies, infos):
            self._adopt(copy, info)
        nodes = sorted({c.node_ip + "/" + c.node_id[:8] for c in self.copies})
        logger.info(f"{n_env} environment copies running on Ray node(s): {', '.join(nodes)}")

    # -- placement -----------------------------------------------------------------------------------------
    def _new_actor(self, worker_id: int, node_id: Optional[str] = None):
        strategy: Any = "SPREAD"
        if node_id:
            strategy = NodeAffinitySchedulingStrategy(node_id, soft=True)
        opts: Dict[str, Any] = dict(
            num_cpus=self.options.cpus_per_env, num_gpus=self.options.gpus_per_env, max_restarts=0,
            scheduling_strategy=strategy,
        )
        if self.options.resources:
            opts["resources"] = dict(self.options.resources)
        return ray.remote(EnvCopy).options(**opts).remote(worker_id, self.spec)

    def _get_starts(self, refs: List[Any], worker_ids: List[int]) -> List[Dict[str, Any]]:
        """Wait for copies to be placed and launched; turn the ways this fails into clear errors."""
        try:
            return ray.get(refs, timeout=self.options.start_timeout_s)
        except GetTimeoutError:
            need = {"CPU": self.options.cpus_per_env, "GPU": self.options.gpus_per_env, **self.options.resources}
            need = {k: v for k, v in need.items() if v}
            raise RayEnvError(
                f"environment copies {worker_ids} were not placed and started within {self.options.start_timeout_s:.0f} s "
                f"(--ray-start-timeout). Each copy needs {need}; the cluster has {ray.cluster_resources()} in all. "
                f"Lower --num-envs or --ray-cpus-per-env/--ray-gpus-per-env, or add nodes."
            ) from None
        except RayTaskError as err:
            if isinstance(err.cause, BuildNotFoundError):
                raise RayEnvError(str(err.cause)) from None
            raise RayEnvError(f"an environment copy failed to start: {err.cause!r}") from None
        except RayActorError as err:
            raise RayEnvError(f"an environment copy's actor died while starting: {err}") from None

    def _adopt(self, copy: _Copy, info: Dict[str, Any]) -> None:
        copy.node_id, copy.node_ip = info["node_id"], info["node_ip"]
        copy.window_start, copy.window_steps = time.perf_counter(), 0

    def _kill_all(self) -> None:
        for c in self.copies:
            try:
                ray.kill(c.actor)
            except Exception:  # noqa: BLE001 - already gone
                pass

    @property
    def alive_copies(self) -> List[_Copy]:
        return [c for c in self.copies if c.alive]

    # -- EnvManager ----------------------------------------------------------------------------------------
    def _take_step(self, last_step: EnvironmentStep) -> Dict[BehaviorName, ActionInfo]:
        all_action_info: Dict[str, ActionInfo] = {}
        for brain_name, step_tuple in last_step.current_all_step_result.items():
            if brain_name in self.policies:
                all_action_info[brain_name] = self.policies[brain_name].get_action(step_tuple[0], last_step.worker_id)
        return all_action_info

    def _send_steps(self) -> None:
        for c in self.alive_copies:
            if c.pending is None:
                action_info = self._take_step(c.previous_step) if c.previous_step else {}
                c.previous_action_info = action_info
                actions = {name: info.env_action for name, info in action_info.items() if len(info.agent_ids) > 0}
                c.sent_at = time.perf_counter()
                c.pending = c.actor.step.remote(actions)

    def _step(self) -> List[EnvironmentStep]:
        step_infos: List[EnvironmentStep] = []
        while not step_infos:
            self._send_steps()
            pending = {c.pending: c for c in self.alive_copies if c.pending is not None}
            if not pending:
                raise RayEnvError("no environment copy is left running; see the warnings above for why")
            ray.wait(list(pending), num_returns=1)
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
            timer_nodes: List[TimerNode] = []
            for ref in ready:
                copy = pending[ref]
                copy.pending = None
                try:
                    results, env_stats, build_seconds, timer_root = ray.get(ref)
                except (RayActorError, RayTaskError) as err:
                    restarted = self._handle_failure(copy, err)
                    if restarted is not None:
                        step_infos.append(restarted)
                    continue
                now = time.perf_counter()
                if any(name not in self.behavior_specs for name in results):
                    self.behavior_specs.update(ray.get(copy.actor.behavior_specs.remote()))
                step = EnvironmentStep(results, copy.worker_id, copy.previous_action_info, env_stats)
                copy.previous_step = step
                step_infos.append(step)
                self._record_step(copy, now - copy.sent_at, build_seconds, now)
                timer_nodes.append(timer_root)
            if timer_nodes:
                # Into timers.json under "workers", as SubprocessEnvManager merges its workers' timers.
                with hierarchical_timer("workers") as workers_node:
                    for node in timer_nodes:
                        workers_node.merge(node, root_name="worker_root", is_parallel=True)
        return step_infos

    def _reset_env(self, config: Optional[Dict] = None) -> List[EnvironmentStep]:
        self._drain()
        self.set_env_parameters(config)
        refs = {c.actor.reset.remote(None): c for c in self.alive_copies}
        infos: List[EnvironmentStep] = []
        for ref, copy in refs.items():
            try:
                results, _stats, specs = ray.get(ref)
                self.behavior_specs.update(specs)
                copy.previous_step = EnvironmentStep(results, copy.worker_id, {}, {})
                infos.append(copy.previous_step)
            except (RayActorError, RayTaskError) as err:
                restarted = self._handle_failure(copy, err)
                if restarted is not None:
                    infos.append(restarted)
        if not infos:
            raise RayEnvError("no environment copy is left running after the reset; see the warnings above")
        return infos

    def _drain(self) -> None:
        """Wait for the steps in flight (their results are discarded: a reset follows)."""
        for c in self.alive_copies:
            if c.pending is not None:
                try:
                    ray.get(c.pending)
                except (RayActorError, RayTaskError) as err:
                    c.pending = None
                    self._handle_failure(c, err)
                c.pending = None

    def set_env_parameters(self, config: Optional[Dict] = None) -> None:
        self.env_parameters = config
        for c in self.alive_copies:
            c.actor.set_env_parameters.remote(config)

    @property
    def training_behaviors(self) -> Dict[BehaviorName, BehaviorSpec]:
        return dict(self.behavior_specs)

    def close(self) -> None:
        refs = []
        for c in self.alive_copies:
            try:
                refs.append(c.actor.close.remote())
            except Exception:  # noqa: BLE001 - an actor that is already gone needs no closing
                pass
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=CLOSE_TIMEOUT_S)
        self._kill_all()

    # -- faults --------------------------------------------------------------------------------------------
    def _restart_quota_left(self, copy: _Copy) -> bool:
        env = self.run_options.env_settings
        window = datetime.timedelta(seconds=env.restarts_rate_limit_period_s)
        now = datetime.datetime.now()
        copy.recent_restarts = [t for t in copy.recent_restarts if t > now - window]
        lifetime_ok = env.max_lifetime_restarts == -1 or copy.restarts < env.max_lifetime_restarts
        rate_ok = env.restarts_rate_limit_n == -1 or len(copy.recent_restarts) < env.restarts_rate_limit_n
        return lifetime_ok and rate_ok

    def _node_alive(self, node_id: str) -> bool:
        return any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes())

    def _room_for_a_copy(self) -> bool:
        free = ray.available_resources()
        need = {"CPU": self.options.cpus_per_env, "GPU": self.options.gpus_per_env, **self.options.resources}
        return all(free.get(k, 0.0) >= v for k, v in need.items() if v)

    def _handle_failure(self, copy: _Copy, err: Exception) -> Optional[EnvironmentStep]:
        """Restart a failed copy (returns its first step after the reset) or give it up (returns None)."""
        actor_died = isinstance(err, RayActorError)
        if not actor_died and not isinstance(err.cause, UnityException):
            raise err  # a bug, not a fault of the build or the cluster
        what = "actor" if actor_died else "build"
        reason = str(err).strip().splitlines()[0] if actor_died else repr(err.cause)
        self._drop_partial_trajectories(copy.worker_id)
        if actor_died and not self._node_alive(copy.node_id):
            time.sleep(0.5)  # the node's resources leave the available pool when its death is recorded
            if not self._room_for_a_copy():
                copy.alive = False
                logger.warning(
                    f"environment copy {copy.worker_id}: its node {copy.node_ip} ({copy.node_id[:8]}) is gone and no "
                    f"other node has room for it; training goes on with {len(self.alive_copies)} copies"
                )
                self._record_cluster_stats()
                return None
        if not self._restart_quota_left(copy):
            env = self.run_options.env_settings
            raise RayEnvError(
                f"environment copy {copy.worker_id} failed again ({what}: {reason}) and exceeded its restart "
                f"limit (--restarts-rate-limit-n {env.restarts_rate_limit_n} per "
                f"{env.restarts_rate_limit_period_s} s, --max-lifetime-restarts {env.max_lifetime_restarts})"
            )
        logger.warning(f"restarting environment copy {copy.worker_id} on {copy.node_ip}: its {what} died ({reason})")
        copy.restarts += 1
        copy.recent_restarts.append(datetime.datetime.now())
        try:
            if actor_died:
                try:
                    ray.kill(copy.actor)
                except Exception:  # noqa: BLE001 - it is dead already
                    pass
                copy.actor = self._new_actor(copy.worker_id, copy.node_id)
                start = copy.actor.start.remote()
            else:
                start = copy.actor.restart.remote()
            self._adopt(copy, self._get_starts([start], [copy.worker_id])[0])
            copy.actor.set_env_parameters.remote(self.env_parameters)
            results, _stats, specs = ray.get(copy.actor.reset.remote(None))
            self.behavior_specs.update(specs)
        except (RayEnvError, RayActorError, RayTaskError) as again:
            copy.alive = False
            logger.warning(
                f"environment copy {copy.worker_id} could not be restarted ({again}); training goes on with "
                f"{len(self.alive_copies)} copies"
            )
            self._record_cluster_stats()
            return None
        copy.previous_step = EnvironmentStep(results, copy.worker_id, {}, {})
        copy.previous_action_info = {}
        self._record_cluster_stats()
        return copy.previous_step

    def _drop_partial_trajectories(self, worker_id: int) -> None:
        """Forget the failed copy's unfinished trajectories, as ``AgentProcessor.end_episode`` does for all.

        Uses the agent processors' per-agent tables; their keys are ``get_global_agent_id(worker_id, id)``.
        """
        agent_prefix, group_prefix = f"agent_{worker_id}-", f"group_{worker_id}-"
        for manager in self.agent_managers.values():
            ids = set(manager._experience_buffers) | set(manager._last_step_result)
            for global_id in [g for g in ids if g.startswith(agent_prefix)]:
                manager._clean_agent_data(global_id)
            for table in (manager._current_group_obs, manager._group_status):
                for group_id in [g for g in table if g.startswith(group_prefix)]:
                    del table[group_id]

    # -- stats ---------------------------------------------------------------------------------------------
    def _reporters(self):
        return [m._stats_reporter for m in self.agent_managers.values()]

    def _record_step(self, copy: _Copy, round_trip: float, build_seconds: float, now: float) -> None:
        copy.window_steps += 1
        reporters = self._reporters()
        for r in reporters:
            r.add_stat(STAT_ROUND_TRIP_MS, 1000.0 * round_trip)
            r.add_stat(STAT_BUILD_STEP_MS, 1000.0 * build_seconds)
        if len(reporters) != self._reporters_with_cluster_stats:
            # A behavior's first steps: its first summary shows the copies alive and the restarts too, even when the
            # run ends before any copy's first rate window (below) closes.
            self._record_cluster_stats()
        elapsed = now - copy.window_start
        if elapsed >= RATE_WINDOW_S:
            copy.steps_per_second = copy.window_steps / elapsed
            copy.window_start, copy.window_steps = now, 0
            for r in reporters:
                r.set_stat(STAT_COPY_STEPS_PER_SECOND.format(copy.worker_id), copy.steps_per_second)
                r.set_stat(STAT_STEPS_PER_SECOND, sum(c.steps_per_second for c in self.alive_copies))
            self._record_cluster_stats()

    def _record_cluster_stats(self) -> None:
        reporters = self._reporters()
        self._reporters_with_cluster_stats = len(reporters)
        for c in self.copies:
            if not c.alive:
                c.steps_per_second = 0.0
        for r in reporters:
            for c in self.copies:
                if not c.alive:
                    r.set_stat(STAT_COPY_STEPS_PER_SECOND.format(c.worker_id), 0.0)
            r.set_stat(STAT_RESTARTS, float(sum(c.restarts for c in self.copies)))
            r.set_stat(STAT_COPIES_ALIVE, float(len(self.alive_copies)))

    @property
    def restart_counts(self) -> List[int]:
        return [c.restarts for c in self.copies]
