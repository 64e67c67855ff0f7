"""Console progress of the bench invocations (``learn``, ``defaults``, ``gym``): elapsed time and the ETA of what
is left, and a ticker that reports the runs in flight while they go.

``python -m bench learn`` prints one line per finished run (``[k/n] ... | elapsed m:ss, ETA ~m:ss``); ``python -m
bench gym``, whose runs take half an hour each, also prints a line whenever a run in flight reports a new step
(``Ticker``), with the ETA from the planned env steps done so far (``eta_seconds`` over steps instead of runs).
"""
import sys
import threading
from typing import Callable, Iterable, Optional, TextIO


def clock(seconds: float) -> str:
    """``m:ss`` (minutes may exceed 59: ``125:03``)."""
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def eta_seconds(elapsed: float, done: float, total: float) -> Optional[float]:
    """Seconds left when ``done`` of ``total`` units (runs, or env steps) took ``elapsed`` seconds at a constant
    rate; None before anything is done."""
    if done <= 0:
        return None
    return elapsed / done * max(0.0, total - done)


def timing(elapsed: float, done: float, total: float) -> str:
    """The tail of a progress line: ``  | elapsed m:ss, ETA ~m:ss`` (``ETA ?`` before anything is done)."""
    left = eta_seconds(elapsed, done, total)
    return f"  | elapsed {clock(elapsed)}, " + ("ETA ?" if left is None else f"ETA ~{clock(left)}")


class Ticker:
    """Every ``interval`` seconds on a daemon thread, print the lines ``poll()`` returns (nothing when it returns
    none: ``poll`` decides what is new).  A context manager: the thread stops (and is joined) on exit."""

    def __init__(self, poll: Callable[[], Iterable[str]], interval: float, out: Optional[TextIO] = None):
        self.poll, self.interval, self.out = poll, float(interval), out
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-progress", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                lines = list(self.poll())
            except Exception as err:  # noqa: BLE001 - progress must never stop an invocation
                lines = [f"[bench] progress unavailable: {type(err).__name__}: {err}"]
            for line in lines:
                print(line, file=self.out or sys.stdout, flush=True)

    def __enter__(self) -> "Ticker":
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
