"""``mlagents-plugins-learn``: ``mlagents-learn`` plus ``--ray-*`` options that put environment copies on Ray.

Without ``--ray-address`` this is exactly ``mlagents-learn`` (same parser, same ``run_cli``).  With it, Ray is
connected first and, for the duration of this one call only, ``mlagents.trainers.learn`` builds a
``RayEnvManager`` where it would build a ``SubprocessEnvManager``; the arguments ``learn.run_training`` gives
``create_environment_factory`` (build path, seed, areas, timeouts, ``--env-args``, log folder) are captured
and shipped to every copy, so each copy launches the build on its own node with the usual options.

Ray's own address handling turns ``127.0.0.1`` into the machine's network address; when the address given
(or found by ``auto``) is a loopback one, this script keeps the whole session on loopback instead, so a
cluster started with ``ray start --head --node-ip-address=127.0.0.1`` is reached where it listens.
"""
import argparse
import contextlib
import json
import math
import os
import socket
import sys
from typing import Any, Dict, Iterator, List, Optional, Tuple

from mlagents_plugins.util.cli_args import number

LOOPBACK = "127.0.0.1"
AUTH_MODE_ENV_VAR = "RAY_AUTH_MODE"
CONNECT_CHECK_TIMEOUT_S = 5.0


class RayOptionsError(SystemExit):
    """A bad ``--ray-*`` option or an unusable cluster; exits with a message saying what to do."""

    def __init__(self, message: str):
        super().__init__(f"mlagents-plugins-learn: error: {message}")


def _json_object(name: str):
    def parse(text: str) -> Dict[str, Any]:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise argparse.ArgumentTypeError(f"{name} must be a JSON object, got {text!r} ({err})")
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError(f"{name} must be a JSON object, got {text!r}")
        return value

    return parse


def build_ray_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mlagents-plugins-learn", add_help=False, allow_abbrev=False)
    g = p.add_argument_group("Ray (environment copies on a Ray cluster; all other options are mlagents-learn's)")
    g.add_argument("--ray-address", default=None,
                   help="'local' starts a private Ray instance on this machine (loopback only); 'auto' joins the "
                        "cluster started with `ray start`; HOST:PORT names a cluster's head. Without this option "
                        "the run is a plain mlagents-learn run.")
    g.add_argument("--ray-cpus-per-env", type=number("--ray-cpus-per-env", low=0), default=1.0,
                   help="CPUs Ray reserves for each environment copy (default 1)")
    g.add_argument("--ray-gpus-per-env", type=number("--ray-gpus-per-env", low=0), default=0.0,
                   help="GPUs Ray reserves for each environment copy, for builds that render (default 0)")
    g.add_argument("--ray-env-resources", type=_json_object("--ray-env-resources"), default={},
                   help='custom Ray resources each copy needs, as JSON, e.g. \'{"unity": 1}\' to keep copies on '
                        "nodes started with --resources='{\"unity\": 8}'")
    g.add_argument("--ray-runtime-env", type=_json_object("--ray-runtime-env"), default=None,
                   help="Ray runtime environment for the copies, as JSON; '{\"working_dir\": \"path/to/BuildDir\"}' "
                        "ships the build to every node (then give --env relative to that directory). Without it "
                        "the --env path must exist on every node.")
    g.add_argument("--ray-start-timeout", type=number("--ray-start-timeout", low=0), default=300.0,
                   help="seconds a copy may take to be placed and to launch its build (default 300)")
    return p


def split_argv(argv: List[str]) -> Tuple[argparse.Namespace, List[str]]:
    """Take the ``--ray-*`` options out of ``argv``; everything after ``--env-args`` belongs to the build."""
    if "--env-args" in argv:
        cut = argv.index("--env-args")
        head, tail = argv[:cut], argv[cut:]
    else:
        head, tail = argv, []
    ray_args, rest = build_ray_parser().parse_known_args(head)
    return ray_args, rest + tail


def _host_port(address: str) -> Tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RayOptionsError(
            f"--ray-address={address!r} is not 'local', 'auto' or HOST:PORT (e.g. 10.0.0.5:6379)"
        )
    return host, int(port)


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def _import_ray():
    try:
        import ray
    except ImportError:
        raise RayOptionsError(
            "--ray-address needs Ray, which is not installed: pip install \"mlagents-plugins[ray]\" "
            "(plain ray core; ray[default] would pull protobuf >= 5, which mlagents 1.1.0 cannot use)"
        ) from None
    return ray


def _use_token_if_available() -> None:
    """What ``ray.init(address="auto")`` does itself: a cluster found on this machine by ``ray start`` (which
    turns token authentication on by default since Ray 2.5x) is joined with the token saved beside it, unless
    ``RAY_AUTH_MODE`` says otherwise.  Ray versions without token authentication have nothing to do."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _auth_hint() -> str:
    if os.environ.get(AUTH_MODE_ENV_VAR, "").lower() == "token":
        return ""
    return (f"; if the cluster uses token authentication (`ray start` turns it on by default), set "
            f"{AUTH_MODE_ENV_VAR}=token with the cluster's token in ~/.ray/auth_token or RAY_AUTH_TOKEN")


def _init(ray, where: str, **kwargs) -> None:
    """``ray.init`` with its failures turned into errors that say what to do."""
    try:
        ray.init(log_to_driver=False, configure_logging=False, **kwargs)
    except (ConnectionError, RuntimeError, ValueError, OSError) as err:
        if "runtime_env" in kwargs and not isinstance(err, ConnectionError):
            raise RayOptionsError(
                f"--ray-runtime-env={json.dumps(kwargs['runtime_env'])} was refused by Ray: {err}") from None
        raise RayOptionsError(f"could not join the Ray cluster at {where}: {err}{_auth_hint()}") from None


def check_runtime_env(runtime_env: Optional[Dict[str, Any]]) -> None:
    """A local ``working_dir`` must be a directory here: Ray uploads it from this machine."""
    if not runtime_env or "working_dir" not in runtime_env:
        return
    working_dir = runtime_env["working_dir"]
    if not isinstance(working_dir, str):
        raise RayOptionsError(f"--ray-runtime-env working_dir must be a string, got {working_dir!r}")
    if "://" not in working_dir and not os.path.isdir(working_dir):
        raise RayOptionsError(
            f"--ray-runtime-env working_dir={working_dir!r} is not a directory on this machine; give the folder "
            f"holding the build (it is uploaded to every node) and --env relative to it, or a remote URI")


def connect(address: str, num_envs: int, cpus_per_env: float,
            runtime_env: Optional[Dict[str, Any]] = None) -> None:
    """ray.init for ``local`` / ``auto`` / HOST:PORT, with errors that say what to do.

    ``runtime_env`` is the job's runtime environment, so every copy gets it; Ray uploads a local
    ``working_dir`` only at this level (an actor's own runtime environment may name only URIs)."""
    ray = _import_ray()
    from ray._private import ray_constants, services

    check_runtime_env(runtime_env)
    job: Dict[str, Any] = {} if runtime_env is None else {"runtime_env": runtime_env}
    if address == "local":
        # A private instance: loopback only, no dashboard, and enough logical CPUs for every copy.
        cpus = max(os.cpu_count() or 1, math.ceil(num_envs * cpus_per_env))
        _init(ray, "local", _node_ip_address=LOOPBACK, include_dashboard=False, num_cpus=cpus, **job)
        return
    if address == "auto":
        try:
            found = services.get_ray_address_from_environment("auto", None)
        except ConnectionError as err:  # e.g. several clusters running on this machine
            raise RayOptionsError(f"--ray-address=auto: {err}; give the head's HOST:PORT instead") from None
        if not found or found == "auto":
            raise RayOptionsError(
                "--ray-address=auto found no running Ray cluster on this machine: start one with "
                "`ray start --head` (add --node-ip-address=127.0.0.1 for a single machine), give its HOST:PORT, "
                "or use --ray-address=local"
            )
        address = found
        _use_token_if_available()
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_CHECK_TIMEOUT_S):
            pass
    except OSError as err:
        raise RayOptionsError(
            f"cannot reach a Ray cluster at {host}:{port} ({err}); check the head's address "
            f"(`ray status` on the head prints it) or start one with `ray start --head`"
        ) from None
    kwargs: Dict[str, Any] = {}
    if _is_loopback(host):
        # Keep Ray from swapping the loopback address for the machine's network address.
        ray_constants.ENABLE_RAY_CLUSTER = False
        kwargs["_node_ip_address"] = LOOPBACK
    _init(ray, f"{host}:{port}", address=f"{host}:{port}", **kwargs, **job)


@contextlib.contextmanager
def ray_env_manager_in_learn(ray_options) -> Iterator[None]:
    """Within this block ``learn.run_training`` builds a ``RayEnvManager`` instead of a ``SubprocessEnvManager``."""
    from mlagents.trainers import learn

    from mlagents_plugins.ray_envs.actor import LaunchSpec
    from mlagents_plugins.ray_envs.manager import RayEnvManager

    captured: Dict[str, Any] = {}
    original_factory, original_manager = learn.create_environment_factory, learn.SubprocessEnvManager

    def capture_factory(env_path, no_graphics, no_graphics_monitor, seed, num_areas, timeout_wait, start_port,
                        env_args, log_folder):
        captured.update(env_path=env_path, no_graphics=no_graphics, no_graphics_monitor=no_graphics_monitor,
                        seed=seed, num_areas=num_areas, timeout_wait=timeout_wait, env_args=env_args,
                        log_folder=log_folder)
        return original_factory(env_path, no_graphics, no_graphics_monitor, seed, num_areas, timeout_wait,
                                start_port, env_args, log_folder)

    def make_manager(env_factory, run_options, n_env):
        if not captured.get("env_path"):
            raise RayOptionsError(
                "--ray-address needs --env=path/to/Build: copies launch the build on their nodes "
                "(editor mode, without --env, cannot run on Ray)"
            )
        e = run_options.engine_settings
        engine = dict(width=e.width, height=e.height, quality_level=e.quality_level, time_scale=e.time_scale,
                      target_frame_rate=e.target_frame_rate, capture_frame_rate=e.capture_frame_rate)
        spec = LaunchSpec(engine=engine, **captured)
        return RayEnvManager(spec, run_options, n_env, ray_options)

    learn.create_environment_factory, learn.SubprocessEnvManager = capture_factory, make_manager
    try:
        yield
    finally:
        learn.create_environment_factory, learn.SubprocessEnvManager = original_factory, original_manager


def main(argv: Optional[List[str]] = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours = argv[: argv.index("--env-args")] if "--env-args" in argv else argv
    if "-h" in ours or "--help" in ours:
        build_ray_parser().print_help()
        print("\nmlagents-learn options (all accepted unchanged):\n")
    ray_args, rest = split_argv(argv)

    from mlagents.trainers import learn

    options = learn.parse_command_line(rest)
    if ray_args.ray_address is None:
        learn.run_cli(options)
        return

    if options.env_settings.env_path is None:
        raise RayOptionsError("--ray-address needs --env=path/to/Build (copies launch the build on their nodes)")
    connect(ray_args.ray_address, options.env_settings.num_envs, ray_args.ray_cpus_per_env,
            ray_args.ray_runtime_env)

    from mlagents_plugins.ray_envs.manager import RayOptions

    ray_options = RayOptions(
        cpus_per_env=ray_args.ray_cpus_per_env, gpus_per_env=ray_args.ray_gpus_per_env,
        resources={k: float(v) for k, v in ray_args.ray_env_resources.items()},
        start_timeout_s=ray_args.ray_start_timeout,
    )
    ray = _import_ray()
    try:
        with ray_env_manager_in_learn(ray_options):
            learn.run_cli(options)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
