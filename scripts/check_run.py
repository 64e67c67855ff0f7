"""Summarise a finished mlagents-learn run from its TensorBoard events: reward curve and threshold.

    python scripts/check_run.py results/demo Balance --scene balance   # threshold from the scene
    python scripts/check_run.py results/demo Balance --threshold 5.0

Prints the mean episode reward at each summary and the first step at which it reached the threshold;
exits 1 if it never did (so `make demo` fails loudly when the demo stops learning).
"""
import argparse
import glob
import os
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

REWARD_TAG = "Environment/Cumulative Reward"


def reward_curve(run_dir: str, behavior: str):
    files = sorted(glob.glob(os.path.join(run_dir, behavior, "events.out.tfevents.*")))
    if not files:
        raise SystemExit(f"no TensorBoard events under {os.path.join(run_dir, behavior)}")
    points = {}
    for f in files:
        acc = EventAccumulator(f, size_guidance={"scalars": 0})
        acc.Reload()
        if REWARD_TAG in acc.Tags().get("scalars", []):
            for ev in acc.Scalars(REWARD_TAG):
                points[ev.step] = ev.value
    return sorted(points.items())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("behavior")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--threshold", type=float, help="mean episode reward that counts as solved")
    g.add_argument("--scene", help="stand-in scene name: use its documented success threshold")
    a = p.parse_args(argv)
    if a.scene is not None:
        from mlagents_plugins.envs.scenes import SCENES

        if a.scene not in SCENES:
            p.error(f"--scene {a.scene!r} is not a stand-in scene; choose one of {sorted(SCENES)}")
        a.threshold = float(SCENES[a.scene].success_threshold)
    curve = reward_curve(a.run_dir, a.behavior)
    reached = next((step for step, r in curve if r >= a.threshold), None)
    for step, r in curve:
        print(f"  step {step:>7}: mean reward {r:7.3f}{'  <- threshold' if step == reached else ''}")
    if reached is None:
        print(f"{a.behavior}: mean reward never reached {a.threshold} ({len(curve)} summaries)")
        return 1
    print(f"{a.behavior}: reached the success threshold {a.threshold} at step {reached}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
