"""Evaluation returns at 100k (final checkpoint, and the mean of the last three: 80k, 90k, 100k) of this study's
fast_sac variants beside constant lr 1e-3 (fast-sac-critic-parts-2026-11-30 seeds 0-2, fast-sac-lr-linear-2026-12-01
seeds 3-4), today's fast_sac and SB3 SAC (mujoco-table-2026-11-30 seeds 0-2 at 0734283, this study's five-seed/ seeds
3-4).  Prints a markdown table.  Run from the repository root."""
import glob
import json
import os
import statistics

R = "bench/results/"
HERE = R + "fast-sac-norm-bins-2026-12-01/"
SOURCES = [
    ("SB3 SAC", [R + "mujoco-table-2026-11-30/runs.jsonl", HERE + "five-seed/runs.jsonl"], "sb3_sac"),
    ("fast_sac, default (lr 3e-4)", [R + "mujoco-table-2026-11-30/runs.jsonl", HERE + "five-seed/runs.jsonl"],
     "fast_sac"),
    ("fast_sac, lr 1e-3", sorted(glob.glob(R + "fast-sac-critic-parts-2026-11-30/mujoco-lr1e-3/s*/runs.jsonl"))
     + [R + "fast-sac-lr-linear-2026-12-01/lr1e-3-seeds34/runs.jsonl"], "fast_sac"),
]
for sub, label in (("norm", "fast_sac, lr 1e-3, normalize"), ("bins", "fast_sac, lr 1e-3, 101 bins"),
                   ("norm-bins", "fast_sac, lr 1e-3, normalize, 101 bins")):
    SOURCES.append((label, sorted(glob.glob(HERE + sub + "/**/runs.jsonl", recursive=True)), "fast_sac"))


def rows():
    for label, paths, trainer in SOURCES:
        for path in paths:
            if not os.path.isfile(path):
                continue
            for line in open(path):
                r = json.loads(line)
                if r["trainer"] != trainer or r.get("error") or r["max_steps"] != 100000:
                    continue
                ev = sorted(r["eval"], key=lambda e: e["step"])
                last3 = [e["return_mean"] for e in ev if e["step"] >= 79000][-3:]
                yield label, r["scene"], r["seed"], ev[-1]["return_mean"], statistics.mean(last3), r["steps_per_cpu_s"]


def main():
    table = {}
    for label, scene, seed, final, last3, speed in rows():
        table.setdefault((scene, label), {})[seed] = (final, last3, speed)  # a later record of a seed replaces
    print("| task | variant | finals by seed | median final | mean of last 3 checkpoints by seed | median of those |")
    print("| --- | --- | --- | --- | --- | --- |")
    order = [label for label, _, _ in SOURCES]
    for (scene, label), runs in sorted(table.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        seeds = sorted(runs)
        finals = " / ".join(f"{runs[s][0]:.0f}" for s in seeds)
        last = " / ".join(f"{runs[s][1]:.0f}" for s in seeds)
        print(f"| {scene} | {label} (seeds {','.join(map(str, seeds))}) | {finals} | "
              f"{statistics.median(runs[s][0] for s in seeds):.0f} | {last} | "
              f"{statistics.median(runs[s][1] for s in seeds):.0f} |")


if __name__ == "__main__":
    main()
