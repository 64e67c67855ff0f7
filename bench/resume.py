"""Resumable invocations: which planned runs a results folder still lacks, for any kind of bench invocation.

An invocation folder ``DIR`` holds

* ``runs.jsonl``: one complete JSON record per finished run, appended (one ``write`` + ``fsync`` per record) and
  never rewritten.  A record's *key* is the tuple of its values for the invocation's key fields (``learn`` and
  ``defaults``: ``mode, trainer, scene, seed``; a command keyed by (trainer, task, seed) names those fields).
* ``journal.jsonl``: one ``{"event": "started", "key": [...]}`` line when a run starts (written by the process
  that makes the run).  It only explains things: a started key without a record in ``runs.jsonl`` was cut off.

The API, for any command:

* ``progress(DIR, planned_keys, fields)`` -> ``Progress``: the planned keys already done (a complete record), the
  ones still to do (in plan order), which of those were started and cut off, records of keys not in the plan.
* ``repair_tail(DIR)``: a last line of ``runs.jsonl`` cut short (the bench was killed while writing it) is moved
  to ``runs.cut.jsonl`` so the next append starts on a line of its own; returns the text moved (or None).
* ``append_record(DIR, record)``, ``mark_started(DIR, key)``.
* ``Lock(DIR)``: one writer per folder (a second invocation on the same folder is refused, not interleaved).
* Pinning to a commit: ``check_pinned(environment, DIR, repo)`` refuses (``Refused``, naming both commits) a
  continuation from a checkout on another commit or with uncommitted changes, given the ``environment`` an
  invocation recorded at its start (``commit``, ``commit_full``, ``machine_kind``); on another machine kind it
  returns a note and the continuation goes on (the report keeps that kind's seconds apart);
  ``check_worktree(PATH, commit)`` checks a ``--worktree`` is a clean checkout of that commit and
  ``run_in_checkout(PATH, argv, repo)`` runs ``python -m bench <argv>`` there (PATH first on ``PYTHONPATH``).

A run is counted once: ``progress`` only treats keys with a complete record as done, a cut-off run (a torn last
line, or a ``started`` marker without a record) is planned again, and ``progress`` refuses a folder whose records
hold one key twice.
"""
import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bench.invocation import git_state, machine_kind

RUNS_FILE = "runs.jsonl"
JOURNAL_FILE = "journal.jsonl"
CUT_FILE = "runs.cut.jsonl"
LOCK_FILE = ".bench.lock"

Key = Tuple[Any, ...]


def key_of(record: Dict[str, Any], fields: Sequence[str]) -> Key:
    """The record's key: its values of ``fields`` in order (KeyError naming the field when one is missing)."""
    missing = [f for f in fields if f not in record]
    if missing:
        raise KeyError(f"run record lacks the key field(s) {missing}; key fields are {list(fields)}")
    return tuple(record[f] for f in fields)


def _durable_append(path: str, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def append_record(out: str, record: Dict[str, Any]) -> None:
    """Add one complete record as one line of ``<out>/runs.jsonl`` (flushed and fsynced)."""
    _durable_append(os.path.join(out, RUNS_FILE), json.dumps(record, sort_keys=True) + "\n")


def mark_started(out: str, key: Key, **extra: Any) -> None:
    """Journal that the run ``key`` starts (the process making it writes this, so a cut-off run is named later)."""
    line = dict(extra, event="started", key=list(key))
    _durable_append(os.path.join(out, JOURNAL_FILE), json.dumps(line, sort_keys=True) + "\n")


def read_records(out: str) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """(complete records of ``<out>/runs.jsonl``, the torn last line or None).  A bad line that is not the last
    is an error naming the file and line (something other than a killed bench wrote it)."""
    path = os.path.join(out, RUNS_FILE)
    if not os.path.isfile(path):
        return [], None
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    torn = None
    if lines and lines[-1] != "":  # no newline at the end: the last write was cut short
        torn = lines.pop()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as err:
            raise ValueError(f"{path} line {number} is not a JSON run record: {err}") from err
    if torn is not None:
        try:  # a whole record whose newline was lost is still a record
            records.append(json.loads(torn))
            torn = None
        except ValueError:
            pass
    return records, torn


def repair_tail(out: str) -> Optional[str]:
    """Move a torn last line of ``<out>/runs.jsonl`` to ``runs.cut.jsonl``; the text moved, or None if whole."""
    path = os.path.join(out, RUNS_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    if not data or data.endswith(b"\n"):
        return None
    cut = data.rfind(b"\n") + 1
    tail = data[cut:].decode("utf-8", "replace")
    try:
        json.loads(tail)
    except ValueError:
        _durable_append(os.path.join(out, CUT_FILE), tail + "\n")
        with open(path, "r+b") as f:
            f.truncate(cut)
            os.fsync(f.fileno())
        return tail
    _durable_append(path, "\n")  # a whole record that only lost its newline stays
    return None


def started_keys(out: str) -> List[Key]:
    """Keys journalled as started, in order (a torn last journal line is ignored)."""
    path = os.path.join(out, JOURNAL_FILE)
    if not os.path.isfile(path):
        return []
    keys = []
    with open(path) as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == "started":
                keys.append(tuple(entry["key"]))
    return keys


@dataclass
class Progress:
    """Where an invocation folder stands against its plan."""

    done: List[Key] = field(default_factory=list)  # planned keys with a complete record
    todo: List[Key] = field(default_factory=list)  # planned keys without one, in plan order
    cut_off: List[Key] = field(default_factory=list)  # keys of ``todo`` that were started before
    unplanned: List[Key] = field(default_factory=list)  # records whose key is not planned
    torn_tail: Optional[str] = None  # a torn last line of runs.jsonl (not a record)


def _normal(key: Key) -> Key:
    return tuple(json.loads(json.dumps(list(key))))  # the form a key has after a JSON round trip


def progress(out: str, planned: Sequence[Key], fields: Sequence[str]) -> Progress:
    """Which of the ``planned`` keys ``out`` already holds a complete record of, and which are still to run.

    ValueError when a key is planned twice or recorded twice (a run counted twice), naming the key."""
    planned = [_normal(k) for k in planned]
    if len(set(planned)) != len(planned):
        twice = sorted({k for k in planned if planned.count(k) > 1}, key=str)
        raise ValueError(f"the plan holds the run(s) {twice} twice; every planned run needs its own key")
    records, torn = read_records(out)
    seen: Dict[Key, int] = {}
    for r in records:
        k = _normal(key_of(r, fields))
        seen[k] = seen.get(k, 0) + 1
    twice = sorted((k for k, n in seen.items() if n > 1), key=str)
    if twice:
        raise ValueError(f"{os.path.join(out, RUNS_FILE)} holds the run(s) {twice} more than once; a run must be "
                         "recorded once (was the folder written by two invocations at the same time?)")
    planned_set = set(planned)
    started = {_normal(k) for k in started_keys(out)}
    result = Progress(torn_tail=torn)
    for k in planned:
        if k in seen:
            result.done.append(k)
        else:
            result.todo.append(k)
            if k in started:
                result.cut_off.append(k)
    result.unplanned = [k for k in seen if k not in planned_set]
    return result


class Busy(RuntimeError):
    """Another process holds the folder's lock."""


class Lock:
    """An exclusive lock on an invocation folder for the life of the ``with`` block (``flock``: released when the
    process dies, so a killed invocation never leaves a stale lock).  ``Busy`` when another process holds it."""

    def __init__(self, out: str):
        self.path = os.path.join(out, LOCK_FILE)
        self._file = None

    def __enter__(self) -> "Lock":
        self._file = open(self.path, "a+")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            self._file = None
            raise Busy(f"{os.path.dirname(self.path)} is in use by another bench invocation (lock "
                               f"{self.path}); wait for it to end")
        return self

    def __exit__(self, *exc) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class Refused(Exception):
    """An invocation that must not start; the message says why and what to do."""


def check_pinned(env: Dict[str, Any], out: str, repo: str) -> Optional[str]:
    """Refuse (``Refused``) continuing the invocation whose start recorded ``env`` from the checkout ``repo``
    unless ``repo`` is a clean checkout of its starting commit.  On another kind of machine it goes on, with the
    note returned (None on the same kind): its runs are stamped with this kind, and the report takes their steps
    and returns but the seconds of one kind only (``bench.metrics.timing_kind``)."""
    start = env.get("commit_full")
    if not start:
        raise Refused(f"{out}/invocation.json records no full commit (an invocation made before --continue "
                      "existed, or outside a git checkout); it cannot be continued on its commit")
    if str(env.get("commit", "")).endswith("+changes"):
        raise Refused(f"the invocation in {out} started on commit {start[:12]} with uncommitted changes; those "
                      "changes are not in any commit, so it cannot be continued on its code (start a new one)")
    here, dirty = git_state(repo)
    if here != start or dirty:
        now = "unknown" if here is None else here[:12] + ("+changes" if dirty else "")
        raise Refused(f"the invocation in {out} started on commit {start[:12]}; this checkout ({repo}) is on "
                      f"commit {now}. Continue it on its own commit: git worktree add --detach /tmp/bench-"
                      f"{start[:12]} {start[:12]} and add --worktree /tmp/bench-{start[:12]}")
    kind_then, kind_now = env.get("machine_kind"), machine_kind()
    if kind_then != kind_now:
        return (f"the invocation in {out} started on a {kind_then!r} machine; this one is {kind_now!r}: the runs "
                "made here count in the report's steps and returns, its seconds and speeds come from the runs on "
                "the starting kind")
    return None


def check_worktree(path: str, start: Optional[str]) -> str:
    """``path`` made absolute when it is a clean checkout of commit ``start`` holding ``bench/``; else ``Refused``."""
    path = os.path.abspath(path)
    commit, dirty = git_state(path)
    if commit is None or commit != start or dirty or not os.path.isdir(os.path.join(path, "bench")):
        state = "not a git checkout with bench/" if commit is None else commit[:12] + ("+changes" if dirty else "")
        raise Refused(f"--worktree {path} must be a clean checkout of the invocation's starting commit "
                      f"{str(start)[:12]}; it is {state}")
    return path


def run_in_checkout(path: str, argv: Sequence[str], repo: str) -> int:
    """Run ``python -m bench <argv>`` with ``path`` as working folder and first on ``PYTHONPATH`` (``repo``, this
    checkout, taken off it), so the bench and the trainers it runs are ``path``'s code; its exit code."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.realpath(p) != os.path.realpath(repo)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([path] + paths))
    return subprocess.run([sys.executable, "-m", "bench", *argv], cwd=path, env=env).returncode
