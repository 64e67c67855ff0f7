"""Table of the screen's records: python bench/results/fast-sac-critic-screen-2026-12-02/summary.py [STUDY_DIR].

One row per records file (<task>-s<seed>-<k>k-<variant>.jsonl): the evaluation returns at each 10k, the env steps
per CPU second and the CPU per env step relative to the same task, seed and budget's `config` record."""
import json
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
rows = {}
for path in sorted(here.glob("*.jsonl")):
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("error"):
            continue
        parts = path.stem.split("-")
        prefix, variant = "-".join(parts[:3]), "-".join(parts[3:])
        rows[(prefix, variant)] = r
for (prefix, variant), r in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1] != "config", kv[0][1])):
    base = rows.get((prefix, "config"))
    # the evaluation at or after each 10k (Hopper's episodes end anywhere, so its checkpoints fall past the mark)
    marks = range(10000, r["max_steps"] + 1, 10000)
    evals = " ".join(f"{min((e for e in r['eval'] if e['step'] >= m - 100), key=lambda e: e['step'])['return_mean']:7.0f}"
                     for m in marks if any(e["step"] >= m - 100 for e in r["eval"]))
    cost = f"{base['steps_per_cpu_s'] / r['steps_per_cpu_s']:.2f}x" if base else "-"
    print(f"{prefix:26s} {variant:10s} {evals}   {r['steps_per_cpu_s']:6.1f} steps/CPU s  CPU/step {cost}  "
          f"final {r['eval'][-1]['return_mean']:.0f} at {r['eval'][-1]['step']}")
