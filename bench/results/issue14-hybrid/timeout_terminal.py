"""Issue #14 experiment: fast_sac with a time-out treated as terminal (no bootstrap), as built-in sac's update
treats every episode end; nothing else changes.  The same change as ``timeout_terminal.patch``, made at run
time so the working tree stays as committed.

    OMP_NUM_THREADS=1 .venv/bin/python bench/results/issue14-hybrid/timeout_terminal.py --scene hybrid \
        --trainers fast_sac --seeds 1 --steps 32000
(any ``bench.holding`` arguments).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import mlagents_plugins.offpolicy.rows as R  # noqa: E402
from bench.holding import main  # noqa: E402

_rows = R.trajectory_to_rows


def _timeout_terminal_rows(spec, trajectory, buf):
    rows = _rows(spec, trajectory, buf)
    rows[R.TERMINAL][-1] = bool(trajectory.done_reached)  # interrupted episodes end without bootstrap too
    return rows


R.trajectory_to_rows = _timeout_terminal_rows

if __name__ == "__main__":
    main()
