"""Environment steps per second through real ``mlagents-learn``: built-in ``sac`` vs ``fast_sac``, issue #3's setup.

The issue's reference: "built-in sac trains at only about 80 environment steps per second on an 8-agent task
at steps_per_update: 2" with batch 256 and 2x256 hidden units.  Here: the Balance stand-in build (8 vector
observations, 2 continuous actions) with ``--num-areas`` 2 x 4 agents = 8 agents, one environment, both trainers
with the same settings (below; ``--hidden``/``--batch`` change them), ``threaded`` as ML-Agents' default (false)
unless ``--threaded``.  ``--scene`` runs another stand-in scene the same way (e.g. ``camera36``: a camera and a
small vector, the image encoded by ML-Agents' default ``simple`` encoder in both trainers).

Runs alternate sac, fast_sac, sac, fast_sac ... (``--pairs``, default 3), each its own ``mlagents-learn``
process and stand-in.
Steps per second come from mlagents-learn's console summaries: (last step - first step) / (last time - first
time), the first summary being at ``--skip`` steps, i.e. after start-up, ``buffer_init_steps`` and fast_sac's
one-off compile; start-up seconds (time of that first summary) and total wall time are reported too.  The
share of time spent updating is from ``run_logs/timers.json`` (``_update_policy``).  CPU seconds are the
whole run's, ``mlagents-learn`` and the stand-in build together (``getrusage(RUSAGE_CHILDREN)`` around the
run, start-up and compile included): ``steps_per_cpu_s`` = ``max_steps`` / CPU seconds, issue #18's measure.

Usage: ``python -m bench speed learn [--pairs 3] [--steps 6000] [--json]``.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from bench.runner import UPDATE_TIMER, _sum_named_dict, parse_console
from bench.speed.common import REPO, print_result
from mlagents_plugins.testing.ports import free_base_port

SCENE = "balance"
BEHAVIOR = "Balance"  # the default scene's behavior
TRAINERS = ("sac", "fast_sac")


def behavior_name(scene: str) -> str:
    from mlagents_plugins.envs.scenes import scene_class

    return scene_class(scene).behavior_name


def config(trainer: str, steps: int, summary: int, hidden: int, batch: int, threaded: bool,
           behavior: str = BEHAVIOR) -> Dict[str, Any]:
    return {
        "behaviors": {
            behavior: {
                "trainer_type": trainer,
                "threaded": threaded,
                "hyperparameters": {
                    "batch_size": batch,
                    "buffer_size": 100000,
                    "buffer_init_steps": 1000,
                    "steps_per_update": 2.0,
                    "learning_rate": 3.0e-4,
                    "tau": 0.005,
                    "init_entcoef": 0.5,
                },
                "network_settings": {"normalize": False, "hidden_units": hidden, "num_layers": 2},
                "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
                "max_steps": steps,
                "time_horizon": 64,
                "summary_freq": summary,
                "checkpoint_interval": 10 * steps,
            }
        }
    }


def children_cpu_s() -> float:
    """User + system CPU seconds of every finished child process of this one (and, transitively, theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(trainer: str, args: argparse.Namespace, builds: str, seed: int) -> Dict[str, Any]:
    import yaml

    out = tempfile.mkdtemp(prefix="learn_speed_")
    behavior = behavior_name(args.scene)
    try:
        cfg = os.path.join(out, "config.yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump(config(trainer, args.steps, args.summary, args.hidden, args.batch, args.threaded,
                                  behavior), f)
        learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
        cmd = [learn, cfg, f"--env={os.path.join(builds, behavior)}", "--run-id=run", f"--results-dir={out}",
               f"--base-port={free_base_port(4)}", "--num-envs=1", f"--num-areas={args.areas}", "--no-graphics",
               f"--seed={seed}", "--force"]
        if args.torch_device:
            cmd.append(f"--torch-device={args.torch_device}")
        start, cpu_start = time.perf_counter(), children_cpu_s()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=out,
                              env=dict(os.environ, PYTHONUNBUFFERED="1"), timeout=1800)
        wall, cpu = time.perf_counter() - start, children_cpu_s() - cpu_start
        if proc.returncode != 0:
            raise RuntimeError(f"{trainer}: mlagents-learn exited with {proc.returncode}: {proc.stdout[-1500:]}")
        curve = [c for c in parse_console(proc.stdout, behavior) if c[0] >= args.skip]
        if len(curve) < 2:
            raise RuntimeError(f"{trainer}: fewer than 2 summaries after step {args.skip}: {proc.stdout[-1500:]}")
        (s0, t0, _), (s1, t1, r1) = curve[0], curve[-1]
        with open(os.path.join(out, "run", "run_logs", "timers.json")) as f:
            tree = json.load(f)
        update_s = _sum_named_dict(tree, UPDATE_TIMER)
        return {
            "trainer": trainer,
            "seed": seed,
            "steps_per_s": (s1 - s0) / max(1e-9, t1 - t0),
            "measured_steps": [s0, s1],
            "startup_s": t0,
            "wall_s": wall,
            "cpu_s": cpu,
            "steps_per_cpu_s": args.steps / max(1e-9, cpu),
            "update_share": update_s / max(1e-9, tree.get("total", wall)),
            "final_mean_reward": r1,
        }
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench speed learn", description=__doc__.split("\n")[0])
    p.add_argument("--scene", default=SCENE, help=f"stand-in scene (default {SCENE})")
    p.add_argument("--pairs", type=int, default=3, help="sac/fast_sac run pairs, alternating (default 3)")
    p.add_argument("--steps", type=int, default=6000, help="max_steps of every run (default 6000)")
    p.add_argument("--summary", type=int, default=1000, help="summary_freq (default 1000)")
    p.add_argument("--skip", type=int, default=2000, help="first summary step counted (default 2000)")
    p.add_argument("--areas", type=int, default=2, help="stand-in areas of 4 agents (default 2: 8 agents)")
    p.add_argument("--hidden", type=int, default=256, help="hidden units, 2 layers (default 256)")
    p.add_argument("--batch", type=int, default=256, help="batch size (default 256)")
    p.add_argument("--threaded", action="store_true", help="threaded: true for both trainers")
    p.add_argument("--torch-device", default=None, help="mlagents-learn's --torch-device for every run (e.g. cuda)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)

    builds = tempfile.mkdtemp(prefix="learn_speed_builds_")
    subprocess.run([sys.executable, "-m", "mlagents_plugins.envs.standin", "--write-builds", builds], check=True,
                   stdout=subprocess.DEVNULL, cwd=REPO)
    runs: List[Dict[str, Any]] = []
    try:
        for pair in range(args.pairs):
            for trainer in TRAINERS:
                runs.append(run_one(trainer, args, builds, seed=pair))
                if not args.json:
                    r = runs[-1]
                    print(f"[speed learn] {trainer:9s} pair {pair}: {r['steps_per_s']:.1f} steps/s, "
                          f"{r['steps_per_cpu_s']:.1f} steps per CPU s, update share {r['update_share']:.0%}, "
                          f"start-up {r['startup_s']:.1f} s", flush=True)
    finally:
        shutil.rmtree(builds, ignore_errors=True)
    ratios = [f["steps_per_s"] / s["steps_per_s"] for s, f in zip(runs[0::2], runs[1::2])]
    cpu_ratios = [f["steps_per_cpu_s"] / s["steps_per_cpu_s"] for s, f in zip(runs[0::2], runs[1::2])]
    per = {t: [r for r in runs if r["trainer"] == t] for t in TRAINERS}
    result: Dict[str, Any] = {k: getattr(args, k) for k in ("scene", "steps", "skip", "areas", "hidden", "batch", "threaded",
                                                      "torch_device")}
    result.update(
        agents=4 * args.areas,
        sac_steps_per_s=round(statistics.median(r["steps_per_s"] for r in per["sac"]), 1),
        fast_sac_steps_per_s=round(statistics.median(r["steps_per_s"] for r in per["fast_sac"]), 1),
        ratio_per_pair=" ".join(f"{x:.2f}" for x in ratios),
        ratio_median=round(statistics.median(ratios), 2),
        sac_steps_per_cpu_s=round(statistics.median(r["steps_per_cpu_s"] for r in per["sac"]), 1),
        fast_sac_steps_per_cpu_s=round(statistics.median(r["steps_per_cpu_s"] for r in per["fast_sac"]), 1),
        cpu_ratio_per_pair=" ".join(f"{x:.2f}" for x in cpu_ratios),
        cpu_ratio_median=round(statistics.median(cpu_ratios), 2),
        sac_update_share=round(statistics.median(r["update_share"] for r in per["sac"]), 3),
        fast_sac_update_share=round(statistics.median(r["update_share"] for r in per["fast_sac"]), 3),
        sac_startup_s=round(statistics.median(r["startup_s"] for r in per["sac"]), 1),
        fast_sac_startup_s=round(statistics.median(r["startup_s"] for r in per["fast_sac"]), 1),
        wall_ratio_incl_startup=round(statistics.median(r["wall_s"] for r in per["sac"])
                                      / statistics.median(r["wall_s"] for r in per["fast_sac"]), 2),
        final_mean_reward=" ".join(f"{r['trainer']}:{r['final_mean_reward']:.2f}" for r in runs),
    )
    print_result(result, args.json, width=24)
    return result

