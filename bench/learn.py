"""The ``learn`` and ``defaults`` commands: our trainers against ML-Agents' built-in sac/ppo on the stand-in scenes.

    python -m bench learn                  # full budget (make bench; under an hour on 2 idle cores)
    python -m bench learn --quick          # a few minutes (make bench-quick)
    python -m bench learn --report-only    # re-render REPORT.md/PNGs from bench/results/
    python -m bench defaults               # minimal drop-in configs on the validation scenes (make bench-defaults)
    python -m bench defaults --report-only --update-readme   # README.md's results table from that invocation

Writes ``<out>/runs.jsonl`` (one run record per line, appended as each run ends; see bench/metrics.py),
``<out>/invocation.json`` (machine, versions, commit, speed section, skipped pairs, the plan, sessions),
``<out>/journal.jsonl`` (a ``started`` line per run), ``<out>/<scene>.png`` and ``<out>/REPORT.md``.  A finished
earlier invocation's records in ``<out>`` are replaced at the start (an unfinished one is refused), so the report
and its ratios only ever see one invocation's runs.  ``--continue DIR`` makes the runs DIR's invocation still lacks,
on the commit it started on (``bench/resume.py``); ``--plan`` prints the runs and their estimated cost
(``bench/cost.py``) and exits.  The defaults report starts with the README-ready
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
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from typing import Any, Dict, List, Optional

from bench import cost, plan, progress, resume
from bench.invocation import git_state, machine_kind
from bench.invocation import new_id as new_invocation_id
from bench.metrics import same_invocation, steps_to_threshold
from bench.overrides import override_text, parse_override
from bench.speed.section import run_speed

warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Default output folders are git-ignored; a study worth keeping is copied to bench/results/<study>-<date>/ and listed
# in bench/results/README.md.
DEFAULT_OUT = os.path.join(REPO, "results", "bench")
DEFAULTS_OUT = os.path.join(REPO, "results", "bench-defaults")
SCREEN_OUT = os.path.join(REPO, "results", "bench-screen")
README = os.path.join(REPO, "README.md")
DEFAULT_JOBS = max(1, min(2, os.cpu_count() or 1))


#: what makes a run of ``learn`` / ``defaults`` unique in its invocation (``bench.resume``'s key fields)
KEY_FIELDS = ("mode", "trainer", "scene", "seed")
_WORKER_START: List[float] = []  # perf_counter when this worker process began its set-up (one run per process)


def _init_worker(threads: int) -> None:
    _WORKER_START.append(time.perf_counter())
    import torch

    from mlagents_envs.logging_util import set_log_level

    import mlagents_plugins  # noqa: F401  (ONNX export fix)

    torch.set_num_threads(threads)
    set_log_level(logging.WARNING)


def job_key(job: plan.Job) -> resume.Key:
    return (job.mode, job.trainer, job.scene, job.seed)


def _work(args) -> Dict[str, Any]:
    """One run in its own worker process; the record adds the whole process's wall and CPU seconds (set-up,
    training, checkpoint; CPU of the process and of the children it waited for, e.g. mlagents-learn)."""
    from bench.runner import run_job

    job, invocation, builds, out = args
    start = _WORKER_START[0] if _WORKER_START else time.perf_counter()
    resume.mark_started(out, job_key(job), pid=os.getpid(), invocation=invocation)
    record = run_job(job, invocation, builds)
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    record["run_wall_seconds"] = time.perf_counter() - start
    record["run_cpu_seconds"] = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    return record


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
        "commit_full": git_state()[0],
        "machine_kind": machine_kind(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "mlagents": f"{version('mlagents')} (mlagents-envs {version('mlagents-envs')})",
        "torch_threads": getattr(args, "torch_threads", None),
        "jobs": (f"{args.jobs} (auto: one per core)" if getattr(args, "jobs_auto", False)
                 else getattr(args, "jobs", None)),
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
    resume.append_record(out, record)


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


def progress_line(r: Dict[str, Any], done: int, total: int, elapsed: float) -> str:
    head = f"[{done}/{total}] {r['mode']:<14} {r['scene']:<9} {r['trainer']:<12} seed {r['seed']}: "
    if r.get("error"):
        body = f"FAILED {r['error'][:160]}"
    else:
        hit = steps_to_threshold(r["curve"], r["threshold"])
        final = "n/a" if r["final_mean_reward"] is None else f"{r['final_mean_reward']:.2f}"
        body = (f"{r['steps']} steps in {r['wall_seconds']:.0f} s, final {final}, "
                f"threshold {r['threshold']:g} {'reached at ' + str(hit[0]) if hit else 'not reached'}")
    return head + body + progress.timing(elapsed, done, total)


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
    overrides = (inv.get("plan_options") or {}).get("overrides")
    if overrides:
        raise ValueError(f"{out} ran with --set {' '.join(override_text(p, v) for p, v in overrides)}: a screen of "
                         "a candidate, not the defaults README's table shows; --update-readme takes an invocation "
                         "without --set")
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
                      kind: str, extra: Optional[Dict[str, Any]] = None) -> None:
    doc = {"kind": kind, "environment": env, "speed": speed, "skipped": skipped}
    doc.update(extra or {})
    tmp = os.path.join(out, "invocation.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(out, "invocation.json"))


def jobs_value(text: str) -> int:
    """``--jobs``: an integer >= 1, or ``auto``: one run per core this process may use (``os.sched_getaffinity``).
    ValueError naming the value otherwise."""
    if text == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"--jobs={text} is invalid; allowed: an integer >= 1 or 'auto'")
    return value


def _common_arguments(p: argparse.ArgumentParser, default_out: str) -> None:
    p.add_argument("--scenes", nargs="+", help="only these scenes")
    p.add_argument("--trainers", nargs="+", help="only these trainers (ours by trainer_type, sac, ppo)")
    p.add_argument("--seeds", type=int, help="number of seeds (0..N-1) for in-process runs")
    p.add_argument("--steps", type=int, help="max_steps of every run (overrides the budget's per-scene steps)")
    p.add_argument("--jobs", default=str(DEFAULT_JOBS),
                   help=f"runs in parallel, one core each (default {DEFAULT_JOBS}: min(2, cores)); 'auto': one run "
                        "per core this process may use (os.sched_getaffinity), each with one torch thread")
    p.add_argument("--torch-threads", type=int, default=None, help="torch threads inside each run (default 1)")
    p.add_argument("--out", default=default_out,
                   help=f"output folder (default {os.path.relpath(default_out, REPO)})")
    p.add_argument("--note", default="", help="free text for the report header (e.g. machine was shared)")
    p.add_argument("--report-only", action="store_true", help="only re-render REPORT.md and plots from --out")
    p.add_argument("--plan", action="store_true",
                   help="only print the runs this invocation would make and its estimated run- and wall-minutes "
                        "at --jobs (from earlier records of the same runs on this machine kind), then exit")
    p.add_argument("--set", dest="overrides", type=parse_override, action="append", default=None,
                   metavar="KEY.PATH=VALUE",
                   help="set one setting (a YAML value) in the config of every planned trainer that has it, e.g. "
                        "--set hyperparameters.update_precision=bf16 or --set network_settings.hidden_units=256 "
                        "(hyperparameters only where the trainer's settings have the field; other sections in "
                        "every trainer's); repeatable; a screen of a candidate, so --update-readme refuses it")
    p.add_argument("--continue", dest="continue_dir", metavar="DIR", default=None,
                   help="continue the invocation in DIR: make only the planned runs its runs.jsonl lacks (a cut-off "
                        "run again) and append them; on the commit it started on (see --worktree)")
    p.add_argument("--worktree", metavar="PATH", default=None,
                   help="with --continue: a clean checkout of the invocation's starting commit (git worktree add "
                        "--detach PATH COMMIT); the runs are made there when this checkout is on another commit")


#: options that choose the runs; an invocation keeps the values it started with, so --continue refuses them
PLAN_OPTIONS = ("scenes", "trainers", "seeds", "steps", "quick", "screen", "no_learn", "no_speed", "overrides")


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
        p.add_argument("--screen", action="store_true",
                       help="the screening tier: one seed, every validation scene, shorter budgets that still "
                            "separate the trainers (bench/plan.py SCREEN); default output results/bench-screen")
        p.add_argument("--update-readme", nargs="?", const=README, default=None, metavar="README",
                       help="also replace the results block of README (default README.md of this checkout) "
                            "with this invocation's table")
    args = p.parse_args(argv)
    for name in ("seeds", "steps", "torch_threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')}={value} is invalid; must be an integer >= 1")
    if args.overrides and getattr(args, "update_readme", None):
        p.error("--set screens a candidate; README's table shows the defaults, so --update-readme is not allowed "
                "with it")
    args.jobs_auto = args.jobs == "auto"
    try:
        args.jobs = jobs_value(args.jobs)
    except ValueError as err:
        p.error(str(err))
    if args.jobs_auto and args.torch_threads not in (None, 1):
        p.error(f"--jobs auto runs one run per core with one torch thread each; --torch-threads="
                f"{args.torch_threads} is not allowed with it")
    args.torch_threads = args.torch_threads or 1
    if getattr(args, "screen", False) and args.out == DEFAULTS_OUT:
        args.out = SCREEN_OUT
    if args.continue_dir:
        given = [f"--{name.replace('_', '-')}" for name in PLAN_OPTIONS if getattr(args, name, None) not in
                 (None, False)]
        if given:
            p.error(f"--continue keeps the runs its invocation planned; {', '.join(given)} cannot be given with it")
        if args.report_only:
            p.error("--continue and --report-only exclude each other (use --report-only --out DIR)")
    elif args.worktree:
        p.error("--worktree is only used with --continue")
    args.argv = list(argv or [])
    return args


def main_learn(argv: Optional[List[str]] = None) -> int:
    return run(parse_args(argv, "learn"), "learn", "python -m bench learn " + " ".join(argv or []))


def main_defaults(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv, "defaults")
    args.quick = False
    if not args.continue_dir:
        args.no_speed, args.no_learn = True, True  # in-process runs only, no speed section
    code = run(args, "defaults", "python -m bench defaults " + " ".join(argv or []))
    if code == 0 and args.update_readme and not args.plan:
        try:
            update_readme(os.path.abspath(args.continue_dir or args.out), args.update_readme)
        except (OSError, ValueError) as err:
            print(f"[bench] --update-readme: {err}", file=sys.stderr)
            return 2
        print(f"[bench] results table written to {args.update_readme}")
    return code


def choose_budget(options: Dict[str, Any], kind: str) -> plan.Budget:
    """The budget of an invocation from its plan options (``PLAN_OPTIONS``; kept in invocation.json)."""
    if kind == "defaults":
        budget = plan.SCREEN if options.get("screen") else plan.DEFAULTS
    else:
        budget = plan.QUICK if options.get("quick") else plan.FULL
    if options.get("seeds"):
        budget = replace(budget, seeds=tuple(range(options["seeds"])))
    if options.get("steps"):
        budget = replace(budget, steps={s: options["steps"] for s in budget.scenes})
    if options.get("no_learn"):
        budget = replace(budget, learn_scene=None)
    return budget


def print_plan(jobs: List[plan.Job], args: argparse.Namespace, done: int = 0, out=None,
               speed: bool = False) -> cost.PlanCost:
    """The plan's lines (``cost.plan_lines``) for ``jobs`` at ``args.jobs``, each with ``[bench] ``; ``speed``: the
    speed section follows the runs (not in the estimate)."""
    keys = [(j.mode, j.trainer, j.scene, j.max_steps) for j in jobs]
    history = cost.load_history(cost.history_folders(REPO))
    estimate = cost.plan_cost(keys, args.jobs, history, machine_kind())
    groups: Dict[Any, List[int]] = {}
    for j in jobs:
        groups.setdefault((j.mode, j.trainer, j.scene, j.max_steps), []).append(j.seed)
    lines = cost.plan_lines(estimate, list(groups.items()), done=done)
    if speed:
        lines.append("then the speed section (python -m bench speed; not in the estimate: --no-speed skips it)")
    for line in lines:
        print("[bench] " + line, file=out or sys.stdout, flush=True)
    return estimate


def _in_worktree(args: argparse.Namespace, kind: str, inv: Dict[str, Any], out: str) -> Optional[int]:
    """With ``--worktree PATH``: PATH must be a clean checkout of the starting commit; when it is not this checkout,
    the continuation runs there (this process waits and returns its exit code); None: go on here."""
    start = inv["environment"].get("commit_full")
    path = resume.check_worktree(args.worktree, start)
    if os.path.realpath(path) == os.path.realpath(REPO):
        return None
    argv = [kind, "--continue", out, "--worktree", path, "--jobs", str(args.jobs), "--torch-threads",
            str(args.torch_threads)] + (["--note", args.note] if args.note else []) + (["--plan"] if args.plan else [])
    print(f"[bench] continuing in {path} (commit {start[:12]}): python -m bench {' '.join(argv)}", flush=True)
    return resume.run_in_checkout(path, argv, REPO)


def run(args: argparse.Namespace, kind: str, command: str) -> int:
    """One ``learn`` or ``defaults`` invocation (``args`` from ``parse_args``): a new one into ``--out``, or the
    rest of the one in ``--continue DIR``."""
    if args.report_only:
        print(write_report(os.path.abspath(args.out)))
        return 0
    try:
        if args.continue_dir:
            out = os.path.abspath(args.continue_dir)
            path = os.path.join(out, "invocation.json")
            if not os.path.isfile(path):
                raise resume.Refused(f"--continue {out}: no invocation.json there; nothing to continue")
            with open(path) as f:
                inv = json.load(f)
            if inv.get("kind", "learn") != kind:
                raise resume.Refused(f"--continue {out}: it holds a {inv.get('kind', 'learn')!r} invocation, not {kind!r} "
                              f"(python -m bench {inv.get('kind', 'learn')} --continue {out})")
            if args.worktree:
                code = _in_worktree(args, kind, inv, out)
                if code is not None:
                    return code
            note = resume.check_pinned(inv["environment"], out, REPO)
            if note:
                print(f"[bench] note: {note}", flush=True)
            options = inv.get("plan_options", {})
        else:
            out, inv = os.path.abspath(args.out), None
            options = {name: getattr(args, name, None) for name in PLAN_OPTIONS}
    except resume.Refused as err:
        print(f"[bench] refused: {err}", file=sys.stderr)
        return 2
    budget = choose_budget(options, kind)
    ours, notes = plan.discover_trainers()
    allowed = list(plan.BUILTINS) + ours
    for t in options.get("trainers") or []:
        if t not in allowed:
            print(f"--trainers: {t!r} is not available; allowed: {', '.join(allowed)}", file=sys.stderr)
            return 2
    try:
        jobs, skipped = plan.plan_jobs(budget, ours, options.get("trainers"), options.get("scenes"),
                                       overrides=[(list(p), v) for p, v in options.get("overrides") or []])
    except ValueError as err:
        print(f"[bench] refused: {err}", file=sys.stderr)
        return 2
    skipped = notes + skipped
    planned = [job_key(j) for j in jobs]
    if inv is not None and [tuple(k) for k in inv.get("planned", [])] != planned:
        print(f"[bench] refused: the runs planned now differ from those {out}/invocation.json planned at the start "
              "(same commit, so a trainer failed to load or the records were edited); not continuing",
              file=sys.stderr)
        return 2
    try:
        prog = resume.progress(out, planned, KEY_FIELDS) if inv is not None else resume.Progress(todo=planned)
    except ValueError as err:
        print(f"[bench] refused: {err}", file=sys.stderr)
        return 2
    todo = set(prog.todo)
    remaining = [j for j in jobs if job_key(j) in todo]
    speed_next = not options.get("no_speed") and not (inv or {}).get("speed")
    if args.plan:
        print_plan(remaining, args, done=len(prog.done), speed=speed_next)
        return 0
    if inv is None:
        unfinished = _unfinished(out)
        if unfinished:
            print(f"[bench] refused: {unfinished}", file=sys.stderr)
            return 2
    try:
        return _execute(args, kind, command, out, inv, options, budget, jobs, skipped, planned)
    except resume.Busy as err:
        print(f"[bench] refused: {err}", file=sys.stderr)
        return 2


def _unfinished(out: str) -> Optional[str]:
    """Why ``out`` must not be replaced by a new invocation (an unfinished one of ours is there), or None."""
    path = os.path.join(out, "invocation.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        inv = json.load(f)
    if inv.get("finished", True):
        return None
    planned = inv.get("planned", [])
    try:
        done = len(resume.progress(out, [tuple(k) for k in planned], KEY_FIELDS).done)
    except ValueError:
        done = "?"
    return (f"{out} holds the unfinished invocation {inv['environment'].get('invocation')} ({done} of "
            f"{len(planned)} runs recorded); continue it with --continue {out}, or give another --out (or remove "
            "the folder) to start a new one")


def _execute(args, kind, command, out, inv, options, budget, jobs, skipped, planned) -> int:
    os.makedirs(out, exist_ok=True)
    with resume.Lock(out):
        if inv is None:  # a new invocation: the folder's earlier records go, the plan is written first
            for name in (RUNS_FILE, resume.JOURNAL_FILE, resume.CUT_FILE):
                if os.path.exists(os.path.join(out, name)):
                    os.remove(os.path.join(out, name))
            invocation = new_invocation_id()
            env = environment(args, budget, invocation, command.strip())
            inv = {"kind": kind, "environment": env, "speed": [], "skipped": skipped, "plan_options": options,
                   "key_fields": list(KEY_FIELDS), "planned": [list(k) for k in planned], "sessions": [],
                   "finished": False}
            if str(env.get("commit", "")).endswith("+changes") or not env.get("commit_full"):
                print(f"[bench] note: commit {env.get('commit')} has uncommitted changes (or no git checkout): this "
                      "invocation cannot be continued with --continue if it is cut off")
        else:
            env, invocation = inv["environment"], inv["environment"]["invocation"]
            torn = resume.repair_tail(out)
            if torn is not None:
                print(f"[bench] {out}/{RUNS_FILE} ended in a cut-off line (moved to {resume.CUT_FILE}): "
                      f"{torn[:120]!r}")
        prog = resume.progress(out, planned, KEY_FIELDS)
        todo = set(prog.todo)
        remaining = [j for j in jobs if job_key(j) in todo]
        running = sorted({j.trainer for j in jobs}, key=lambda t: (t not in plan.BUILTINS, t))
        print(f"[bench] invocation {invocation}: {len(jobs)} runs, trainers {', '.join(running) or 'none'}; "
              f"{args.jobs} at a time{' (auto: one per core)' if args.jobs_auto else ''}, torch threads "
              f"{args.torch_threads}; commit {env.get('commit')}")
        print_plan(remaining, args, done=len(prog.done), speed=not options.get("no_speed") and not inv.get("speed"))
        for k in prog.cut_off:
            print(f"[bench] run {'/'.join(str(x) for x in k)} was started and cut off; it runs again")
        for s in skipped:
            print(f"[bench] skipped: {s}")
        session = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                   "machine": env["machine"] if not inv["sessions"] else None, "jobs": args.jobs,
                   "torch_threads": args.torch_threads, "runs_recorded_before": len(prog.done),
                   "runs_to_make": len(remaining), "load_average_at_start": round(os.getloadavg()[0], 2)}
        if session["machine"] is None:
            from bench.invocation import machine as machine_line

            session["machine"] = machine_line()
        inv["sessions"].append(session)
        _save(out, inv)
        builds = write_builds() if any(j.mode == "mlagents-learn" for j in remaining) else None
        start = time.perf_counter()
        # this session's machine kind (a continuation may run on another kind than the start's; see timing_kind)
        stamp = {"commit": env.get("commit"), "machine_kind": machine_kind()}
        if remaining:
            ctx = multiprocessing.get_context("spawn")
            # One fresh process per run (maxtasksperchild=1): no run inherits another's compiled graphs, caches or
            # global torch state, so a run's numbers do not depend on which runs its worker made before.
            with ctx.Pool(args.jobs, initializer=_init_worker, initargs=(args.torch_threads,),
                          maxtasksperchild=1) as pool:
                work = [(j, invocation, builds, out) for j in remaining]
                for done, record in enumerate(pool.imap_unordered(_work, work), 1):
                    record.update(stamp)
                    append_run(out, record)
                    # the session's entry follows every run, so a session that is cut off still says what it made
                    session.update(runs_made=done, wall_seconds=round(time.perf_counter() - start, 1))
                    _save(out, inv)
                    print(progress_line(record, done, len(remaining), time.perf_counter() - start), flush=True)
        if builds:
            shutil.rmtree(builds, ignore_errors=True)
        if not options.get("no_speed") and not inv.get("speed"):
            quick = bool(options.get("quick"))
            inv["speed"] = run_speed(budget.replay_rows, 300 if quick else 600, quick=quick,
                                     log=lambda m: print(m, flush=True))
            print_speed_table(inv["speed"])
        seconds = time.perf_counter() - start
        session.update(ended=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), wall_seconds=round(seconds, 1),
                       runs_made=len(remaining), load_average_at_end=round(os.getloadavg()[0], 2))
        total = sum(s.get("wall_seconds", 0.0) for s in inv["sessions"])
        env["elapsed"] = (progress.clock(total) + f" over {len(inv['sessions'])} session(s)" if len(inv["sessions"]) > 1
                          else progress.clock(total)) + f" (load average at end {os.getloadavg()[0]:.1f})"
        if len(inv["sessions"]) > 1:
            env["sessions"] = "; ".join(
                f"{s['started']}: {s.get('runs_made', 0)} runs in {progress.clock(s.get('wall_seconds', 0.0))} at --jobs "
                f"{s['jobs']}, load {s['load_average_at_start']} at start" for s in inv["sessions"])
        inv["finished"] = not resume.progress(out, planned, KEY_FIELDS).todo
        _save(out, inv)
    print(f"[bench] report: {write_report(out)}")
    return 0


def _save(out: str, inv: Dict[str, Any]) -> None:
    extra = {k: v for k, v in inv.items() if k not in ("kind", "environment", "speed", "skipped")}
    _write_invocation(out, inv["environment"], inv["speed"], inv["skipped"], inv["kind"], extra)


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
    env["elapsed"] = progress.clock(time.perf_counter() - start) + f" (load average at end {os.getloadavg()[0]:.1f})"
    _write_invocation(out, env, speed, [], "speed")
    print(f"[bench] report: {write_report(out)}")
    return 0
