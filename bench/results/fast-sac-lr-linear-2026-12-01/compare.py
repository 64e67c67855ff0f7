"""Evaluation returns at 100k (final checkpoint and the mean of the last three: 80k, 90k, 100k) of fast_sac with
learning rate 1e-3 and the linear schedule (this folder's runs.jsonl) beside constant 1e-3
(fast-sac-critic-parts-2026-11-30/mujoco-lr1e-3/s*), today's fast_sac and SB3 SAC (mujoco-table-2026-11-30, 0734283).
Prints a markdown table.  Run from the repository root."""
import json
import statistics

R = "bench/results/"
SOURCES = [
    ("fast_sac, lr 1e-3 linear", R + "fast-sac-lr-linear-2026-12-01/runs.jsonl", "fast_sac"),
    ("fast_sac, lr 1e-3", R + "fast-sac-critic-parts-2026-11-30/mujoco-lr1e-3/s0/runs.jsonl", "fast_sac"),
    ("fast_sac, lr 1e-3", R + "fast-sac-critic-parts-2026-11-30/mujoco-lr1e-3/s1/runs.jsonl", "fast_sac"),
    ("fast_sac, lr 1e-3", R + "fast-sac-critic-parts-2026-11-30/mujoco-lr1e-3/s2/runs.jsonl", "fast_sac"),
    ("fast_sac, lr 3e-4 (default)", R + "mujoco-table-2026-11-30/runs.jsonl", "fast_sac"),
    ("SB3 SAC", R + "mujoco-table-2026-11-30/runs.jsonl", "sb3_sac"),
]


def rows():
    for label, path, trainer in SOURCES:
        for line in open(path):
            r = json.loads(line)
            if r["trainer"] != trainer or r.get("error"):
                continue
            ev = sorted(r["eval"], key=lambda e: e["step"])
            last3 = [e["return_mean"] for e in ev if e["step"] >= 79000]
            yield label, r["scene"], r["seed"], ev[-1]["return_mean"], statistics.mean(last3[-3:]), r["steps_per_cpu_s"]


def main():
    table = {}
    for label, scene, seed, final, last3, speed in rows():
        table.setdefault((scene, label), []).append((seed, final, last3, speed))
    print("| task | variant | finals by seed | median final | mean of last 3 checkpoints by seed | median of those |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (scene, label), runs in sorted(table.items()):
        runs.sort()
        finals = " / ".join(f"{f:.0f}" for _, f, _, _ in runs)
        last = " / ".join(f"{l:.0f}" for _, _, l, _ in runs)
        print(f"| {scene} | {label} | {finals} | {statistics.median(f for _, f, _, _ in runs):.0f} | {last} | "
              f"{statistics.median(l for _, _, l, _ in runs):.0f} |")


if __name__ == "__main__":
    main()
