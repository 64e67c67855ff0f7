"""Per scene: reached, median steps to threshold, finals per seed, update seconds and run CPU, before against after."""
import json, statistics, sys
sys.path.insert(0, "/work/main")
from bench.metrics import steps_to_threshold, collapsed

def load(path, trainer="fast_sac"):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return [r for r in rows if r["trainer"] == trainer and r["mode"] == "in_process"]

def cell(runs):
    hits = [h[0] for h in (steps_to_threshold(r["curve"], r["threshold"]) for r in runs) if h]
    finals = [r["final_mean_reward"] for r in runs]
    fell = sum(collapsed(r["curve"], r["final_mean_reward"]) for r in runs)
    upd = sum(r.get("update_seconds") or 0 for r in runs)
    cpu = sum(r.get("run_cpu_seconds") or 0 for r in runs)
    return (f"{len(hits)}/{len(runs)} {statistics.median(hits) if hits else '-'}; finals "
            + " ".join(f"{f:.2f}" for f in finals) + f" (median {statistics.median(finals):.2f}); fell {fell}; "
            f"update {upd:.0f} s, run CPU {cpu:.0f} s"), upd, cpu

before, after = load(sys.argv[1]), load(sys.argv[2])
print(f"| scene | before ({sys.argv[1].split('/')[-2]}) | after ({sys.argv[2].split('/')[-2]}) | update s after/before | run CPU after/before |")
print("| --- | --- | --- | --- | --- |")
for scene in sorted({r["scene"] for r in after}):
    b = sorted([r for r in before if r["scene"] == scene], key=lambda r: r["seed"])
    a = sorted([r for r in after if r["scene"] == scene], key=lambda r: r["seed"])
    (cb, ub, pb), (ca, ua, pa) = cell(b), cell(a)
    print(f"| {scene} | {cb} | {ca} | {ua / ub if ub else float('nan'):.2f} | {pa / pb if pb else float('nan'):.2f} |")
