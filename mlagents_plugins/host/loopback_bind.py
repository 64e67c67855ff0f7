"""The trainer's gRPC port listens on loopback only, not on every network interface.

ML-Agents 1.1.0's ``RpcCommunicator.create_server`` binds ``[::]:<port>`` - all interfaces - so that a build
in another container can connect.  The protocol has no authentication: anyone who reaches the machine while
the trainer waits for its build or Editor (and for the whole run after) can connect first as "the
environment", feed it observations and rewards and read the policy's actions.  Unity builds and the Editor
connect to ``localhost``, so the replacement binds ``localhost:<port>`` (127.0.0.1 and ::1, whichever the host
has) and is otherwise ML-Agents' ``create_server`` line for line (same port check, options and error).

Installed for every ``mlagents-learn`` run by the stats-writer hook; it acts in the environment workers, which
inherit it under ``fork`` and install it themselves under ``spawn`` (``worker_lifetime``).  For a remote set-up
(build in another container or machine) ``MLAGENTS_PLUGINS_BIND_ALL=1`` keeps ML-Agents' all-interfaces
binding, with a warning in the log.
"""
import os
import sys

from mlagents_envs.logging_util import get_logger

from mlagents_plugins.host import patches

#: ML-Agents' own ``RpcCommunicator.create_server`` once replaced (kept so a test can check the guards)
ORIGINAL = None
#: the host part of the address the trainer's gRPC server binds
BIND_HOST = "localhost"
OPT_OUT = "MLAGENTS_PLUGINS_BIND_ALL"

logger = get_logger(__name__)  # ML-Agents' console format, so the warning shows in mlagents-learn's log
_warned = False


def create_loopback_server(self) -> None:
    """``RpcCommunicator.create_server`` of ML-Agents 1.1.0, bound to loopback instead of ``[::]``."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc
    from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
        add_UnityToExternalProtoServicer_to_server,
    )
    from mlagents_envs.exception import UnityWorkerInUseException
    from mlagents_envs.rpc_communicator import UnityToExternalServicerImplementation

    self.check_port(self.port)
    try:
        self.server = grpc.server(thread_pool=ThreadPoolExecutor(max_workers=10), options=(("grpc.so_reuseport", 1),))
        self.unity_to_external = UnityToExternalServicerImplementation()
        add_UnityToExternalProtoServicer_to_server(self.unity_to_external, self.server)
        if not self.server.add_insecure_port(f"{BIND_HOST}:{self.port}"):  # older grpc returns 0 on failure
            raise RuntimeError(f"could not bind {BIND_HOST}:{self.port}")
        self.server.start()
        self.is_open = True
    except Exception:
        raise UnityWorkerInUseException(self.worker_id)


def _warn_bind_all() -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            f"{OPT_OUT}=1: the trainer's gRPC port listens on every network interface, without authentication; "
            "anyone who can reach this machine can connect as the environment. Unset it unless the build runs "
            "on another host or container."
        )


def install_loopback_bind() -> bool:
    """Replace ``RpcCommunicator.create_server`` (once); returns whether the patch is active."""
    try:
        from mlagents_envs.rpc_communicator import RpcCommunicator
    except ImportError:
        return False
    if os.environ.get(OPT_OUT) == "1":
        _warn_bind_all()
    return patches.replace_attribute("loopback_bind", RpcCommunicator, "create_server", create_loopback_server,
                                     sys.modules[__name__])
