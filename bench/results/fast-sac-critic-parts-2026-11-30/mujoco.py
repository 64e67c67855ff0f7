"""MuJoCo at 100k: fast_sac at learning rate 1e-3 (mujoco-lr1e-3/) against today's fast_sac (3e-4) and SB3 SAC from
the MuJoCo table's invocation at the same commit (../mujoco-table-2026-11-30/runs.jsonl): evaluation return at each
10k checkpoint and the final one, env steps per CPU second; then the medians over seeds."""
import glob
import json
import statistics

ROWS = [("fast_sac, lr 1e-3", r) for p in sorted(glob.glob("mujoco-lr1e-3/*/runs.jsonl")) for r in map(json.loads, open(p))]
ROWS += [(("fast_sac, lr 3e-4 (today)" if r["trainer"] == "fast_sac" else "SB3 SAC"), r)
         for r in map(json.loads, open("../mujoco-table-2026-11-30/runs.jsonl")) if r["commit"].startswith("0734283")]

print("| variant | task | seed | " + " | ".join(f"{k}0k" for k in range(1, 11)) + " | final | env steps / CPU s |")
print("| --- | --- | --- | " + " | ".join("---" for _ in range(10)) + " | --- | --- |")
finals = {}
for task in ("HalfCheetah-v5", "Hopper-v5"):
    for name, r in sorted((x for x in ROWS if x[1]["scene"] == task), key=lambda x: (x[0], x[1]["seed"])):
        ev = [round(e["return_mean"]) for e in r["eval"]]
        cells = ev[:10] + [""] * (10 - len(ev[:10]))
        print(f"| {name} | {task} | {r['seed']} | " + " | ".join(str(c) for c in cells) + f" | {ev[-1]} | {r['steps_per_cpu_s']:.1f} |")
        finals.setdefault((task, name), []).append(ev[-1])
print()
print("| task | variant | seeds | median final (min - max) |")
print("| --- | --- | --- | --- |")
for (task, name), v in finals.items():
    print(f"| {task} | {name} | {len(v)} | {statistics.median(v):.0f} ({min(v)} - {max(v)}) |")
