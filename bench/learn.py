"""The ``learn`` and ``defaults`` commands: our trainers against ML-Agents' built-in sac/ppo on the stand-in scenes.

    python -m bench learn                  # full budget (make bench; under an hour on 2 idle cores)
    python -m bench learn --quick          # a few minutes (make bench-quick)
    python -m bench learn --report-only    # re-render REPORT.md/PNGs from bench/results/
    python -m bench defaults               # minimal drop-in configs on the validation scenes (make bench-defaults)
    python -m bench defaults --report-only --update-readme   # README.md's results table from that invocation

Writes ``<out>/runs.jsonl`` (one run record per line, appended as each run ends; see bench/metrics.py),
``<out>/invocation.json`` (machine, versions, commit, speed section, skipped pairs), ``<out>/<scene>.png`` and
``<out>/REPORT.md``.  An earlier invocation's ``runs.jsonl`` in ``<out>`` is replaced at the start, so the
report and its ratios only ever see this invocation's runs.  The defaults report starts with the README-ready
results table between ``<!-- results:begin -->`` and ``<!-- results:end -->``; ``--update-readme`` puts the
same block into README.md between the same markers.
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
import warnings
from dataclasses import replace
from typing import Any, Dict, List, Optional

from bench import plan
from bench.invocation import new_id as new_invocation_id
from bench.metrics import same_invocation, steps_to_threshold
from bench.speed.section import run_speed

warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Default output folders are git-ignored; a study worth keeping is copied to bench/results/<study>-<date>/ and listed
# in bench/results/README.md.
DEFAULT_OUT = os.path.join(REPO, "results", "bench")
DEFAULTS_OUT = os.path.join(REPO, "results", "bench-defaults")
README = os.path.join(REPO, "README.md")
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


def environment(args: argparse.Namespace, budget: Optional[plan.Budget], invocation: str,
                command: str) -> Dict[str, Any]:
    from importlib.metadata import version

    import torch

    from bench import invocation as inv

    env = {
        "invocation": invocation,
        "date": inv.utc_now(),
        "machine": inv.machine(),
        "commit": inv.code_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "mlagents": f"{version('mlagents')} (mlagents-envs {version('mlagents-envs')})",
        "torch_threads": getattr(args, "torch_threads", None),
        "jobs": getattr(args, "jobs", None),
        "command": command,
        "note": args.note,
    }
    if budget is not None:
        env["budget"] = (f"{budget.name}: steps {budget.steps}, seeds {list(budget.seeds)}, mlagents-learn on "
                         f"{budget.learn_scene} with seeds {list(budget.learn_seeds)}")
    return env


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
    """Render REPORT.md and the PNGs from ``out``'s run files and invocation.json (a defaults invocation's report
    starts with the README-ready results table)."""
    from bench.plots import plot_scene
    from bench.report import render_report, results_block

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
    if inv.get("kind") == "defaults":
        head, _, rest = text.partition("\n\n")
        text = "\n\n".join([head, "## Results table (README-ready)", results_block(runs, inv["environment"]), rest])
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as f:
        f.write(text + "\n")
    return path


def update_readme(out: str, readme: str) -> None:
    """Replace ``readme``'s block between the results markers with the block of ``out``'s defaults invocation
    (its REPORT.md linked relative to the README).  A README without exactly one pair of markers, or an
    invocation that is not a defaults one, is an error and the file is left as it was."""
    from bench.report import replace_results_block, results_block

    with open(os.path.join(out, "invocation.json")) as f:
        inv = json.load(f)
    if inv.get("kind") != "defaults":
        raise ValueError(f"{out} holds a {inv.get('kind', 'learn')!r} invocation; --update-readme takes the table "
                         "of a defaults invocation (python -m bench defaults)")
    runs = read_runs(out)
    if not runs:
        raise ValueError(f"{out}/{RUNS_FILE} holds no runs; nothing to put in {readme}")
    link = os.path.relpath(os.path.join(out, "REPORT.md"), os.path.dirname(os.path.abspath(readme)))
    with open(readme) as f:
        text = f.read()
    new = replace_results_block(text, results_block(runs, inv["environment"], report_link=link), readme)
    tmp = readme + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, readme)


def print_speed_table(speed: List[Dict[str, Any]], out=None) -> None:
    """Print the report's Speed table (``python -m bench speed update`` rows) to the console as well."""
    from bench.report import speed_rows_table

    for e in speed:
        if isinstance(e.get("json"), dict) and "speed_rows" in e["json"]:
            print("[bench] Speed (ms per update; ratio > 1: ours slower):", file=out or sys.stdout)
            for line in speed_rows_table(e["json"]["speed_rows"]):
                print(line, file=out or sys.stdout)


def _write_invocation(out: str, env: Dict[str, Any], speed: List[Dict[str, Any]], skipped: List[str],
                      kind: str) -> None:
    with open(os.path.join(out, "invocation.json"), "w") as f:
        json.dump({"kind": kind, "environment": env, "speed": speed, "skipped": skipped}, f, indent=1)


def _common_arguments(p: argparse.ArgumentParser, default_out: str) -> None:
    p.add_argument("--scenes", nargs="+", help="only these scenes")
    p.add_argument("--trainers", nargs="+", help="only these trainers (ours by trainer_type, sac, ppo)")
    p.add_argument("--seeds", type=int, help="number of seeds (0..N-1) for in-process runs")
    p.add_argument("--steps", type=int, help="max_steps of every run (overrides the budget's per-scene steps)")
    p.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                   help=f"runs in parallel, one core each (default {DEFAULT_JOBS}: min(2, cores))")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads inside each run (default 1)")
    p.add_argument("--out", default=default_out,
                   help=f"output folder (default {os.path.relpath(default_out, REPO)})")
    p.add_argument("--note", default="", help="free text for the report header (e.g. machine was shared)")
    p.add_argument("--report-only", action="store_true", help="only re-render REPORT.md and plots from --out")


def parse_args(argv: Optional[List[str]] = None, kind: str = "learn") -> argparse.Namespace:
    """Options of ``python -m bench learn`` (``kind="learn"``) or ``python -m bench defaults``."""
    if kind == "learn":
        p = argparse.ArgumentParser(
            prog="python -m bench learn",
            description="Our trainers against ML-Agents' built-in sac/ppo on the stand-in scenes: in-process runs "
                        "over seeds, real mlagents-learn runs on one scene, then the speed section (python -m bench "
                        "speed); writes runs.jsonl, invocation.json, REPORT.md and one PNG per scene to --out.")
        p.add_argument("--quick", action="store_true", help="the few-minute budget (2 scenes, 2 seeds, short runs)")
        _common_arguments(p, DEFAULT_OUT)
        p.add_argument("--no-learn", action="store_true", help="skip the mlagents-learn runs")
        p.add_argument("--no-speed", action="store_true", help="skip the speed section")
    else:
        p = argparse.ArgumentParser(
            prog="python -m bench defaults",
            description="The defaults benchmark: every trainer with one minimal drop-in config (a user's sac or ppo "
                        "config with trainer_type changed) on every validation scene, 3 seeds, in-process. REPORT.md "
                        "starts with the README-ready results table (between <!-- results:begin --> and "
                        "<!-- results:end -->).")
        _common_arguments(p, DEFAULTS_OUT)
        p.add_argument("--update-readme", nargs="?", const=README, default=None, metavar="README",
                       help="also replace the results block of README (default README.md of this checkout) "
                            "with this invocation's table")
    args = p.parse_args(argv)
    for name in ("seeds", "steps", "jobs", "torch_threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')}={value} is invalid; must be an integer >= 1")
    return args


def main_learn(argv: Optional[List[str]] = None) -> int:
    return run(parse_args(argv, "learn"), "learn", "python -m bench learn " + " ".join(argv or []))


def main_defaults(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv, "defaults")
    args.quick, args.no_speed, args.no_learn = False, True, True  # in-process runs only, no speed section
    code = run(args, "defaults", "python -m bench defaults " + " ".join(argv or []))
    if code == 0 and args.update_readme:
        try:
            update_readme(os.path.abspath(args.out), args.update_readme)
        except (OSError, ValueError) as err:
            print(f"[bench] --update-readme: {err}", file=sys.stderr)
            return 2
        print(f"[bench] results table written to {args.update_readme}")
    return code


def run(args: argparse.Namespace, kind: str, command: str) -> int:
    """One ``learn`` or ``defaults`` invocation (``args`` from ``parse_args``)."""
    out = os.path.abspath(args.out)
    if args.report_only:
        print(write_report(out))
        return 0
    budget = plan.DEFAULTS if kind == "defaults" else plan.QUICK if args.quick else plan.FULL
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
    skipped = notes + skipped
    invocation = new_invocation_id()
    env = environment(args, budget, invocation, command.strip())
    running = sorted({j.trainer for j in jobs}, key=allowed.index)
    print(f"[bench] invocation {invocation}: {len(jobs)} runs, trainers {', '.join(running) or 'none'}; "
          f"{args.jobs} at a time, torch threads {args.torch_threads}")
    for s in skipped:
        print(f"[bench] skipped: {s}")

    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, RUNS_FILE)):
        os.remove(os.path.join(out, RUNS_FILE))
    _write_invocation(out, env, [], skipped, kind)
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
    _write_invocation(out, env, speed, skipped, kind)
    print(f"[bench] report: {write_report(out)}")
    return 0


def run_speed_section(out: str, quick: bool, note: str, command: str) -> int:
    """``python -m bench speed`` (mode ``all``): every speed measurement, one report in ``out``, no training runs."""
    out = os.path.abspath(out)
    budget = plan.QUICK if quick else plan.FULL
    args = argparse.Namespace(note=note)
    env = environment(args, None, new_invocation_id(), command)
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, RUNS_FILE)):
        os.remove(os.path.join(out, RUNS_FILE))
    start = time.perf_counter()
    speed = run_speed(budget.replay_rows, 300 if quick else 600, quick=quick, log=lambda m: print(m, flush=True))
    print_speed_table(speed)
    env["elapsed"] = _clock(time.perf_counter() - start) + f" (load average at end {os.getloadavg()[0]:.1f})"
    _write_invocation(out, env, speed, [], "speed")
    print(f"[bench] report: {write_report(out)}")
    return 0
