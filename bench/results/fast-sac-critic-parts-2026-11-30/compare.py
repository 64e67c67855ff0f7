"""The validation screen at learning rate 1e-3 against today's default (3e-4), per scene: seeds that reached the
threshold, the median step of reaching it, final mean rewards per seed and the run CPU ratio."""
import collections
import json
import statistics
import sys

BEFORE = "../fast-sac-network-2026-11-30/screens/screen-before.jsonl"  # today's defaults, c50405b (same 2x128 fp32 path)
AFTER = "screen-lr1e-3/runs.jsonl"


def reached_at(r):
    for step, _, reward in r["curve"]:
        if reward >= r["threshold"]:
            return step
    return None


def load(path):
    out = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        out[r["scene"]].append(r)
    return out


def cell(rows):
    rows = sorted(rows, key=lambda r: r["seed"])
    hits = [reached_at(r) for r in rows]
    steps = [h for h in hits if h is not None]
    med = f"{statistics.median(steps):,.0f}" if steps else "-"
    finals = " / ".join(f"{r['final_mean_reward']:.2f}" for r in rows)
    return f"{len(steps)}/{len(rows)}, {med}; {finals}"


if __name__ == "__main__":
    before, after = load(sys.argv[1] if len(sys.argv) > 1 else BEFORE), load(AFTER)
    print("| scene (threshold) | lr 3e-4 (default): reached, median step; finals | lr 1e-3 | run CPU 1e-3 / 3e-4 |")
    print("| --- | --- | --- | --- |")
    for scene in sorted(after):
        cpu_b = sum(r["run_cpu_seconds"] for r in before[scene])
        cpu_a = sum(r["run_cpu_seconds"] for r in after[scene])
        print(f"| {scene} ({after[scene][0]['threshold']:g}) | {cell(before[scene])} | {cell(after[scene])} | {cpu_a / cpu_b:.2f} |")
