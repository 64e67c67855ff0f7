"""Issue 56's deviations screen as tables: every record of this folder, plus the configs/gym fast_sac runs of the
MuJoCo table (mujoco-table-2026-12-01, cbc1d75, same Zen 5 kind; seeds 1-2 on HalfCheetah-v5 rerun here reproduce
them to the digit) where this folder has no config run of that machine, task and seed.
Usage: python bench/results/fast-sac-hc-deviations-2026-12-02/summary.py  (prints markdown)"""
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "..", "mujoco-table-2026-12-01", "runs.jsonl")
VARIANTS = ("config", "nolayernorm", "nstep1")


def machine(record):
    kind = record["machine_kind"]
    return "Zen 5" if "family 26" in kind else ("Intel" if "Intel" in kind else kind)


def final(record):
    return record["eval"][-1]["return_mean"]


cells = {}  # (task, seed, machine) -> {variant: (final, source)}
for path in sorted(glob.glob(os.path.join(HERE, "*.jsonl"))):
    variant = os.path.basename(path).rsplit("-", 1)[1][:-len(".jsonl")]
    for line in open(path):
        r = json.loads(line)
        cells.setdefault((r["scene"], r["seed"], machine(r)), {})[variant] = (final(r), os.path.basename(path))
for line in open(TABLE):
    r = json.loads(line)
    if r["trainer"] != "fast_sac":
        continue
    hyper = r["config"]["hyperparameters"]
    if hyper.get("learning_rate") != 0.001 or "critic_batch_renorm" in hyper:
        continue
    key = (r["scene"], r["seed"], machine(r))
    if key in cells and "config" not in cells[key]:
        cells[key]["config"] = (final(r), "mujoco-table-2026-12-01")

for task in sorted({k[0] for k in cells}):
    print(f"\n{task}, evaluation return at 100k (10 episodes, tanh(mean)):\n")
    print("| seed | machine | " + " | ".join(VARIANTS) + " | plain / config |")
    print("| --- | --- | " + " | ".join("---" for _ in VARIANTS) + " | --- |")
    for key in sorted(k for k in cells if k[0] == task):
        row = cells[key]
        vals = [f"{row[v][0]:.0f}" if v in row else "" for v in VARIANTS]
        ratio = f"{row['nolayernorm'][0] / row['config'][0]:.2f}" if {"config", "nolayernorm"} <= set(row) else ""
        print(f"| {key[1]} | {key[2]} | " + " | ".join(vals) + f" | {ratio} |")
    print()
    for v in VARIANTS:
        finals = [cells[k][v][0] for k in cells if k[0] == task and v in cells[k] and k[2] == "Zen 5"]
        if finals:
            print(f"- Zen 5 median {v}: {statistics.median(finals):.0f} over {len(finals)} seeds")
