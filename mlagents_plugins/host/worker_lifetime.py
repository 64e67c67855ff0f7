"""Environment workers, and the builds they launched, end when ``mlagents-learn`` dies, however it dies.

ML-Agents 1.1.0's ``SubprocessEnvManager`` runs each environment in a ``multiprocessing.Process`` whose target
is the module function ``subprocess_env_manager.worker``.  If the trainer is killed (``kill -9``, the OOM
killer, a closed laptop) the worker is not told: under ``fork`` it inherited the trainer's end of its own
command pipe, so its ``recv`` never sees EOF.  It keeps its gRPC port and its build, and the next
``mlagents-learn ... --resume`` stops with ``UnityWorkerInUseException`` until the user kills both by hand.

``guarded_worker`` replaces that target.  Before running ML-Agents' own worker it

* on Linux asks for ``SIGTERM`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``), elsewhere (or if prctl
  fails) starts a thread polling the parent;
* handles ``SIGTERM`` - the parent's death, or ``SubprocessEnvManager.close`` terminating a stuck worker - by
  taking its children (the build, with its process group) down and exiting at once; upstream a terminated
  worker left its build running.

``create_worker`` looks ``worker`` up in its module at each call, so restarted workers get it too.  Under the
``spawn``/``forkserver`` start methods the child imports ML-Agents afresh, without this package's patches:
``guarded_worker`` (pickled by reference to this module) then installs the ones that act inside the worker
(``loopback_bind``, ``connect_errors``, ``rpc_channel``) before anything binds a port.  ``MLAGENTS_PLUGINS_ORPHAN_WORKERS=1`` keeps ML-Agents'
original worker (``patches`` lists it).
"""
import logging
import multiprocessing
import os
import signal
import sys
from typing import Any

from mlagents_plugins.host import patches
from mlagents_plugins.util import process_lifetime

#: ML-Agents' own ``subprocess_env_manager.worker`` once replaced (kept so a test can check the guards)
ORIGINAL = None
#: exit status of a worker that stopped because its trainer died or it was terminated
EXIT_PARENT_GONE = 128 + signal.SIGTERM
#: seconds a build gets to quit after SIGTERM before it is killed
BUILD_GRACE_S = 2.0

logger = logging.getLogger(__name__)


def _stop_worker(reason: str) -> None:
    """Take this worker's children (its build) down and exit at once (``process_lifetime.end_processes_and_exit``)."""
    children = process_lifetime.child_pids()
    process_lifetime.end_processes_and_exit(
        f"mlagents-plugins: environment worker (pid {os.getpid()}) stopping: {reason}; ending its build process(es) "
        f"{children}", children, BUILD_GRACE_S, EXIT_PARENT_GONE)


def bind_to_parent(parent: int, use_death_signal: bool = True) -> str:
    """Make this process stop (taking its children along) when ``parent`` dies; returns the mechanism used,
    ``"pdeathsig"`` or ``"watchdog"``."""
    return process_lifetime.follow_parent(parent, _stop_worker, use_death_signal)


def _parent_pid() -> int:
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getppid()


def _upstream_worker():
    if ORIGINAL is not None:
        return ORIGINAL
    from mlagents.trainers import subprocess_env_manager

    return subprocess_env_manager.worker


def guarded_worker(*args: Any, **kwargs: Any) -> None:
    """``subprocess_env_manager.worker`` of ML-Agents 1.1.0, bound to the life of the trainer process."""
    if ORIGINAL is None:
        # Imported afresh (spawn/forkserver): the trainer's patches are not in this process yet.
        from mlagents_plugins.host import connect_errors, loopback_bind, rpc_channel

        loopback_bind.install_loopback_bind()
        connect_errors.install_connect_errors()
        rpc_channel.install_rpc_channel()
        install_worker_lifetime()
    bind_to_parent(_parent_pid())
    _upstream_worker()(*args, **kwargs)


def install_worker_lifetime() -> bool:
    """Replace ``subprocess_env_manager.worker`` (once); returns whether the patch is active."""
    try:
        from mlagents.trainers import subprocess_env_manager
    except ImportError:
        return False
    return patches.replace_attribute("worker_lifetime", subprocess_env_manager, "worker", guarded_worker, sys.modules[__name__])
