"""The study's pair table from pair-*/runs.jsonl: python summary.py (from this folder)."""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
rows = []
for path in glob.glob(os.path.join(HERE, "pair-*", "runs.jsonl")):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        runs[r["trainer"]] = r
    ours, sb3 = runs.get("fast_sac"), runs.get("sb3_sac")
    if not ours or not sb3:
        continue
    final = [e["return_mean"] for e in ours["eval"] if e["step"] == max(x["step"] for x in ours["eval"])][0]
    rows.append((ours["started"], os.path.basename(os.path.dirname(path)), ours["commit"][:7], ours["scene"],
                 ours["update_precision"], ours["steps_per_cpu_s"], sb3["steps_per_cpu_s"],
                 ours["steps_per_cpu_s"] / sb3["steps_per_cpu_s"], final, sb3["eval"][-1]["return_mean"]))
print("| records | code | started (UTC) | task | fast_sac env steps / CPU s | SB3 SAC | ratio | fast_sac eval | SB3 eval |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for started, name, commit, task, prec, ours, sb3, ratio, ev, ev_sb3 in sorted(rows):
    print(f"| [{name}]({name}/runs.jsonl) | {commit} | {started[11:16]} | {task} | {ours:.1f} ({prec}) | {sb3:.1f} | "
          f"{ratio:.2f} | {ev:.1f} | {ev_sb3:.1f} |")
