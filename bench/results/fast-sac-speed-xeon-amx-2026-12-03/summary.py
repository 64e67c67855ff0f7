"""The pairs' table of this study's REPORT: fast_sac and SB3 SAC env steps per CPU second per invocation.
usage: python summary.py   (reads <folder>/runs.jsonl of every pair-* folder here)"""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
print("| records | code | steps | fast_sac env steps / CPU s | SB3 SAC | ratio | fast_sac eval | SB3 eval |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for path in sorted(glob.glob(os.path.join(HERE, "pair-*", "runs.jsonl"))):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("error") is None:
            runs[r["trainer"]] = r
    ours, sb3 = runs.get("fast_sac"), runs.get("sb3_sac")
    if not ours or not sb3:
        continue
    name = os.path.basename(os.path.dirname(path))
    ratio = ours["steps_per_cpu_s"] / sb3["steps_per_cpu_s"]
    print(f"| [{name}]({name}/runs.jsonl) | {ours['commit'][:7]} | {ours['max_steps']} | {ours['steps_per_cpu_s']:.1f} | "
          f"{sb3['steps_per_cpu_s']:.1f} | {ratio:.2f} | {ours['eval'][-1]['return_mean']:.1f} | {sb3['eval'][-1]['return_mean']:.1f} |")
