"""The Ray actor that owns one environment copy: it launches the build on its own node and steps it.

This module imports only ``mlagents_envs`` (no torch, no trainers), so an actor process on a worker node
stays small.  The build speaks the usual gRPC protocol to the actor over the node's loopback; the port is
picked on the node itself, so copies on different machines never need to agree on ports.  Policy
inference stays in the learner: the actor receives the environment actions only (``ActionTuple``s) and
returns decision/terminal steps plus the stats side channel's data.
"""
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from mlagents_envs.base_env import ActionTuple
from mlagents_envs.env_utils import validate_environment_path
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityEnvironmentException, UnityWorkerInUseException
from mlagents_envs.side_channel.engine_configuration_channel import (
    EngineConfig,
    EngineConfigurationChannel,
)
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel
from mlagents_envs.timers import TimerNode, get_timer_root, reset_timers

from mlagents_plugins.host import patches
from mlagents_plugins.testing.ports import free_base_port

# How many times a port that was free when picked but taken when the build started is re-picked.
PORT_RETRIES = 3


class BuildNotFoundError(UnityEnvironmentException):
    """The build path does not name a build on the node the copy was placed on."""


@dataclass
class LaunchSpec:
    """What ``learn.create_environment_factory`` would have been given, shipped to every actor."""

    env_path: str
    no_graphics: bool
    no_graphics_monitor: bool
    seed: int
    num_areas: int
    timeout_wait: int
    env_args: Optional[List[str]]
    log_folder: Optional[str]
    engine: Dict[str, Any] = field(default_factory=dict)  # EngineConfig fields from RunOptions.engine_settings


def _apply_parameters(config: Optional[Dict], channel: EnvironmentParametersChannel) -> None:
    """Environment parameters arrive as mlagents ``ParameterRandomizationSettings`` (pickled by Ray)."""
    for key, value in (config or {}).items():
        if hasattr(value, "apply"):
            value.apply(key, channel)


class EnvCopy:
    """One environment copy; wrapped with ``ray.remote`` by the manager (see ``manager.remote_env_copy``)."""

    def __init__(self, worker_id: int, spec: LaunchSpec):
        # This process serves the build's gRPC connection, as an mlagents-learn worker does: on loopback only
        # (unless this node's environment sets MLAGENTS_PLUGINS_BIND_ALL=1).
        patches.install("loopback_bind")
        self.worker_id = worker_id
        self.spec = spec
        self.env: Optional[UnityEnvironment] = None
        self.params = EnvironmentParametersChannel()
        self.stats = StatsSideChannel()
        self.engine = EngineConfigurationChannel()
        if spec.engine:
            self.engine.set_configuration(EngineConfig(**spec.engine))
        self.env_parameters: Optional[Dict] = None
        self.port: Optional[int] = None
        self.launches = 0

    # -- life cycle ----------------------------------------------------------------------------------------
    def _resolve_build(self) -> str:
        path = self.spec.env_path
        if not os.path.isabs(path):
            # With a runtime-env working_dir the build lies in the actor's working directory.
            path = os.path.join(os.getcwd(), path)
        found = validate_environment_path(path)
        if found is None:
            raise BuildNotFoundError(
                f"environment copy {self.worker_id}: no build at --env={self.spec.env_path!r} on node "
                f"{socket.gethostname()} ({self.node_ip()}); the build must exist at that path on every node "
                f"that runs copies (or be shipped with --ray-runtime-env '{{\"working_dir\": ...}}')"
            )
        return path

    def start(self) -> Dict[str, Any]:
        """Launch the build; returns what the learner needs to know about this copy."""
        path = self._resolve_build()
        log_folder = self.spec.log_folder
        if log_folder:
            os.makedirs(log_folder, exist_ok=True)
        last_error: Optional[Exception] = None
        for _ in range(PORT_RETRIES):
            port = free_base_port(1)
            try:
                # worker_id picks the Player-<id>.log name and the port offset; base_port makes the port `port`.
                self.env = UnityEnvironment(
                    file_name=path, worker_id=self.worker_id, base_port=port - self.worker_id,
                    seed=self.spec.seed, num_areas=self.spec.num_areas, no_graphics=self.spec.no_graphics,
                    no_graphics_monitor=self.spec.no_graphics_monitor, additional_args=self.spec.env_args,
                    side_channels=[self.params, self.engine, self.stats], log_folder=log_folder,
                    timeout_wait=self.spec.timeout_wait,
                )
                self.port = port
                break
            except UnityWorkerInUseException as err:  # the port was taken between picking and binding
                last_error = err
        else:
            raise UnityEnvironmentException(f"environment copy {self.worker_id}: no free port: {last_error}")
        self.launches += 1
        _apply_parameters(self.env_parameters, self.params)
        return {"node_id": self.node_id(), "node_ip": self.node_ip(), "port": self.port,
                "build_pid": self.build_pid()}

    def restart(self) -> Dict[str, Any]:
        """Relaunch a build that died (the actor itself is healthy)."""
        self.close()
        return self.start()

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            except Exception:  # noqa: BLE001 - closing a dead build must not fail the restart
                pass
            self.env = None

    # -- stepping ------------------------------------------------------------------------------------------
    def _results(self) -> Dict[str, Any]:
        return {name: self.env.get_steps(name) for name in self.env.behavior_specs}

    def reset(self, config: Optional[Dict]) -> Tuple[Dict[str, Any], Dict, Dict[str, Any]]:
        """Returns (results, env stats, behavior specs): a build announces its behaviors with its first output."""
        if config is not None:
            self.set_env_parameters(config)
        self.env.reset()
        return self._results(), self.stats.get_and_reset_stats(), dict(self.env.behavior_specs)

    def behavior_specs(self) -> Dict[str, Any]:
        return dict(self.env.behavior_specs)

    def step(self, actions: Dict[str, ActionTuple]) -> Tuple[Dict[str, Any], Dict, float, TimerNode]:
        """Apply the learner's actions, step, return (results, env stats, seconds the build took, this
        process's timer tree since the last step), as a ``SubprocessEnvManager`` worker returns its timers."""
        start = time.perf_counter()
        for name, action in actions.items():
            self.env.set_actions(name, action)
        self.env.step()
        results = self._results()
        build_seconds = time.perf_counter() - start
        timers = get_timer_root()
        reset_timers()
        return results, self.stats.get_and_reset_stats(), build_seconds, timers

    def set_env_parameters(self, config: Optional[Dict]) -> None:
        self.env_parameters = config
        _apply_parameters(config, self.params)

    # -- inspection (tests, fault handling) ----------------------------------------------------------------
    def build_pid(self) -> Optional[int]:
        process = getattr(self.env, "_process", None) if self.env is not None else None
        return process.pid if process is not None else None

    def actor_pid(self) -> int:
        return os.getpid()

    @staticmethod
    def node_id() -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    @staticmethod
    def node_ip() -> str:
        import ray

        return ray.util.get_node_ip_address()
