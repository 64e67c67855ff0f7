"""Issue 56's bar against the configuration it was filed on: python bench/results/fast-sac-gym-config-gain-2026-12-02/summary.py

configs/gym's fast_sac when issue 56 was filed (lr 3e-4, no observation normalization: `filing`) against today's
(lr 1e-3, `normalize: true`: `current`) and SB3's SAC, every record evaluated as `bench gym` does today (the
deterministic action `tanh(mean)`, patch `deterministic_tanh`), at 100k steps. Records of this study (this machine)
and of the earlier studies named in SOURCES (an AMD EPYC Zen 5), one row per (config, task, seed, machine kind)."""
import json
import pathlib
import statistics

here = pathlib.Path(__file__).parent
results = here.parent
SOURCES = [  # (config label, records file)
    ("filing", results / "fast-sac-norm-bins-2026-12-01/tanh/default-hc/runs.jsonl"),
    ("filing", here / "filing/runs.jsonl"),
    ("current", results / "mujoco-table-2026-12-01/runs.jsonl"),
    ("current", here / "current/runs.jsonl"),
    ("sb3_sac", results / "mujoco-table-2026-12-01/runs.jsonl"),
]
TASKS = ("HalfCheetah-v5", "Hopper-v5")


def config_of(record):
    if record["trainer"] == "sb3_sac":
        return "sb3_sac"
    hp = record["config"]["hyperparameters"]
    normalize = record["config"].get("network_settings", {}).get("normalize", False)
    if hp.get("learning_rate") == 0.0003 and not normalize:
        return "filing"
    if hp.get("learning_rate") == 0.001 and normalize:
        return "current"
    return None


def kind_of(record):
    return "Zen 4" if "family 25, model 17" in record["machine_kind"] else (
        "Zen 5" if "family 26" in record["machine_kind"] else record["machine_kind"])


rows = []
for label, path in SOURCES:
    if not path.exists():
        continue
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("error") or r["scene"] not in TASKS or r.get("max_steps") != 100000 or config_of(r) != label:
            continue
        if r["trainer"] not in ("fast_sac", "sb3_sac"):
            continue
        rows.append({"config": label, "task": r["scene"], "seed": r["seed"], "kind": kind_of(r),
                     "return": r["eval"][-1]["return_mean"], "at": r["eval"][-1]["step"],
                     "steps_per_cpu_s": r["steps_per_cpu_s"], "file": str(path.relative_to(results))})

print("| config | task | seed | machine | evaluation return at 100k | env steps / CPU s | records |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for row in sorted(rows, key=lambda x: (x["task"], x["config"], x["seed"], x["kind"])):
    print(f"| {row['config']} | {row['task']} | {row['seed']} | {row['kind']} | {row['return']:.0f} | "
          f"{row['steps_per_cpu_s']:.1f} | {row['file']} |")
print()
print("| task | filing (median) | current (median) | current / filing | SB3 SAC (median) |")
print("| --- | --- | --- | --- | --- |")
for task in TASKS:
    med = {}
    for label in ("filing", "current", "sb3_sac"):
        by_seed = {}
        for row in rows:
            if row["task"] == task and row["config"] == label:
                by_seed.setdefault(row["seed"], []).append(row["return"])
        # one value per seed: a seed run on two machines counts with the mean of its runs
        values = [statistics.mean(v) for v in by_seed.values()]
        med[label] = (statistics.median(values), len(values)) if values else (float("nan"), 0)
    ratio = med["current"][0] / med["filing"][0]
    print(f"| {task} | {med['filing'][0]:.0f} ({med['filing'][1]} seeds) | {med['current'][0]:.0f} "
          f"({med['current'][1]} seeds) | {ratio:.2f}x | {med['sb3_sac'][0]:.0f} ({med['sb3_sac'][1]} seeds) |")
