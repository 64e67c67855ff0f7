"""impala vs built-in ppo on the same stand-in scene: environment steps per second and steps to threshold.

Both train in process (``mlagents_plugins.envs.harness.train_in_process``, ML-Agents' own TrainerController)
on ``--scene`` (default balance) with ``--num-areas`` areas (default 2 = 8 agents, the vector task of the
brief).  ppo uses the harness' reference config (tests/envs/test_harness.py: buffer 2048, batch 256,
3 epochs); impala uses ``configs/impala_<scene>.yaml``; ``impala_threaded`` is the same with
``threaded: true``.  Columns:

* ``steps/s``: environment steps (all agents) / wall seconds of the whole run, updates included;
* ``steps to threshold``: the first summary step at which the mean of the last 3 summaries of
  "Environment/Cumulative Reward" reaches the scene's ``success_threshold`` (``-`` if never);
* ``final``: mean of the last 3 summaries.

Usage: ``python bench/impala_speed.py [--threads N] [--steps S] [--seeds K] [--scene NAME] [--json]``.
Numbers from a shared machine are noisy; ratios within one invocation compare like with like.
"""
import argparse
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

PPO = {
    "trainer_type": "ppo",
    "hyperparameters": {"batch_size": 256, "buffer_size": 2048, "learning_rate": 3e-4, "beta": 1e-3,
                        "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3, "learning_rate_schedule": "constant"},
    "network_settings": {"normalize": True, "hidden_units": 64, "num_layers": 2},
    "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
    "time_horizon": 64,
}
WINDOW = 3


def impala_config(scene: str, threaded: bool) -> Dict[str, Any]:
    import yaml

    with open(os.path.join(REPO, "configs", f"impala_{scene}.yaml")) as f:
        (cfg,) = yaml.safe_load(f)["behaviors"].values()
    cfg["threaded"] = threaded
    return cfg


def steps_to_threshold(curve: List[Tuple[int, float]], threshold: float) -> Optional[int]:
    for i in range(len(curve)):
        window = [v for _, v in curve[max(0, i - WINDOW + 1): i + 1]]
        if len(window) == WINDOW and np.mean(window) >= threshold:
            return curve[i][0]
    return None


def run_one(name: str, cfg: Dict[str, Any], scene: str, steps: int, seed: int, areas: int) -> Dict[str, Any]:
    from mlagents_plugins.envs.harness import train_in_process
    from mlagents_plugins.envs.scenes import SCENES

    cfg = dict(cfg, summary_freq=max(steps // 30, 500), checkpoint_interval=10 ** 9, keep_checkpoints=1)
    with tempfile.TemporaryDirectory() as out:
        res = train_in_process(cfg, scene, max_steps=steps, seed=seed, num_areas=areas, output_dir=out)
    lag = res.stats.get("IMPALA/Policy Lag", [])
    return {
        "trainer": name,
        "seed": seed,
        "steps": res.steps,
        "wall_s": round(res.wall_seconds, 2),
        "steps_per_s": round(res.steps / res.wall_seconds, 1),
        "steps_to_threshold": steps_to_threshold(res.reward_curve, SCENES[scene].success_threshold),
        "final": round(res.final_mean_reward, 3),
        "mean_policy_lag": round(float(np.mean([v for _, v in lag])), 2) if lag else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--steps", type=int, default=60000)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--scene", default="balance", choices=["balance", "branches"])
    p.add_argument("--num-areas", type=int, default=2)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args()

    import logging

    from mlagents.torch_utils import torch
    from mlagents_envs.logging_util import set_log_level

    set_log_level(logging.WARNING)
    torch.set_num_threads(args.threads)
    runs = []
    for seed in range(args.seeds):
        for name, cfg in (("ppo", PPO), ("impala", impala_config(args.scene, False)),
                          ("impala_threaded", impala_config(args.scene, True))):
            runs.append(run_one(name, cfg, args.scene, args.steps, seed, args.num_areas))
            if not args.json:
                print(f"  done {runs[-1]}", file=sys.stderr)
    summary = {}
    for name in ("ppo", "impala", "impala_threaded"):
        mine = [r for r in runs if r["trainer"] == name]
        reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]
        summary[name] = {
            "steps_per_s": round(float(np.mean([r["steps_per_s"] for r in mine])), 1),
            "steps_to_threshold_mean": round(float(np.mean(reached))) if reached else None,
            "reached": f"{len(reached)}/{len(mine)}",
            "final": round(float(np.mean([r["final"] for r in mine])), 3),
        }
    out = {"scene": args.scene, "num_areas": args.num_areas, "steps": args.steps, "threads": args.threads,
           "runs": runs, "summary": summary}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"scene={args.scene} areas={args.num_areas} steps={args.steps} seeds={args.seeds} threads={args.threads}")
    print(f"{'trainer':<16} {'steps/s':>8} {'steps to threshold':>19} {'reached':>8} {'final':>7}")
    for name, s in summary.items():
        stt = "-" if s["steps_to_threshold_mean"] is None else str(s["steps_to_threshold_mean"])
        print(f"{name:<16} {s['steps_per_s']:>8} {stt:>19} {s['reached']:>8} {s['final']:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
