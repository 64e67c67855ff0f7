"""``python -m bench profile``: where every CPU second of a whole ``mlagents-learn`` run goes, per 1k env steps.

Each run is a real ``mlagents-learn`` training through a stand-in build, ``--scene`` (default the Balance scene:
``--num-areas`` areas of 4 agents: 8 agents = 2 areas, 64 agents = 16 areas, as ML-Agents' example scenes hold 12-32
copies of an area; a validation variant such as ``balance_distractors`` for a number no default was tuned on) with
the issue's settings: ``--steps`` (12000) steps, 2x``--hidden`` (128) units, batch ``--batch`` (128), the defaults
benchmark's minimal config otherwise (``bench.plan.minimal_config``: ``steps_per_update`` 2, buffer 100k,
``buffer_init_steps`` 1000 for the off-policy trainers; impala and ppo: buffer 2048), summaries every
``--summary-freq`` steps, one checkpoint at the end, ``threaded: false``.  ``torch.compile``'s cache
(``TORCHINDUCTOR_CACHE_DIR``) is controlled, since one user's runs share it: by default every run starts with an
empty one (``--compile-cache cold``: the first run on a machine); ``--compile-cache warm`` shares one that an
unrecorded warm-up run of each trainer filled (a later run).  ``floor`` is the same build,
environment manager and trainer controller driven by random actions with no network and no training
(``bench.profiling.floor``).

CPU seconds, split by phase (``bench.profiling.phases``, ``bench.profiling.child``):

* **env**: the build and ML-Agents' environment worker process while the loop runs (/proc, read just before the
  manager closes them, less what they used to start);
* **host**, **inference**, **intake**, **update**, **stats**: the trainer process in the loop, by sampling its
  stacks on CPU time (ML-Agents' controller/manager/agent processor; the policies' ``get_action``; the trainers'
  ``_process_trajectory``; ``_update_policy``; stats and summaries);
* **startup**: the trainer process before the loop (imports, trainer and network creation, the first reset) and
  the environment processes' start; **compile**: ``torch.compile`` in the trainer process, Inductor compile
  worker processes, and the programs the trainer process ran and waited for during the loop (Inductor's C++
  compiler: the only ones it starts); **save**: the final checkpoint and export, closing the environment;
* **exit**: the whole process tree's CPU (``getrusage`` of its finished children, here) less all of the above:
  the processes' exit after the run (the trainer's interpreter shutdown, about 0.7 s of CPU for torch and mlagents
  alone, and the environment processes' own) and any process that ended unseen.

The table gives env steps per CPU second (steps / the tree's CPU), each phase per 1k env steps, each trainer's
env steps per CPU second over built-in ``sac``'s in the same round, and its non-update CPU per env step over the
floor's (all phases but update; and only the per-step ones: env, host, inference, intake, stats).  Rounds
alternate the trainer order (A B C, C B A, ...) and ratios are medians of per-round ratios, so a machine whose
load drifts slows every trainer of a round alike.  The machine is shared: compare ratios, not absolute seconds.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

from bench.profiling.phases import PHASES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(REPO, "results", "bench-profile")
#: the default ``--scene`` and its agents per area (each scene's own come from its class, ``parse_args``)
DEFAULT_SCENE = "balance"
AGENTS_PER_AREA = 4
FLOOR = "floor"
BASELINE = "sac"
DEFAULT_TRAINERS = (FLOOR, "sac", "fast_sac", "taac", "impala", "muzero_repr")
#: report columns: CPU seconds per 1k env steps
COLUMNS = ("env",) + tuple(p for p in PHASES if p != "env") + ("exit",)
#: phases paid on every step (the rest are one-off or the update)
PER_STEP = ("env", "host", "inference", "intake", "stats")
CHILD_CODE = "import sys; from bench.profiling.child import main; sys.exit(main())"
#: where torch.compile keeps compiled graphs and kernels between runs (by default /tmp/torchinductor_<user>,
#: shared by every run of that user on the machine)
INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
#: max_steps of a warm-up run (--compile-cache warm): past buffer_init_steps and the first compiled updates
WARMUP_STEPS = 2000
RUNS_FILE = "runs.jsonl"
RUN_TIMEOUT_S = 3600


def settable_fields(trainer: str) -> set:
    """Hyperparameters ``trainer`` takes a value for: its settings' fields but the built-in names it refuses
    (``config_compat.no_equivalent``, e.g. impala's ``buffer_init_steps``)."""
    from mlagents import plugins as mla_plugins

    from bench import plan
    from mlagents_plugins.common.config_compat import no_equivalents

    fields = plan.settings_fields(trainer)  # registers the plugins
    return fields - set(no_equivalents(mla_plugins.all_trainer_settings[trainer]))


def profile_config(trainer: str, steps: int, hidden: int, batch: int, summary_freq: int) -> Dict[str, Any]:
    """The behavior block of one run (see the module docstring)."""
    from bench import plan

    if trainer == FLOOR:
        cfg = plan.minimal_config("sac")
        cfg.update(trainer_type=FLOOR, hyperparameters={})
    else:
        cfg = plan.minimal_config(trainer)
        cfg["hyperparameters"]["batch_size"] = batch
        if "save_replay_buffer" in settable_fields(trainer):
            cfg["hyperparameters"]["save_replay_buffer"] = False
    cfg["network_settings"] = dict(cfg["network_settings"], hidden_units=hidden, num_layers=2)
    cfg.update(max_steps=steps, summary_freq=summary_freq, checkpoint_interval=10 * steps, keep_checkpoints=1,
               threaded=False)
    return cfg


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's finished children (and theirs, when they waited for them)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def phases_of(child: Dict[str, Any], tree_cpu_s: float) -> Dict[str, float]:
    """CPU seconds per report column from the child's result (``bench.profiling.child``) and the whole tree's CPU.

    The columns add up to ``tree_cpu_s``: ``exit`` is what the trainer process until its sampler stopped, the
    environment processes at close and the compile workers do not explain."""
    trainer = child["trainer_cpu"]
    start, end = child.get("children_at_loop_start") or {}, child.get("children_at_close") or {}
    env_start = start.get("build", 0.0) + start.get("env_worker", 0.0)
    env_end = end.get("build", 0.0) + end.get("env_worker", 0.0)
    reaped_start, reaped_end = start.get("reaped", 0.0), end.get("reaped", 0.0)
    out = {p: float(trainer.get(p, 0.0)) for p in PHASES}
    out["env"] = env_end - env_start + out["env"]  # the environment processes, and the trainer stepping it in-process
    out["startup"] += env_start + reaped_start
    out["compile"] += end.get("compile", 0.0) + reaped_end - reaped_start
    explained = sum(trainer.values()) + env_end + end.get("compile", 0.0) + reaped_end
    out["exit"] = tree_cpu_s - explained
    return {c: out[c] for c in COLUMNS}


def run_one(trainer: str, agents: int, seed: int, args: argparse.Namespace, builds: str, invocation: str,
            round_index: int, compile_cache: str, steps: Optional[int] = None) -> Dict[str, Any]:
    """One profiled mlagents-learn run with ``compile_cache`` as Inductor's cache folder; its record (``error``
    set, never an exception, when it fails).  ``steps`` replaces ``args.steps`` (the warm-up runs)."""
    import yaml

    from mlagents_plugins.testing.ports import free_base_port

    cfg = profile_config(trainer, steps or args.steps, args.hidden, args.batch, args.summary_freq)
    if trainer != FLOOR:
        accepted = settable_fields(trainer)
        cfg["hyperparameters"].update({k: v for k, v in args.overrides.items() if k in accepted})
    record: Dict[str, Any] = {"invocation": invocation, "scene": args.scene, "trainer": trainer, "agents": agents,
                              "round": round_index,
                              "seed": seed, "max_steps": cfg["max_steps"], "compile_cache": args.compile_cache,
                              "config": cfg, "error": None}
    work = tempfile.mkdtemp(prefix="bench_profile_")
    try:
        cfg_path, result_path = os.path.join(work, "config.yaml"), os.path.join(work, "profile.json")
        with open(cfg_path, "w") as f:
            yaml.safe_dump({"behaviors": {args.behavior: cfg}}, f)
        cmd = [sys.executable, "-c", CHILD_CODE, cfg_path, f"--env={os.path.join(builds, args.behavior)}", "--run-id=run",
               f"--results-dir={work}", f"--base-port={free_base_port(4)}", "--num-envs=1",
               f"--num-areas={agents // args.agents_per_area}", "--no-graphics", f"--seed={seed}", "--force"]
        from bench.profiling.child import INTERVAL_ENV, OUT_ENV, STACKS_ENV

        env = dict(os.environ, PYTHONUNBUFFERED="1", **{OUT_ENV: result_path, INTERVAL_ENV: str(args.interval_s),
                                                          STACKS_ENV: str(args.stacks)})
        env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env[INDUCTOR_CACHE_ENV] = compile_cache
        cpu0, t0 = children_cpu_s(), time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work, env=env,
                              timeout=RUN_TIMEOUT_S)
        record["wall_s"], record["cpu_s"] = time.perf_counter() - t0, children_cpu_s() - cpu0
        if proc.returncode != 0 or not os.path.isfile(result_path):
            raise RuntimeError(f"mlagents-learn exited with {proc.returncode}: {proc.stdout[-2000:]}")
        with open(result_path) as f:
            child = json.load(f)
        steps = sum(child.get("steps", {}).values())
        if steps <= 0:
            raise RuntimeError(f"the run counted no steps: {proc.stdout[-2000:]}")
        record.update(
            steps=steps,
            phases=phases_of(child, record["cpu_s"]),
            samples=child["samples"],
            children_at_loop_start=child.get("children_at_loop_start"),
            children_at_close=child.get("children_at_close"),
            profiler_cpu_s=child["handler_cpu_s"] + child.get("snapshot_cpu_s", 0.0),
            trainer_process={k: child[k] for k in ("process_cpu_s", "rusage_self_s", "rusage_children_s")},
            torch_threads=child["torch_threads"],
            top_stacks=child.get("top_stacks", {}),
        )
    except Exception as err:  # noqa: BLE001 - one broken run must not stop the invocation
        record["error"] = f"{type(err).__name__}: {err}"[:3000]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record


# ---------------------------------------------------------------------------------------------- summaries
def per_1k(record: Dict[str, Any]) -> Dict[str, float]:
    """CPU seconds per 1000 env steps of each column, and ``total``."""
    k = 1000.0 / record["steps"]
    out = {c: record["phases"][c] * k for c in COLUMNS}
    out["total"] = record["cpu_s"] * k
    return out


def non_update_per_step(record: Dict[str, Any], per_step_only: bool = False) -> float:
    """CPU seconds per env step outside the update: every column but ``update`` (``per_step_only``: only
    ``PER_STEP``'s, leaving out start-up, compile, save and exit)."""
    cols = PER_STEP if per_step_only else [c for c in COLUMNS if c != "update"]
    return sum(record["phases"][c] for c in cols) / record["steps"]


def _median(xs: Sequence[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def summarize(runs: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per (agents, trainer): medians over rounds, and per-round ratios against sac and the floor."""
    ok = [r for r in runs if not r.get("error")]
    by_round = {(r["agents"], r["round"], r["trainer"]): r for r in ok}
    rows = []
    keys = sorted({(r["agents"], r["trainer"]) for r in runs}, key=lambda k: (k[0], _order(k[1])))
    for agents, trainer in keys:
        mine = [r for r in ok if r["agents"] == agents and r["trainer"] == trainer]
        row: Dict[str, Any] = {"agents": agents, "trainer": trainer, "runs": len(mine),
                               "failed": sum(1 for r in runs if r["agents"] == agents and r["trainer"] == trainer
                                             and r.get("error"))}
        if mine:
            row["steps_per_cpu_s"] = _median([r["steps"] / r["cpu_s"] for r in mine])
            row["per_1k"] = {c: _median([per_1k(r)[c] for r in mine]) for c in COLUMNS + ("total",)}
        vs_sac, vs_floor, vs_floor_step = [], [], []
        for r in mine:
            sac, floor = by_round.get((agents, r["round"], BASELINE)), by_round.get((agents, r["round"], FLOOR))
            if sac is not None:
                vs_sac.append((r["steps"] / r["cpu_s"]) / (sac["steps"] / sac["cpu_s"]))
            if floor is not None:
                vs_floor.append(non_update_per_step(r) / non_update_per_step(floor))
                vs_floor_step.append(non_update_per_step(r, True) / non_update_per_step(floor, True))
        row.update(vs_sac=_median(vs_sac), vs_sac_rounds=vs_sac, non_update_vs_floor=_median(vs_floor),
                   per_step_vs_floor=_median(vs_floor_step))
        rows.append(row)
    return rows


def _order(trainer: str) -> int:
    return DEFAULT_TRAINERS.index(trainer) if trainer in DEFAULT_TRAINERS else len(DEFAULT_TRAINERS)


def _f(value: Optional[float], digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


TABLE_HEADER = ("| agents | trainer | runs | env steps / CPU s | × sac | " + " | ".join(COLUMNS) + " | total "
                "| non-update / floor | per-step / floor |")


def table(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """The report's table: phases in CPU seconds per 1k env steps (medians over rounds)."""
    lines = [TABLE_HEADER, "|" + "---|" * (TABLE_HEADER.count("|") - 1)]
    for row in rows:
        name = row["trainer"] if row["trainer"] in (FLOOR, BASELINE) else f"**{row['trainer']}**"
        runs = f"{row['runs']}" + (f" ({row['failed']} failed)" if row["failed"] else "")
        if "per_1k" not in row:
            lines.append(f"| {row['agents']} | {name} | {runs} |" + " — |" * (len(COLUMNS) + 5))
            continue
        cells = [str(row["agents"]), name, runs, _f(row["steps_per_cpu_s"], 0), _f(row["vs_sac"])]
        cells += [_f(row["per_1k"][c]) for c in COLUMNS + ("total",)]
        cells += [_f(row["non_update_vs_floor"]), _f(row["per_step_vs_floor"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def excess_over_floor(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """Per trainer and agent count, the non-update columns where it spends most beyond the floor (s / 1k steps)."""
    floors = {r["agents"]: r for r in rows if r["trainer"] == FLOOR and "per_1k" in r}
    lines = []
    for row in rows:
        floor = floors.get(row["agents"])
        if row["trainer"] == FLOOR or floor is None or "per_1k" not in row:
            continue
        extra = sorted(((row["per_1k"][c] - floor["per_1k"][c], c) for c in COLUMNS if c != "update"), reverse=True)
        parts = [f"{c} +{d:.2f}" for d, c in extra[:4] if d > 0]
        lines.append(f"- {row['agents']} agents, {row['trainer']}: " + (", ".join(parts) or "none above the floor"))
    return lines


def stack_lines(runs: Sequence[Dict[str, Any]], phases: Sequence[str] = ("inference", "intake", "stats", "host"),
                per_phase: int = 3) -> List[str]:
    """The most sampled stacks (6 innermost frames) of the non-update phases, first round's run of each trainer."""
    lines = []
    seen = set()
    for r in sorted(runs, key=lambda r: (r["agents"], _order(r["trainer"]), r["round"])):
        key = (r["agents"], r["trainer"])
        if r.get("error") or key in seen or not r.get("top_stacks"):
            continue
        seen.add(key)
        lines += [f"**{r['agents']} agents, {r['trainer']}** (samples per stack):", ""]
        for phase in phases:
            for signature, count in (r["top_stacks"].get(phase) or [])[:per_phase]:
                lines.append(f"- {phase}, {count}: `{signature}`")
        lines.append("")
    return lines


def render(runs: Sequence[Dict[str, Any]], env: Dict[str, Any]) -> str:
    rows = summarize(runs)
    lines = [
        "# Profile: CPU of whole mlagents-learn runs by phase", "",
        f"- **Invocation:** `{env.get('invocation')}`, {env.get('date')}",
        f"- **Machine:** {env.get('machine')}",
        f"- **Code commit:** `{env.get('commit')}`",
        f"- **Command:** `{env.get('command')}`",
        f"- **Settings:** {env.get('settings')}",
    ]
    if env.get("note"):
        lines.append(f"- **Note:** {env['note']}")
    if env.get("elapsed"):
        lines.append(f"- **Wall time:** {env['elapsed']}")
    lines += [
        "",
        "The machine is shared and noisy: read the ratios (× sac, / floor; medians of per-round ratios, rounds "
        "alternating the trainer order), not the absolute seconds.  Phase columns: CPU seconds per 1000 env steps "
        "(agent steps as mlagents-learn counts them), medians over rounds; how each phase is measured: "
        "`python -m bench profile --help` and bench/profiling/.", "",
        "*× sac*: env steps per CPU second over built-in sac's.  *non-update / floor*: CPU per env step outside "
        "the update (every column but update) over the floor's; *per-step / floor*: the same for env, host, "
        "inference, intake and stats only (no one-off start-up, compile or save).", "",
    ]
    lines += table(rows) + [""]
    excess = excess_over_floor(rows)
    if excess:
        lines += ["## Largest non-update costs above the floor (CPU s per 1k env steps)", ""] + excess + [""]
    failed = [f"- {r['agents']} agents, {r['trainer']}, round {r['round']}: {r['error'][:500]}" for r in runs
              if r.get("error")]
    if failed:
        lines += ["## Failed runs", ""] + failed + [""]
    stacks = stack_lines(runs)
    if stacks:
        lines += ["## Most sampled stacks of the non-update phases (innermost first)", ""] + stacks
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- command
def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench profile", description=__doc__.split("\n\n")[0],
                                epilog="See bench/README.md for how each phase is measured.")
    p.add_argument("--trainers", nargs="+", default=list(DEFAULT_TRAINERS),
                   help=f"trainers to profile (default: {' '.join(DEFAULT_TRAINERS)}; 'floor' is the no-network floor)")
    p.add_argument("--scene", default=DEFAULT_SCENE,
                   help=f"stand-in scene of one behavior (docs/scenes.md; default {DEFAULT_SCENE}), e.g. the validation "
                        "variant balance_distractors")
    p.add_argument("--agents", type=int, nargs="+", default=[8, 64],
                   help=f"agents in the scene, multiples of its agents per area ({AGENTS_PER_AREA} in Balance; "
                        "default: 8 64)")
    p.add_argument("--rounds", type=int, default=2, help="rounds of every trainer, alternating order (default 2)")
    p.add_argument("--steps", type=int, default=12000, help="max_steps of every run (default 12000)")
    p.add_argument("--hidden", type=int, default=128, help="hidden units, 2 layers (default 128)")
    p.add_argument("--batch", type=int, default=128, help="batch_size (default 128)")
    p.add_argument("--summary-freq", type=int, default=1000, help="summary_freq (default 1000)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="hyperparameters (YAML values) for every trainer whose settings have them, e.g. "
                        "buffer_init_steps=200 (not the floor, which has none)")
    p.add_argument("--interval-s", type=float, default=0.005,
                   help="CPU seconds between samples of the trainer process (default 0.005; the kernel may "
                        "deliver them less often)")
    p.add_argument("--stacks", type=int, default=10, help="most sampled stacks kept per phase and run (default 10)")
    p.add_argument("--compile-cache", choices=("cold", "warm"), default="cold",
                   help="cold (default): every run starts with an empty torch.compile cache, as a first run on a "
                        "machine; warm: one cache for the invocation, filled by an unrecorded warm-up run of every "
                        f"trainer ({WARMUP_STEPS} steps at the first agent count), as a later run")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help=f"output folder for REPORT.md and runs.jsonl (default {os.path.relpath(DEFAULT_OUT, REPO)})")
    p.add_argument("--note", default="", help="free text for the report header")
    p.add_argument("--report-only", action="store_true", help="only re-render REPORT.md from --out")
    args = p.parse_args(argv)
    for name in ("rounds", "steps", "hidden", "batch", "summary_freq"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}={getattr(args, name)} is invalid; must be an integer >= 1")
    from mlagents_plugins.envs.scenes import ALL_SCENES, scene_behaviors

    try:
        parts = scene_behaviors(args.scene)
    except ValueError:
        p.error(f"--scene={args.scene!r} is unknown; allowed: {', '.join(sorted(ALL_SCENES))}")
    if len(parts) != 1:
        p.error(f"--scene={args.scene!r} is invalid; it has {len(parts)} behaviors and a profile runs one: give a "
                f"scene of one behavior")
    args.scene = args.scene.lower()
    args.behavior, args.agents_per_area = parts[0].behavior_name, int(parts[0].agents_per_area)
    per_area = args.agents_per_area
    bad = [a for a in args.agents if a < per_area or a % per_area]
    if bad:
        p.error(f"--agents={bad} is invalid; the {args.behavior} scene has {per_area} agents per area, so give "
                f"multiples of {per_area}")
    if not args.interval_s > 0:
        p.error(f"--interval-s={args.interval_s} is invalid; must be > 0")
    import yaml

    args.overrides = {}
    for pair in args.set:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            p.error(f"--set {pair!r} is invalid; give KEY=VALUE, e.g. buffer_init_steps=200")
        args.overrides[key] = yaml.safe_load(value)
    return args


def read_runs(out: str) -> List[Dict[str, Any]]:
    path = os.path.join(out, RUNS_FILE)
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_report(out: str) -> str:
    with open(os.path.join(out, "invocation.json")) as f:
        env = json.load(f)
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as f:
        f.write(render(read_runs(out), env) + "\n")
    return path


def schedule(trainers: Sequence[str], agents: Sequence[int], rounds: int) -> List[tuple]:
    """(round, agents, trainer) in run order: every round runs every pair, the order reversed on odd rounds."""
    out = []
    for r in range(rounds):
        pairs = [(a, t) for a in agents for t in trainers]
        out += [(r, a, t) for a, t in (pairs if r % 2 == 0 else reversed(pairs))]
    return out


def main(argv: Optional[List[str]] = None) -> int:
    from bench import invocation as inv
    from bench import plan
    from bench.learn import append_run

    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    out = os.path.abspath(args.out)
    if args.report_only:
        print(write_report(out))
        return 0
    ours, _ = plan.discover_trainers()
    allowed = [FLOOR] + list(plan.BUILTINS) + ours
    unknown = [t for t in args.trainers if t not in allowed]
    if unknown:
        print(f"--trainers: {unknown} not available; allowed: {', '.join(allowed)}", file=sys.stderr)
        return 2
    invocation = inv.new_id()
    env = {"invocation": invocation, "date": inv.utc_now(), "machine": inv.machine(), "commit": inv.code_commit(),
           "command": "python -m bench profile " + " ".join(argv), "note": args.note,
           "settings": f"{args.behavior} stand-in, {args.steps} steps, 2x{args.hidden} units, batch {args.batch}, "
                       f"summary every {args.summary_freq}, agents {args.agents}, {args.rounds} round(s), "
                       f"sampling every {args.interval_s} CPU s, {args.compile_cache} torch.compile cache"
                       + (f", hyperparameters set: {args.overrides}" if args.overrides else "")}
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, RUNS_FILE)):
        os.remove(os.path.join(out, RUNS_FILE))
    with open(os.path.join(out, "invocation.json"), "w") as f:
        json.dump(env, f, indent=1)
    builds = tempfile.mkdtemp(prefix="bench_profile_builds_")
    subprocess.run([sys.executable, "-m", "mlagents_plugins.envs.standin", "--write-builds", builds], check=True,
                   stdout=subprocess.DEVNULL, cwd=REPO)
    plan_ = schedule(args.trainers, args.agents, args.rounds)
    shared_cache = tempfile.mkdtemp(prefix="bench_profile_inductor_")
    start = time.perf_counter()
    try:
        if args.compile_cache == "warm":
            for trainer in args.trainers:
                warm = run_one(trainer, args.agents[0], 0, args, builds, invocation, -1, shared_cache,
                               steps=min(args.steps, WARMUP_STEPS))
                print(f"[profile] warm-up {trainer}: " + (f"FAILED {warm['error'][:300]}" if warm["error"] else
                                                          f"{warm['steps']} steps, {warm['cpu_s']:.1f} CPU s"),
                      flush=True)
        for i, (r, agents, trainer) in enumerate(plan_, 1):
            if args.compile_cache == "warm":
                rec = run_one(trainer, agents, r, args, builds, invocation, r, shared_cache)
            else:
                cold = tempfile.mkdtemp(prefix="bench_profile_inductor_")
                try:
                    rec = run_one(trainer, agents, r, args, builds, invocation, r, cold)
                finally:
                    shutil.rmtree(cold, ignore_errors=True)
            append_run(out, rec)
            elapsed = time.perf_counter() - start
            if rec.get("error"):
                body = f"FAILED {rec['error'][:300]}"
            else:
                body = (f"{rec['steps']} steps, {rec['cpu_s']:.1f} CPU s ({rec['steps'] / rec['cpu_s']:.0f} steps per "
                        f"CPU s), update {rec['phases']['update']:.1f} s, wall {rec['wall_s']:.0f} s")
            print(f"[profile] {i}/{len(plan_)} round {r}, {agents} agents, {trainer}: {body}  | elapsed "
                  f"{elapsed / 60:.1f} min, ETA ~{elapsed / i * (len(plan_) - i) / 60:.1f} min", flush=True)
    finally:
        shutil.rmtree(builds, ignore_errors=True)
        shutil.rmtree(shared_cache, ignore_errors=True)
    env["elapsed"] = f"{(time.perf_counter() - start) / 60:.1f} min (load average at end {os.getloadavg()[0]:.1f})"
    with open(os.path.join(out, "invocation.json"), "w") as f:
        json.dump(env, f, indent=1)
    report = write_report(out)
    print("\n".join(table(summarize(read_runs(out)))))
    print(f"[profile] report: {report}")
    return 0
