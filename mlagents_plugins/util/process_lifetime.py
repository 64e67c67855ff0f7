"""Tie a process's life to the process that started it: what environment workers and stand-in builds use so
that nothing of a training run outlives its trainer.

ML-Agents starts one environment worker per ``--num-envs`` copy (a ``multiprocessing.Process``) and each
worker launches its build in a new session.  When ``mlagents-learn`` is killed (``kill -9``, the OOM killer)
nobody tells the workers: a forked worker holds both ends of its own command pipe, so it never sees EOF, keeps
its gRPC port and keeps its build waiting.  The helpers here let a process

* learn that its parent died: on Linux the kernel sends a chosen signal (``prctl(PR_SET_PDEATHSIG)``), elsewhere
  a daemon thread polls the parent (``watch_processes``);
* take its own children (the builds) down with it (``child_pids`` + ``terminate_processes``).

Children are found through ``/proc`` on Linux and ``pgrep -P`` on other POSIX systems; on Windows ``child_pids``
finds none (a Windows worker still exits with its trainer, its build is left to its own gRPC timeout).
"""
import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterable, List, NoReturn, Optional, Sequence, Tuple

logger = logging.getLogger(__name__)

#: set in ``mlagents-learn``'s environment at start-up (``host.hook``): the pid of the trainer process, so a
#: stand-in build launched by any of its workers can tell when the trainer itself is gone
TRAINER_PID_ENV = "MLAGENTS_PLUGINS_TRAINER_PID"
#: seconds between two checks of a watched process
POLL_INTERVAL_S = 0.5
_PR_SET_PDEATHSIG = 1
_PROC = "/proc"


def proc_stat_fields(pid: int) -> Optional[List[str]]:
    """Fields of ``/proc/<pid>/stat`` after the command name (state first: field 3 of proc(5) is index 0), or None
    if there is no such process.  The command name may hold spaces and parentheses, so the split starts after the
    last ')'."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def start_time(pid: int) -> Optional[int]:
    """A token that changes when ``pid`` is reused by another process (Linux: start time in ticks), else None."""
    fields = proc_stat_fields(pid) if os.path.isdir(_PROC) else None
    return int(fields[19]) if fields and len(fields) > 19 else None


def process_alive(pid: int, started: Optional[int] = None) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone); with ``started`` (from ``start_time``) also that it is
    still the same process, not a later one that got the same pid."""
    if pid <= 0:
        return False
    if os.path.isdir(_PROC):
        fields = proc_stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
            return False
        return started is None or len(fields) <= 19 or int(fields[19]) == started
    if sys.platform == "win32":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _windows_process_alive(pid: int) -> bool:
    synchronize, wait_timeout = 0x00100000, 0x00000102
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(synchronize, False, pid)
    if not handle:
        return False
    try:
        return kernel32.WaitForSingleObject(handle, 0) == wait_timeout
    finally:
        kernel32.CloseHandle(handle)


def child_pids(pid: Optional[int] = None) -> List[int]:
    """Living direct children of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    if os.path.isdir(_PROC):
        found = []
        for name in os.listdir(_PROC):
            if name.isdigit():
                fields = proc_stat_fields(int(name))
                if fields and len(fields) > 1 and int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                    found.append(int(name))
        return sorted(found)
    if sys.platform == "win32":
        return []
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(int(p) for p in out.stdout.split() if p.isdigit())


def _signal_process_or_group(pid: int, sig: int) -> None:
    try:
        # ML-Agents starts builds in their own session: signal the whole group (a build's helpers too).
        if hasattr(os, "killpg") and os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pid: int) -> bool:
    """Reap ``pid`` if it is our exited child; True when it is gone."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child, or already reaped
        return not process_alive(pid)
    return done == pid


def terminate_processes(pids: Iterable[int], grace_s: float = 2.0) -> List[int]:
    """SIGTERM each process (its group, if it leads one), SIGKILL what still runs after ``grace_s``; returns
    the pids that had to be killed."""
    pids = [p for p in pids if p > 0]
    if sys.platform == "win32":
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)  # TerminateProcess on Windows
            except OSError:
                pass
        return []
    for pid in pids:
        _signal_process_or_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if not _reap(p)]
        if left:
            time.sleep(0.05)
    for pid in left:
        _signal_process_or_group(pid, signal.SIGKILL)
        _reap(pid)
    return left


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for a child that is stopped with Ctrl+C (SIGINT to its process group): SIGINT handled by
    default, as in a terminal's foreground job, whatever the caller inherited.  A process started in the background of
    a non-interactive shell (a CI job, ``nohup ... &``) has SIGINT ignored; its children would inherit that, Python
    would then install no KeyboardInterrupt handler, and the Ctrl+C would not stop them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def set_parent_death_signal(sig: int) -> bool:
    """Ask Linux to send ``sig`` to this process when the thread that started it exits; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        rc = libc.prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(int(sig)), ctypes.c_ulong(0),
                        ctypes.c_ulong(0), ctypes.c_ulong(0))
    except (OSError, AttributeError):
        return False
    return rc == 0


def watch_processes(
    watched: Sequence[Tuple[int, Optional[int]]],
    on_gone: Callable[[int], None],
    parent: Optional[int] = None,
    interval_s: float = POLL_INTERVAL_S,
) -> threading.Thread:
    """Start a daemon thread that calls ``on_gone(pid)`` once, when any ``(pid, start_time)`` in ``watched`` has
    ended or when this process's parent is no longer ``parent`` (POSIX reparents the orphans of a dead parent)."""

    def run() -> None:
        while True:
            for pid, started in watched:
                if not process_alive(pid, started):
                    on_gone(pid)
                    return
            if parent is not None and sys.platform != "win32" and os.getppid() != parent:
                on_gone(parent)
                return
            time.sleep(interval_s)

    thread = threading.Thread(target=run, name="mlagents-plugins-parent-watch", daemon=True)
    thread.start()
    return thread


def end_processes_and_exit(message: str, pids: List[int], grace_s: float, status: int) -> NoReturn:
    """Say ``message`` on stderr, end ``pids`` (SIGTERM to each process or group, SIGKILL after ``grace_s``) and exit
    with ``status`` without running any exit handler: whoever would read this process's pipes or queues is gone,
    and a queue's feeder thread could block a normal exit forever."""
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    terminate_processes(pids, grace_s=grace_s)
    os._exit(status)


def follow_parent(parent: int, stop: Callable[[str], Any], use_death_signal: bool = True) -> str:
    """Call ``stop(reason)`` (which ends this process) when ``parent`` dies or this process gets SIGTERM; returns the
    mechanism used: ``"pdeathsig"`` (Linux tells us) or ``"watchdog"`` (a thread polls the parent)."""

    def on_sigterm(signum: int, frame: Any) -> None:
        gone = not process_alive(parent) or os.getppid() != parent
        stop(f"the trainer (pid {parent}) is gone" if gone else "terminated (SIGTERM)")

    signal.signal(signal.SIGTERM, on_sigterm)
    if use_death_signal and set_parent_death_signal(signal.SIGTERM):
        if os.getppid() != parent:  # the parent died before the kernel knew to tell us
            stop(f"the trainer (pid {parent}) is gone")
        return "pdeathsig"
    # Watch the pid itself too: Windows does not reparent orphans, so there only the pid tells.
    watch_processes([(parent, start_time(parent))], lambda pid: stop(f"the trainer (pid {pid}) is gone"),
                    parent=parent)
    if not process_alive(parent):
        stop(f"the trainer (pid {parent}) is gone")
    return "watchdog"


def trainer_from_environment() -> Optional[Tuple[int, Optional[int]]]:
    """The trainer named by ``TRAINER_PID_ENV`` as ``(pid, start_time)`` (None if the variable is unset)."""
    text = os.environ.get(TRAINER_PID_ENV, "")
    if not text.isdigit():
        return None
    pid = int(text)
    return pid, start_time(pid)


def mark_trainer_process() -> None:
    """Name this process as the trainer in the environment its workers and their builds inherit."""
    os.environ[TRAINER_PID_ENV] = str(os.getpid())
