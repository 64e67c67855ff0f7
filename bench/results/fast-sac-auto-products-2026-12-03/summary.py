"""The pairs' table of this study's REPORT: fast_sac and SB3 SAC env steps per CPU second per invocation (and
fast_sac_fp32 where the invocation ran it too).
usage: python summary.py   (reads <folder>/runs.jsonl of every pair-* folder here; rows in start order)"""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
print("| records | code | started | task | steps | auto chose (probe ratio) | fast_sac env steps / CPU s | SB3 SAC "
      "| ratio | fast_sac eval | SB3 eval |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
invocations = []
for path in glob.glob(os.path.join(HERE, "pair-*", "runs.jsonl")):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("error") is None:
            runs[r["trainer"]] = r
    invocations.append((min(r["started"] for r in runs.values()), path, runs))
for _, path, runs in sorted(invocations):  # in start order
    ours, sb3, fp32 = runs.get("fast_sac"), runs.get("sb3_sac"), runs.get("fast_sac_fp32")
    if not ours or not sb3:
        continue
    name = os.path.basename(os.path.dirname(path))
    rate, sb3_rate = ours["steps_per_cpu_s"], sb3["steps_per_cpu_s"]
    ratio = f"{rate / sb3_rate:.2f}"
    if fp32:  # the same invocation ran fast_sac with update_precision: fp32 too
        ratio += f" (fast_sac_fp32: {fp32['steps_per_cpu_s']:.1f}, {fp32['steps_per_cpu_s'] / sb3_rate:.2f}x)"
    chose = f"{ours.get('update_precision')} ({ours.get('bf16_probe_ratio')})"
    print(f"| [{name}]({name}/runs.jsonl) | {ours['commit'][:7]} | {ours['started'][11:16]} | {ours['scene']} "
          f"| {ours['max_steps']} "
          f"| {chose} | {rate:.1f} | {sb3_rate:.1f} | {ratio} | {ours['eval'][-1]['return_mean']:.1f} "
          f"| {sb3['eval'][-1]['return_mean']:.1f} |")
