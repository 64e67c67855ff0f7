"""``python -m bench speed gpu``: fast_sac against built-in sac at sizes where a GPU should pay, in about 5 minutes.

Two parts, both on ``--device`` (default ``cuda``), written to ``--out`` as ``runs.jsonl`` (one record per
measurement) and ``REPORT.md``:

* **update throughput** (in-process): both trainers built as ``mlagents-learn`` builds them for the camera scene's
  behavior spec at ``--image``x``--image`` (3 channels, a 2-vector, one discrete branch of 5), ``--layers``x``--hidden``
  units (default 3x512), the ``simple`` image encoder, each replay filled with the same random 8-bit frames; for every
  ``--batches`` size (default 512 and 1024) one update is fast_sac's ``update_once()`` or the body of built-in sac's
  ``SACTrainer._update_sac_policy``; timed in interleaved blocks (``common.time_interleaved``, the device synchronised
  around each block), ``--update-s`` seconds per size at most.  ``--whole-step`` adds fast_sac with the compiled whole
  step forced onto the device (``compiled_step``: CPU-only since a crash on an H100), which only applies where the
  update is compiled (``compile_update: true`` is set for it);
* **whole runs** (``mlagents-learn --torch-device <device>``, ``threaded: true``): the camera scene at that image size
  (a stand-in build this command writes: the ``camera`` scene resampled, as the ``camera36`` variant is) with
  ``--agents`` agents, the first batch size, ``steps_per_update`` ``--steps-per-update``; runs alternate sac,
  fast_sac (``--pairs``), each stopped (Ctrl+C: it saves and exits as a user's would) after ``--run-s`` seconds or
  ``--max-steps``.  Environment steps per second come from the console summaries after the first one (start-up,
  ``buffer_init_steps`` and any compile excluded; reported apart), so short runs measure the steady state.

The defaults fit in about 5 minutes on one H100/H200 with 16 cores: about 60 s of update timing, 4 runs of 40 s and
their start-ups.  ``--tiny`` shrinks everything (20x20 frames, the ``simple`` encoder's smallest, 1x16 units, batches of 16, 8 agents, short runs) to
check the command on a CPU.
"""
import argparse
import json
import os
import re
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import numpy as np

from bench.speed import common
from mlagents_plugins.util.process_lifetime import sigint_as_in_a_terminal

BEHAVIOR_PREFIX = "Camera"
SCENE_BASE = "camera"
RUNS_FILE = "runs.jsonl"
TRAINERS = ("sac", "fast_sac")
#: "<Behavior>. Step: N. Time Elapsed: T s." of every console summary, with or without a mean reward
SUMMARY = re.compile(r"\b(?P<behavior>\w+)\. Step: (?P<step>\d+)\. Time Elapsed: (?P<secs>[0-9.]+) s\.")
STOP_GRACE_S = 60.0

LAUNCHER = """#!{python}
# Stand-in build of the camera scene at {size}x{size} (written by python -m bench speed gpu).
import sys
sys.path.insert(0, {repo!r})
from mlagents_plugins.envs.scenes import ALL_SCENES, SCENES
from mlagents_plugins.envs.scenes.variants import TUNING, VariantSpec, make_variant
ALL_SCENES[{scene!r}] = make_variant(
    VariantSpec({scene!r}, {behavior!r}, {base!r}, TUNING, threshold=0.6, image_size={size}), SCENES[{base!r}])
from mlagents_plugins.envs import standin
sys.exit(standin.main(["--scene", {scene!r}] + sys.argv[1:]))
"""


def scene_name(image: int) -> str:
    return f"{SCENE_BASE}{image}"


def behavior_name(image: int) -> str:
    return f"{BEHAVIOR_PREFIX}{image}"


def write_build(directory: str, image: int) -> str:
    """An executable stand-in build of the camera scene at ``image`` x ``image``; returns its path."""
    path = os.path.join(directory, f"{behavior_name(image)}.x86_64")
    with open(path, "w") as f:
        f.write(LAUNCHER.format(python=os.path.abspath(sys.executable), size=image, repo=common.REPO,
                                scene=scene_name(image), behavior=behavior_name(image), base=SCENE_BASE))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def camera_spec(image: int):
    """BehaviorSpec of the camera scene at ``image`` x ``image``."""
    from mlagents_envs.base_env import BehaviorSpec

    from mlagents_plugins.envs.scenes import SCENES
    from mlagents_plugins.envs.scenes.variants import TUNING, VariantSpec, make_variant

    cls = make_variant(VariantSpec(scene_name(image), behavior_name(image), SCENE_BASE, TUNING, threshold=0.6,
                                   image_size=image), SCENES[SCENE_BASE])
    scene = cls(num_areas=1)
    return BehaviorSpec(list(scene.observation_specs), scene.action_spec)


def behavior_config(trainer: str, args: argparse.Namespace, batch: int, max_steps: int,
                    overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One behavior block, the same for both trainers but the trainer type (sac takes fast_sac's names)."""
    return {
        "trainer_type": trainer,
        "threaded": True,
        "hyperparameters": dict({
            "batch_size": batch,
            "buffer_size": args.buffer,
            "buffer_init_steps": args.buffer_init,
            "steps_per_update": float(args.steps_per_update),
            "learning_rate": 3.0e-4,
            "tau": 0.005,
            "init_entcoef": 0.5,
        }, **(overrides or {})),
        "network_settings": {"normalize": False, "hidden_units": args.hidden, "num_layers": args.layers,
                             "vis_encode_type": "simple"},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "max_steps": max_steps,
        "time_horizon": 64,
        "summary_freq": args.summary,
        "checkpoint_interval": 10 * max_steps,
    }


# ---------------------------------------------------------------------------------------------- update part
def build_trainer(trainer: str, spec, args: argparse.Namespace, batch: int, out_dir: str,
                  overrides: Optional[Dict[str, Any]] = None):
    """A trainer with its policy and optimizer, as ``mlagents-learn``'s factory and ``add_policy`` build it."""
    from mlagents import plugins as mla_plugins
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
    from mlagents.trainers.settings import TrainerSettings

    common.register_plugins()
    cfg = behavior_config(trainer, args, batch, 10 ** 7, overrides)
    cfg.update(summary_freq=10 ** 9, checkpoint_interval=10 ** 9, threaded=False)
    settings = TrainerSettings.structure(cfg, TrainerSettings)
    t = mla_plugins.all_trainer_types[trainer]("B", 10, settings, True, False, 0, os.path.join(out_dir, trainer))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    t.add_policy(bid, t.create_policy(bid, spec))
    return t


def fill(trainer, spec, rows: int, seed: int = 0) -> None:
    """The same random trajectories (8-bit frames, vectors, actions, rewards) into ``trainer``'s buffer."""
    rng = np.random.default_rng(seed)
    k = n = 0
    while n < rows:
        trainer._process_trajectory(common.synthetic_trajectory(spec, 64, rng, done=k % 3 == 0, agent_id=f"a{k % 8}"))
        n += 64
        k += 1


def builtin_sac_step(trainer, batch: int):
    from bench.speed.update import builtin_sac_step as step

    return step(trainer, batch)


def synchronized(step, device: str):
    """``step`` followed by waiting for the device, so a timed block ends when its work does."""
    import torch

    if not device.startswith("cuda"):
        return step

    def run() -> None:
        step()
        torch.cuda.synchronize()

    return run


def measure_updates(args: argparse.Namespace, invocation: str, out: str) -> List[Dict[str, Any]]:
    """Update records of every batch size (see the module docstring)."""
    import torch

    from mlagents_plugins.common import compiled_step

    spec = camera_spec(args.image)
    records: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch in args.batches:
            rows = max(4 * batch, args.rows)
            base = {"invocation": invocation, "part": "update", "device": args.device, "batch": batch,
                    "image": args.image, "network": f"{args.layers}x{args.hidden}", "rows": rows}
            found: List[Dict[str, Any]] = []
            try:
                variants = {"sac": build_trainer("sac", spec, args, batch, tmp),
                            "fast_sac": build_trainer("fast_sac", spec, args, batch, tmp)}
                if args.whole_step:
                    variants["fast_sac_whole_step"] = build_trainer("fast_sac", spec, args, batch, tmp,
                                                                    {"compile_update": True})
                for t in variants.values():
                    fill(t, spec, rows)
                steps = {"sac": builtin_sac_step(variants["sac"], batch)}
                steps.update({k: v.update_once for k, v in variants.items() if k != "sac"})
                if args.whole_step:  # the device rule bypassed for that variant only: its first two steps decide
                    on_cpu = compiled_step._on_cpu
                    compiled_step._on_cpu = lambda optimizers: True
                    try:
                        steps["fast_sac_whole_step"]()
                        steps["fast_sac_whole_step"]()
                    finally:
                        compiled_step._on_cpu = on_cpu
                timed = {k: synchronized(v, args.device) for k, v in steps.items()}
                start = time.perf_counter()
                for step in timed.values():  # warm-up: allocator, cuDNN algorithm choice, compiles
                    for _ in range(args.warmup):
                        step()
                per_round = (time.perf_counter() - start) / max(1, args.warmup)
                updates = int(min(args.updates, max(5, args.update_s // max(per_round, 1e-9))))
                for name, value in common.time_interleaved(timed, updates, warmup=0).items():
                    rec = dict(base, trainer=name, ms_per_update=round(value, 4),
                               updates_per_s=round(1000.0 / value, 2), samples_per_s=round(1000.0 * batch / value, 1),
                               updates_timed=5 * max(1, updates // 5), error=None)
                    if name == "fast_sac_whole_step":
                        rec["whole_mode"] = variants[name].optimizer.head.loss_step.whole_mode
                    found.append(rec)
            except Exception as err:  # noqa: BLE001 - one failed size must not hide the others
                found = [dict(base, trainer=None, error=f"{type(err).__name__}: {err}"[:1500])]
            finally:
                if args.device.startswith("cuda"):
                    torch.cuda.empty_cache()
            _append(out, found)
            records += found
    return records


# ---------------------------------------------------------------------------------------------- whole runs
def steady_rate(console: str, behavior: str) -> Optional[Dict[str, float]]:
    """Environment steps per second between the first and the last console summary of ``behavior``."""
    points = [(int(m.group("step")), float(m.group("secs"))) for m in SUMMARY.finditer(console)
              if m.group("behavior") == behavior]
    if len(points) < 2:
        return None
    (s0, t0), (s1, t1) = points[0], points[-1]
    return {"steps_per_s": (s1 - s0) / max(1e-9, t1 - t0), "first_summary_s": t0, "measured_steps": s1 - s0,
            "last_step": s1}


def run_learn(trainer: str, args: argparse.Namespace, builds: str, seed: int, invocation: str) -> Dict[str, Any]:
    """One whole ``mlagents-learn`` run, stopped after ``--run-s``; its record (``error`` set when it failed)."""
    import yaml

    from bench.speed.learn import children_cpu_s
    from mlagents_plugins.testing.ports import free_base_port

    batch = args.batches[0]
    behavior = behavior_name(args.image)
    rec: Dict[str, Any] = {"invocation": invocation, "part": "learn", "trainer": trainer, "device": args.device,
                           "seed": seed, "agents": args.agents, "image": args.image, "batch": batch,
                           "network": f"{args.layers}x{args.hidden}", "steps_per_update": args.steps_per_update,
                           "error": None}
    work = tempfile.mkdtemp(prefix="bench_gpu_")
    try:
        cfg = os.path.join(work, "config.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump({"behaviors": {behavior: behavior_config(trainer, args, batch, args.max_steps)}}, f)
        learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
        cmd = [learn, cfg, f"--env={os.path.join(builds, behavior)}", "--run-id=run", f"--results-dir={work}",
               f"--base-port={free_base_port(4)}", "--num-envs=1", f"--num-areas={args.areas}", "--no-graphics",
               f"--seed={seed}", "--force", f"--torch-device={args.device}"]
        log_path = os.path.join(work, "console.txt")
        cpu0, t0 = children_cpu_s(), time.perf_counter()
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
                                    preexec_fn=sigint_as_in_a_terminal)  # the Ctrl+C below stops it
            stopped = False
            try:
                proc.wait(timeout=args.run_s)
            except subprocess.TimeoutExpired:
                stopped = True
                os.killpg(proc.pid, signal.SIGINT)  # as Ctrl+C: the run saves and exits
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        rec.update(wall_s=time.perf_counter() - t0, cpu_s=children_cpu_s() - cpu0, stopped_at_deadline=stopped,
                   exit_code=proc.returncode)
        with open(log_path) as f:
            console = f.read()
        if not stopped and proc.returncode != 0:
            raise RuntimeError(f"mlagents-learn exited with {proc.returncode}: {console[-1500:]}")
        rate = steady_rate(console, behavior)
        if rate is None:
            raise RuntimeError(f"fewer than 2 summaries in {args.run_s} s: {console[-1500:]}")
        rec.update(rate)
    except Exception as err:  # noqa: BLE001 - recorded; the other runs go on
        rec["error"] = f"{type(err).__name__}: {err}"[:3000]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rec


# ---------------------------------------------------------------------------------------------- report
def _append(out: str, records: List[Dict[str, Any]]) -> None:
    with open(os.path.join(out, RUNS_FILE), "a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def read_runs(out: str) -> List[Dict[str, Any]]:
    with open(os.path.join(out, RUNS_FILE)) as f:
        return [json.loads(line) for line in f if line.strip()]


def _median(xs: List[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def _f(x: Optional[float], digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def report(runs: List[Dict[str, Any]], header: Dict[str, Any]) -> str:
    """REPORT.md: the header, the update table (per batch), the whole-run table (medians over pairs) and ratios."""
    lines = [f"# fast_sac against built-in sac at GPU sizes ({header['device']})", ""]
    lines += [f"- **{k}:** {v}" for k, v in header.items() if k != "device"]
    lines += ["", "## Update throughput (in-process, same replay contents)", "",
              "| batch | trainer | ms per update | updates / s | samples / s | × sac |", "|---|---|---|---|---|---|"]
    updates = [r for r in runs if r["part"] == "update"]
    for batch in sorted({r["batch"] for r in updates}):
        rows = [r for r in updates if r["batch"] == batch]
        sac = next((r for r in rows if r.get("trainer") == "sac" and not r.get("error")), None)
        for r in rows:
            if r.get("error"):
                lines.append(f"| {batch} | FAILED | {r['error'][:200]} | | | |")
                continue
            ratio = sac["ms_per_update"] / r["ms_per_update"] if sac else None
            name = r["trainer"] + (f" ({r['whole_mode']})" if r.get("whole_mode") else "")
            lines.append(f"| {batch} | {name} | {r['ms_per_update']:.3f} | {r['updates_per_s']:.1f} | "
                         f"{r['samples_per_s']:.0f} | {_f(ratio, 2)} |")
    learn = [r for r in runs if r["part"] == "learn"]
    lines += ["", "## Whole mlagents-learn runs (steady state: steps between the first and the last summary)", "",
              "| trainer | runs | env steps / s | first summary at (s) | steps measured | × sac (per pair) |",
              "|---|---|---|---|---|---|"]
    by_seed = {(r["trainer"], r["seed"]): r for r in learn if not r.get("error")}
    for trainer in TRAINERS:
        mine = [r for r in learn if r["trainer"] == trainer]
        ok = [r for r in mine if not r.get("error")]
        ratios = [r["steps_per_s"] / by_seed[("sac", r["seed"])]["steps_per_s"] for r in ok
                  if ("sac", r["seed"]) in by_seed]
        failed = len(mine) - len(ok)
        lines.append(f"| {trainer} | {len(ok)}{f' ({failed} failed)' if failed else ''} | "
                     f"{_f(_median([r['steps_per_s'] for r in ok]))} | "
                     f"{_f(_median([r['first_summary_s'] for r in ok]))} | "
                     f"{_f(_median([r['measured_steps'] for r in ok]), 0)} | "
                     f"{' '.join(f'{x:.2f}' for x in ratios) or '—'} |")
    errors = [r for r in learn if r.get("error")]
    if errors:
        lines += ["", "Failed runs:", ""] + [f"- {r['trainer']} seed {r['seed']}: `{r['error'][:400]}`" for r in errors]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- command
def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench speed gpu", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", help="torch device of every trainer (default cuda)")
    p.add_argument("--out", default=os.path.join(common.REPO, "results", "bench-gpu"), help="output folder")
    p.add_argument("--image", type=int, default=84, help="camera frames are IMAGE x IMAGE x 3 (default 84)")
    p.add_argument("--hidden", type=int, default=512, help="hidden units (default 512)")
    p.add_argument("--layers", type=int, default=3, help="hidden layers (default 3)")
    p.add_argument("--batches", type=int, nargs="+", default=[512, 1024],
                   help="batch sizes of the update part; the first one is the whole runs' (default 512 1024)")
    p.add_argument("--agents", type=int, default=64, help="agents in the scene, a multiple of 4 (default 64)")
    p.add_argument("--steps-per-update", type=float, default=2.0, help="steps_per_update (default 2)")
    p.add_argument("--buffer", type=int, default=100000, help="buffer_size (default 100000)")
    p.add_argument("--buffer-init", type=int, default=2000, help="buffer_init_steps (default 2000)")
    p.add_argument("--summary", type=int, default=1000, help="summary_freq of the whole runs (default 1000)")
    p.add_argument("--pairs", type=int, default=2, help="sac/fast_sac run pairs, alternating (default 2)")
    p.add_argument("--run-s", type=float, default=40.0, help="seconds before a whole run is stopped (default 40)")
    p.add_argument("--max-steps", type=int, default=10 ** 6, help="max_steps of a whole run (default 1e6)")
    p.add_argument("--rows", type=int, default=4096, help="replay rows of the update part (at least 4 batches)")
    p.add_argument("--updates", type=int, default=500, help="most timed updates per trainer and batch (500)")
    p.add_argument("--update-s", type=float, default=8.0,
                   help="seconds of timed updates per trainer and batch at most (default 8)")
    p.add_argument("--warmup", type=int, default=5, help="untimed updates per trainer first (default 5)")
    p.add_argument("--whole-step", action="store_true",
                   help="also time fast_sac with the compiled whole step forced onto the device")
    p.add_argument("--parts", nargs="+", choices=("update", "learn"), default=["update", "learn"])
    p.add_argument("--tiny", action="store_true", help="CPU-sized check of the command (see the docstring)")
    p.add_argument("--note", default="", help="free text for the report header")
    args = p.parse_args(argv)
    if args.tiny:
        args.image, args.hidden, args.layers, args.batches = 20, 16, 1, [16]
        args.agents, args.buffer, args.buffer_init, args.summary = 8, 5000, 200, 200
        args.pairs, args.rows, args.updates, args.update_s, args.warmup = 1, 256, 20, 2.0, 2
        args.run_s = min(args.run_s, 120.0)
    for name in ("image", "hidden", "layers", "agents", "pairs", "rows", "updates", "summary", "max_steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}={getattr(args, name)} is invalid; must be >= 1")
    if args.agents % 4:
        p.error(f"--agents={args.agents} is invalid; the camera scene has 4 agents per area, so a multiple of 4")
    if any(b < 1 for b in args.batches) or not args.run_s > 0 or not args.update_s > 0 or args.steps_per_update <= 0:
        p.error("--batches, --run-s, --update-s and --steps-per-update must be positive")
    args.areas = args.agents // 4
    return args


def main(argv: Optional[List[str]] = None) -> int:
    from bench import invocation as inv

    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("python -m bench speed gpu: torch sees no CUDA device; use --device cpu (with --tiny to check "
                  "the command)", file=sys.stderr)
            return 2
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, RUNS_FILE)):
        os.remove(os.path.join(out, RUNS_FILE))
    invocation = inv.new_id()
    device_name = args.device
    if args.device.startswith("cuda"):
        import torch

        device_name = f"{args.device} ({torch.cuda.get_device_name()})"
    header = {"device": device_name, "invocation": invocation, "date": inv.utc_now(), "machine": inv.machine(),
              "code commit": inv.code_commit(), "command": "python -m bench speed gpu " + " ".join(argv),
              "settings": f"camera {args.image}x{args.image}x3 + 2-vector, one branch of 5; {args.layers}x{args.hidden}, "
                          f"simple encoder; batches {args.batches}; whole runs: {args.agents} agents, batch "
                          f"{args.batches[0]}, steps_per_update {args.steps_per_update}, threaded, "
                          f"{args.pairs} pair(s) of {args.run_s:.0f} s",
              "note": args.note}
    start = time.perf_counter()
    if "update" in args.parts:
        for r in measure_updates(args, invocation, out):
            print(f"[speed gpu] update batch {r['batch']} {r.get('trainer')}: "
                  + (f"FAILED {r['error'][:300]}" if r.get("error") else f"{r['ms_per_update']:.2f} ms"), flush=True)
    if "learn" in args.parts:
        builds = tempfile.mkdtemp(prefix="bench_gpu_builds_")
        try:
            write_build(builds, args.image)
            for pair in range(args.pairs):
                for trainer in TRAINERS if pair % 2 == 0 else TRAINERS[::-1]:
                    rec = run_learn(trainer, args, builds, pair, invocation)
                    _append(out, [rec])
                    print(f"[speed gpu] run {trainer} pair {pair}: " + (
                        f"FAILED {rec['error'][:300]}" if rec["error"] else
                        f"{rec['steps_per_s']:.1f} env steps/s over {rec['measured_steps']} steps, first summary at "
                        f"{rec['first_summary_s']:.0f} s") + f" | elapsed {time.perf_counter() - start:.0f} s", flush=True)
        finally:
            shutil.rmtree(builds, ignore_errors=True)
    header["elapsed"] = f"{time.perf_counter() - start:.0f} s"
    text = report(read_runs(out), header)
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write(text)
    print(text)
    return 0
