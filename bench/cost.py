"""What an invocation will cost before it starts: per-run seconds from earlier records, run- and wall-minutes.

Earlier records come from every invocation folder with a ``runs.jsonl``: ``results/*/`` of this checkout (the
default output folders) and ``bench/results/*/`` (the studies).  A record counts for a planned run when it has the
same mode, trainer, scene and ``max_steps``, was made on the same *machine kind* (``"<cores> cores, <CPU model>"``,
``bench.invocation.machine_kind``) and finished without error.  Its seconds are ``run_wall_seconds`` (the run's
whole process: start-up, training, checkpoint; records since issue 44) or, in older records, ``wall_seconds``
(training only) plus the median start-up seconds (``run_wall_seconds - wall_seconds``) of the newer records of that
machine kind when there are any.  The machine kind of an older record comes from its folder's ``invocation.json``
(``environment.machine``) or the ``Machine:`` line of its ``REPORT.md``.

With records from several folders (invocations), the estimate is the smallest per-folder median: the machine's
load only slows runs down, so the fastest invocation is the closest to an idle machine.

A planned run with no such record at its steps is scaled from the records of the same trainer and scene at other
steps (median seconds per step x steps; the plan says so); with none at all it has no estimate and the plan lists it.
Run-minutes are the sum over runs; wall-minutes the finish time of the last run when ``jobs`` workers take the runs
in plan order, each the next run as soon as it is free (as the bench's pool does).
"""
import glob
import json
import os
import re
import statistics
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MACHINE_LINE = re.compile(r"^(?P<cores>\d+) cores, (?P<cpu>.+?), (?:Linux|Darwin|Windows)\b")
REPORT_MACHINE = re.compile(r"^- \*\*Machine:\*\* (?P<machine>.+)$", re.MULTILINE)


def kind_of_machine_line(machine: str) -> Optional[str]:
    """``"2 cores, AMD EPYC"`` from a recorded machine line (``bench.invocation.machine``); None if unparsable."""
    m = MACHINE_LINE.match(machine or "")
    return f"{m.group('cores')} cores, {m.group('cpu')}" if m else None


def folder_machine_kind(folder: str) -> Optional[str]:
    """The machine kind an invocation folder records: ``invocation.json``'s, else its REPORT.md's Machine line."""
    path = os.path.join(folder, "invocation.json")
    if os.path.isfile(path):
        try:
            with open(path) as f:
                env = json.load(f).get("environment", {})
            kind = env.get("machine_kind") or kind_of_machine_line(env.get("machine", ""))
            if kind:
                return kind
        except (OSError, ValueError, AttributeError):
            pass
    path = os.path.join(folder, "REPORT.md")
    if os.path.isfile(path):
        with open(path, errors="replace") as f:
            m = REPORT_MACHINE.search(f.read())
        if m:
            return kind_of_machine_line(m.group("machine"))
    return None


@dataclass
class Past:
    """One earlier finished run, as the estimate uses it."""

    machine_kind: str
    mode: str
    trainer: str
    scene: str
    steps: int  # max_steps
    run_seconds: Optional[float]  # the whole run's process (records since issue 44)
    train_seconds: Optional[float]  # training only (wall_seconds)
    cpu_seconds: Optional[float]
    source: str


def history_folders(repo: str = REPO) -> List[str]:
    """Invocation folders of earlier records: ``results/*/`` and ``bench/results/*/`` holding a runs.jsonl."""
    found = glob.glob(os.path.join(repo, "results", "*", "runs.jsonl"))
    found += glob.glob(os.path.join(repo, "bench", "results", "*", "runs.jsonl"))
    return sorted(os.path.dirname(p) for p in found)


def finished_records(folder: str) -> Iterator[Dict[str, Any]]:
    """The records of ``folder``'s runs.jsonl that finished without error; unreadable lines are passed over (a
    history is a best guess, never a reason to stop)."""
    with open(os.path.join(folder, "runs.jsonl"), errors="replace") as f:
        lines = f.readlines()
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and not r.get("error"):
            yield r


def load_history(folders: Iterable[str]) -> List[Past]:
    """Every finished learning-run record of ``folders`` with a machine kind, steps and seconds."""
    out = []
    for folder in folders:
        kind = folder_machine_kind(folder)
        for r in finished_records(folder):
            if not all(k in r for k in ("trainer", "scene")):
                continue
            steps = r.get("max_steps")
            run_s, train_s = r.get("run_wall_seconds"), r.get("wall_seconds")
            record_kind = r.get("machine_kind") or kind
            if not record_kind or not isinstance(steps, int) or steps <= 0 or (run_s is None and train_s is None):
                continue
            out.append(Past(record_kind, r.get("mode", "in_process"), r["trainer"], r["scene"], steps,
                            None if run_s is None else float(run_s), None if train_s is None else float(train_s),
                            None if r.get("run_cpu_seconds") is None else float(r["run_cpu_seconds"]),
                            os.path.relpath(folder, REPO)))
    return out


GYM_SET = re.compile(r"--set[= ](\S+)")
GYM_PEER_SET = re.compile(r"--peer-set[= ](\S+)")


def gym_variant(record: Dict[str, Any], peers: Sequence[str] = ()) -> str:
    """The ``mode`` of a ``bench gym`` record in ``Past``: ``gym``, plus its ``--set`` overrides (sorted; read from
    its command) and a changed ``buffer_init_steps``, since those change what a run costs.  ``--set`` reaches only
    the ML-Agents trainers and ``--peer-set`` only the SB3 peers (``peers``), so each record counts its own kind."""
    pattern = GYM_PEER_SET if record.get("trainer") in peers else GYM_SET
    parts = sorted(pattern.findall(record.get("command") or ""))
    if record.get("buffer_init_steps") is not None:
        parts.append(f"buffer_init_steps={record['buffer_init_steps']}")
    return " ".join(["gym"] + parts)


def gym_history_folders(repo: str = REPO) -> List[str]:
    """Folders of ``bench gym`` records at any depth under ``results/`` and ``bench/results/`` (a study keeps its
    variants' invocations in sub-folders)."""
    found = glob.glob(os.path.join(repo, "results", "**", "runs.jsonl"), recursive=True)
    found += glob.glob(os.path.join(repo, "bench", "results", "**", "runs.jsonl"), recursive=True)
    return sorted({os.path.dirname(p) for p in found})


def load_gym_history(folders: Iterable[str], peers: Sequence[str] = ()) -> List[Past]:
    """Every finished ``bench gym`` record of ``folders`` (those with ``eval_every``; other benches' records are
    passed over) that names its machine kind: its seconds are the run's, training plus evaluation (``wall_s`` +
    ``eval_s``), as a plan waits for both; ``mode`` is ``gym_variant``; ``scene`` the task."""
    out = []
    for folder in folders:
        for r in finished_records(folder):
            if ("eval_every" not in r or not r.get("machine_kind")
                    or not isinstance(r.get("max_steps"), int) or r["max_steps"] <= 0
                    or not isinstance(r.get("wall_s"), (int, float)) or not r.get("trainer") or not r.get("scene")):
                continue
            cpu = r.get("cpu_s")
            out.append(Past(r["machine_kind"], gym_variant(r, peers), r["trainer"], r["scene"], r["max_steps"],
                            float(r["wall_s"]) + float(r.get("eval_s") or 0.0), None,
                            None if cpu is None else float(cpu) + float(r.get("eval_cpu_s") or 0.0),
                            os.path.relpath(folder, REPO)))
    return out


@dataclass
class RunEstimate:
    """The estimate of one planned run (seconds None: no record)."""

    key: Tuple[str, str, str, int]  # mode, trainer, scene, steps
    seconds: Optional[float]
    cpu_seconds: Optional[float]
    basis: str  # where it comes from, for the plan's lines


def startup_seconds(history: Sequence[Past], machine_kind: str) -> Optional[float]:
    """Median seconds a run spends outside training (process start, imports) on ``machine_kind``; None if no
    record there measured both."""
    gaps = [p.run_seconds - p.train_seconds for p in history
            if p.machine_kind == machine_kind and p.run_seconds is not None and p.train_seconds is not None]
    return statistics.median(gaps) if gaps else None


def _seconds(p: Past, startup: Optional[float]) -> float:
    if p.run_seconds is not None:
        return p.run_seconds
    return p.train_seconds + (startup or 0.0)


def estimate_run(mode: str, trainer: str, scene: str, steps: int, history: Sequence[Past],
                 machine_kind: str) -> RunEstimate:
    """Median seconds of the matching earlier records (see the module docstring)."""
    startup = startup_seconds(history, machine_kind)
    mine = [p for p in history if p.machine_kind == machine_kind and p.mode == mode and p.trainer == trainer
            and p.scene == scene]
    key = (mode, trainer, scene, steps)
    cpus = [p.cpu_seconds for p in mine if p.cpu_seconds is not None and p.steps == steps]
    cpu = statistics.median(cpus) if cpus else None
    same = [p for p in mine if p.steps == steps]
    if same:
        only_training = sum(p.run_seconds is None for p in same)
        note = "" if not only_training else (
            f", {only_training} training-only" + ("" if startup is None else f" + {startup:.0f} s start-up"))
        return RunEstimate(key, idle_median(same, lambda p: _seconds(p, startup)), cpu,
                           f"{len(same)} record(s) in {len({p.source for p in same})} folder(s){note}")
    if mine:
        rate = idle_median(mine, lambda p: _seconds(p, startup) / p.steps)
        at = sorted({p.steps for p in mine})
        return RunEstimate(key, rate * steps, None,
                           f"scaled from {len(mine)} record(s) at {', '.join(str(s) for s in at)} steps")
    return RunEstimate(key, None, None, "no record")


def idle_median(records: Sequence[Past], value) -> float:
    """The smallest per-folder median of ``value`` over ``records``: load only ever slows a run down, so the
    fastest invocation's median is the best guess for an idle machine (one median per folder keeps one lucky run
    from setting it)."""
    folders: Dict[str, List[float]] = {}
    for p in records:
        folders.setdefault(p.source, []).append(value(p))
    return min(statistics.median(v) for v in folders.values())


def makespan(seconds: Sequence[float], jobs: int) -> float:
    """Seconds until the last run ends when ``jobs`` workers take ``seconds`` in order, each as soon as it is free."""
    free = [0.0] * max(1, jobs)
    for s in seconds:
        i = free.index(min(free))
        free[i] += s
    return max(free) if seconds else 0.0


@dataclass
class PlanCost:
    runs: int
    estimated: int  # runs with an estimate
    run_minutes: float  # over the estimated runs
    wall_minutes: float  # at ``jobs``, over the estimated runs
    cpu_minutes: Optional[float]  # over the runs whose records carried CPU seconds
    jobs: int
    machine_kind: str
    per_run: List[RunEstimate]


def plan_cost(keys: Sequence[Tuple[str, str, str, int]], jobs: int, history: Sequence[Past],
              machine_kind: str) -> PlanCost:
    """The cost of running ``keys`` (mode, trainer, scene, steps; one per run, in plan order) at ``jobs``."""
    cache: Dict[Tuple[str, str, str, int], RunEstimate] = {}
    per_run = []
    for k in keys:
        if k not in cache:
            cache[k] = estimate_run(*k, history=history, machine_kind=machine_kind)
        per_run.append(cache[k])
    known = [e.seconds for e in per_run if e.seconds is not None]
    cpus = [e.cpu_seconds for e in per_run if e.cpu_seconds is not None]
    return PlanCost(len(keys), len(known), sum(known) / 60.0, makespan(known, jobs) / 60.0,
                    sum(cpus) / 60.0 if cpus else None, jobs, machine_kind, per_run)


def plan_lines(cost: PlanCost, groups: Sequence[Tuple[Tuple[str, str, str, int], List[Any]]],
               done: int = 0) -> List[str]:
    """The plan as printed by ``--plan`` and at the start of every invocation: one line per (mode, scene, trainer,
    steps) with its seeds and per-run estimate, then the totals (``groups``: key -> the seeds still to run)."""
    by_key = {e.key: e for e in cost.per_run}
    lines = [f"plan: {cost.runs} run(s) to make" + (f" ({done} already recorded)" if done else "")
             + f", {cost.jobs} at a time, machine kind {cost.machine_kind!r}"]
    for key, seeds in groups:
        e = by_key[key]
        each = "no estimate" if e.seconds is None else f"~{e.seconds / 60.0:.1f} min each"
        lines.append(f"  {key[0]:<14} {key[2]:<26} {key[1]:<12} {key[3]:>6} steps  seeds "
                     f"{' '.join(str(s) for s in seeds):<8} {each} ({e.basis})")
    if cost.runs == 0:
        lines.append("estimate: nothing to run")
    elif cost.estimated == 0:
        lines.append(f"estimate: none - no earlier record of these trainers and scenes on {cost.machine_kind!r}")
    else:
        cpu = "" if cost.cpu_minutes is None else f"; CPU {cost.cpu_minutes:.0f} min where records carried it"
        lines.append(f"estimate: {cost.run_minutes:.1f} run-minutes, {cost.wall_minutes:.1f} wall-minutes at "
                     f"--jobs {cost.jobs} on an idle machine ({cost.estimated} of {cost.runs} runs estimated from "
                     f"earlier records{cpu})")
        if cost.estimated < cost.runs:
            lines.append(f"  {cost.runs - cost.estimated} run(s) have no record on this machine kind: the totals "
                         "leave them out")
    return lines
