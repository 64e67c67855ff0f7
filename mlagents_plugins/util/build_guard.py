"""A watcher process that ends a trainer's builds when the trainer dies, for builds the trainer launched itself.

With an environment worker process (ML-Agents' ``SubprocessEnvManager``) the worker launches the build and
``host.worker_lifetime`` makes the worker take it down when the trainer is killed.  When the trainer runs its one
environment in its own process (``host.inprocess_env``) the build is the trainer's child, and a trainer killed with
``kill -9`` runs no code at all: this small process does what the guarded worker did.  It is started once per
environment manager, in its own session (Ctrl+C in the terminal is the trainer's to handle) and reads lines from
its stdin:

* ``<pid> <start token>``: a build to end if the trainer dies (``-`` where ``process_lifetime.start_time`` has no
  token for it);
* ``exit``: the trainer closed its environment itself; exit without touching anything.

It learns of the trainer's death from Linux (``prctl(PR_SET_PDEATHSIG)``: SIGTERM), elsewhere from a thread
polling the trainer, and from the end of its stdin without ``exit`` (the kernel closes the pipe of a dead
process); then it ends every build it was told of that still runs (SIGTERM to the build's process group, SIGKILL
after ``process_lifetime``'s grace) and exits with ``EXIT_TRAINER_GONE``.  Waiting costs no CPU.

Run as ``python -m mlagents_plugins.util.build_guard <trainer pid>``.
"""
import os
import signal
import sys
import threading
from typing import Any, Dict, List, Optional

from mlagents_plugins.util import process_lifetime

#: exit status once the builds were ended because the trainer is gone
EXIT_TRAINER_GONE = 128 + signal.SIGTERM
#: seconds a build gets to quit after SIGTERM before it is killed
BUILD_GRACE_S = 2.0
#: the line that tells the guard to exit without ending anything
EXIT_LINE = "exit"

_builds: Dict[int, Optional[int]] = {}
_ending = threading.Lock()


def _end_builds(reason: str) -> None:
    """End the builds still running (those whose pid still names the process that was registered) and exit."""
    if not _ending.acquire(blocking=False):
        return  # another path (signal, watcher thread, end of input) is already doing it
    alive = [pid for pid, token in list(_builds.items()) if process_lifetime.process_alive(pid, token)]
    process_lifetime.end_processes_and_exit(
        f"mlagents-plugins: build guard (pid {os.getpid()}): {reason}; ending build process(es) {alive}", alive,
        BUILD_GRACE_S, EXIT_TRAINER_GONE)


def parse_line(line: str) -> Optional[List[Any]]:
    """``["exit"]``, ``[pid, token or None]``, or None for a line that is neither (ignored)."""
    parts = line.split()
    if parts == [EXIT_LINE]:
        return [EXIT_LINE]
    if len(parts) == 2 and parts[0].isdigit() and (parts[1].isdigit() or parts[1] == "-"):
        return [int(parts[0]), None if parts[1] == "-" else int(parts[1])]
    return None


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    trainer = int(argv[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    process_lifetime.follow_parent(trainer, _end_builds)
    for raw in sys.stdin.buffer:
        parsed = parse_line(raw.decode("ascii", "replace"))
        if parsed == [EXIT_LINE]:
            return 0
        if parsed is not None:
            _builds[parsed[0]] = parsed[1]
    _end_builds(f"the trainer (pid {trainer}) is gone (its pipe closed)")
    return EXIT_TRAINER_GONE


if __name__ == "__main__":
    sys.exit(main())
