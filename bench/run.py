"""Benchmark our trainers against ML-Agents' built-in sac/ppo on the stand-in scenes; write JSON, REPORT.md, PNGs.

    .venv/bin/python -m bench.run            # full budget (make bench; under an hour on 2 idle cores)
    .venv/bin/python -m bench.run --quick    # a few minutes (make bench-quick)
    .venv/bin/python -m bench.run --defaults # minimal drop-in configs on the validation scenes (make bench-defaults)
    .venv/bin/python -m bench.run --speed-only    # the speed section alone: every speed measurement, one report
    .venv/bin/python -m bench.run --report-only   # re-render REPORT.md/PNGs from bench/results/

Writes ``<out>/runs.jsonl`` (one run record per line, appended as each run ends; see bench/metrics.py),
``<out>/invocation.json`` (machine, versions, speed section, skipped pairs), ``<out>/<scene>.png`` and
``<out>/REPORT.md``.  An earlier invocation's ``runs.jsonl`` in ``<out>`` is replaced at the start, so the
report and its ratios only ever see this invocation's runs.
"""
import argparse
import glob
import json
import logging
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench import plan  # noqa: E402
from bench.metrics import same_invocation, steps_to_threshold  # noqa: E402
from bench.speed_scripts import run_speed  # noqa: E402

DEFAULT_OUT = os.path.join(REPO, "bench", "results")
DEFAULT_JOBS = max(1, min(2, os.cpu_count() or 1))


def _init_worker(threads: int) -> None:
    import torch

    from mlagents_envs.logging_util import set_log_level

    import mlagents_plugins  # noqa: F401  (ONNX export fix)

    torch.set_num_threads(threads)
    set_log_level(logging.WARNING)


def _work(args) -> Dict[str, Any]:
    from bench.runner import run_job

    job, invocation, builds = args
    return run_job(job, invocation, builds)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def environment(args: argparse.Namespace, budget: plan.Budget, invocation: str) -> Dict[str, Any]:
    from importlib.metadata import version

    import torch

    load = os.getloadavg()
    return {
        "invocation": invocation,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {cpu_model()}, {platform.system()} {platform.release()}; "
        f"load average at start {load[0]:.1f}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "mlagents": f"{version('mlagents')} (mlagents-envs {version('mlagents-envs')})",
        "torch_threads": args.torch_threads,
        "jobs": args.jobs,
        "budget": f"{budget.name}: steps {budget.steps}, seeds {list(budget.seeds)}, mlagents-learn on "
        f"{budget.learn_scene} with seeds {list(budget.learn_seeds)}",
        "command": "python -m bench.run " + " ".join(sys.argv[1:]),
        "note": args.note,
    }


RUNS_FILE = "runs.jsonl"


def append_run(out: str, record: Dict[str, Any]) -> None:
    """Add one run record as a line of ``<out>/runs.jsonl`` (flushed, so a killed bench keeps every finished run)."""
    with open(os.path.join(out, RUNS_FILE), "a") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_runs(out: str) -> List[Dict[str, Any]]:
    """The run records of ``<out>/runs.jsonl``.  A last line cut short (the bench was killed while writing it)
    is left out with a warning; a bad line before it is an error naming the file and line."""
    path = os.path.join(out, RUNS_FILE)
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        lines = [(i, line) for i, line in enumerate(f, 1) if line.strip()]
    runs = []
    for k, (number, line) in enumerate(lines):
        try:
            runs.append(json.loads(line))
        except ValueError as err:
            if k == len(lines) - 1:
                print(f"[bench] warning: {path} line {number} is not a whole JSON record (a run cut short "
                      f"while being written?); left out", file=sys.stderr)
                break
            raise ValueError(f"{path} line {number} is not a JSON run record: {err}") from err
    return runs


def write_builds() -> str:
    builds = tempfile.mkdtemp(prefix="bench_builds_")
    subprocess.run([sys.executable, "-m", "mlagents_plugins.envs.standin", "--write-builds", builds], check=True,
                   stdout=subprocess.DEVNULL, cwd=REPO)
    return builds


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def progress_line(r: Dict[str, Any], done: int, total: int, elapsed: float) -> str:
    head = f"[{done}/{total}] {r['mode']:<14} {r['scene']:<9} {r['trainer']:<12} seed {r['seed']}: "
    if r.get("error"):
        body = f"FAILED {r['error'][:160]}"
    else:
        hit = steps_to_threshold(r["curve"], r["threshold"])
        final = "n/a" if r["final_mean_reward"] is None else f"{r['final_mean_reward']:.2f}"
        body = (f"{r['steps']} steps in {r['wall_seconds']:.0f} s, final {final}, "
                f"threshold {r['threshold']:g} {'reached at ' + str(hit[0]) if hit else 'not reached'}")
    eta = elapsed / done * (total - done)
    return head + body + f"  | elapsed {_clock(elapsed)}, ETA ~{_clock(eta)}"


def write_report(out: str) -> str:
    """Render REPORT.md and the PNGs from ``out``'s run files and invocation.json."""
    from bench.plots import plot_scene
    from bench.report import render_report

    with open(os.path.join(out, "invocation.json")) as f:
        inv = json.load(f)
    runs = read_runs(out)
    if runs and same_invocation(runs) != inv["environment"]["invocation"]:
        raise ValueError(f"{out}/{RUNS_FILE} holds runs of another invocation than {out}/invocation.json")
    for old in glob.glob(os.path.join(out, "*.png")):
        os.remove(old)
    in_process = [r for r in runs if r["mode"] == "in_process"]
    plots = {}
    for scene in sorted({r["scene"] for r in in_process}):
        plot_scene(scene, in_process, os.path.join(out, f"{scene}.png"))
        plots[scene] = f"{scene}.png"
    text = render_report(runs, inv["environment"], plots, inv.get("speed", []), inv.get("skipped", []))
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as f:
        f.write(text + "\n")
    return path


def print_speed_table(speed: List[Dict[str, Any]], out=None) -> None:
    """Print the report's Speed table (``update_speed.py`` rows) to the console as well."""
    from bench.report import speed_rows_table

    for e in speed:
        if isinstance(e.get("json"), dict) and "speed_rows" in e["json"]:
            print("[bench] Speed (ms per update; ratio > 1: ours slower):", file=out or sys.stdout)
            for line in speed_rows_table(e["json"]["speed_rows"]):
                print(line, file=out or sys.stdout)


def _write_invocation(out: str, env: Dict[str, Any], speed: List[Dict[str, Any]], skipped: List[str]) -> None:
    with open(os.path.join(out, "invocation.json"), "w") as f:
        json.dump({"environment": env, "speed": speed, "skipped": skipped}, f, indent=1)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the few-minute budget (2 scenes, 2 seeds, short runs)")
    p.add_argument("--defaults", action="store_true",
                   help="the defaults benchmark: every trainer with one minimal drop-in config on every validation "
                        "scene (no mlagents-learn or speed runs)")
    p.add_argument("--scenes", nargs="+", help="only these scenes")
    p.add_argument("--trainers", nargs="+", help="only these trainers (ours by trainer_type, sac, ppo)")
    p.add_argument("--seeds", type=int, help="number of seeds (0..N-1) for in-process runs")
    p.add_argument("--steps", type=int, help="max_steps of every run (overrides the budget's per-scene steps)")
    p.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                   help=f"runs in parallel, one core each (default {DEFAULT_JOBS}: min(2, cores))")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads inside each run (default 1)")
    p.add_argument("--no-learn", action="store_true", help="skip the mlagents-learn runs")
    p.add_argument("--no-speed", action="store_true", help="skip the speed section")
    p.add_argument("--speed-only", action="store_true",
                   help="only the speed section (every speed measurement: update_speed, learn_speed, replay_io)")
    p.add_argument("--out", default=DEFAULT_OUT, help="output folder (default bench/results)")
    p.add_argument("--note", default="", help="free text for the report header (e.g. machine was shared)")
    p.add_argument("--report-only", action="store_true", help="only re-render REPORT.md and plots from --out")
    args = p.parse_args(argv)
    for name in ("seeds", "steps", "jobs", "torch_threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')}={value} is invalid; must be an integer >= 1")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    out = os.path.abspath(args.out)
    if args.report_only:
        print(write_report(out))
        return 0
    if args.quick and args.defaults:
        print("--quick and --defaults are two different budgets; give one of them", file=sys.stderr)
        return 2
    if args.speed_only and (args.no_speed or args.defaults):
        print("--speed-only runs nothing but the speed section, which --no-speed and --defaults leave out",
              file=sys.stderr)
        return 2
    budget = plan.DEFAULTS if args.defaults else plan.QUICK if args.quick else plan.FULL
    if args.defaults:
        args.no_speed = True
    if args.seeds:
        budget = replace(budget, seeds=tuple(range(args.seeds)))
    if args.steps:
        budget = replace(budget, steps={s: args.steps for s in budget.scenes})
    if args.no_learn:
        budget = replace(budget, learn_scene=None)
    ours, notes = plan.discover_trainers()
    allowed = list(plan.BUILTINS) + ours
    for t in args.trainers or []:
        if t not in allowed:
            print(f"--trainers: {t!r} is not available; allowed: {', '.join(allowed)}", file=sys.stderr)
            return 2
    jobs, skipped = plan.plan_jobs(budget, ours, args.trainers, args.scenes)
    if args.speed_only:
        jobs, skipped = [], []
    skipped = notes + skipped
    invocation = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]
    env = environment(args, budget, invocation)
    running = sorted({j.trainer for j in jobs}, key=allowed.index)
    print(f"[bench] invocation {invocation}: {len(jobs)} runs, trainers {', '.join(running) or 'none'}; "
          f"{args.jobs} at a time, torch threads {args.torch_threads}")
    for s in skipped:
        print(f"[bench] skipped: {s}")

    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, RUNS_FILE)):
        os.remove(os.path.join(out, RUNS_FILE))
    _write_invocation(out, env, [], skipped)
    builds = write_builds() if any(j.mode == "mlagents-learn" for j in jobs) else None
    start = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    # One fresh process per run (maxtasksperchild=1): no run inherits another's compiled graphs, caches or global
    # torch state, so a run's numbers do not depend on which runs its worker made before.
    with ctx.Pool(args.jobs, initializer=_init_worker, initargs=(args.torch_threads,), maxtasksperchild=1) as pool:
        for done, record in enumerate(pool.imap_unordered(_work, [(j, invocation, builds) for j in jobs]), 1):
            append_run(out, record)
            print(progress_line(record, done, len(jobs), time.perf_counter() - start), flush=True)
    if builds:
        shutil.rmtree(builds, ignore_errors=True)
    speed = [] if args.no_speed else run_speed(budget.replay_rows, 300 if args.quick else 600, quick=args.quick,
                                               log=lambda m: print(m, flush=True))
    print_speed_table(speed)
    env["elapsed"] = _clock(time.perf_counter() - start) + f" (load average at end {os.getloadavg()[0]:.1f})"
    _write_invocation(out, env, speed, skipped)
    print(f"[bench] report: {write_report(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
