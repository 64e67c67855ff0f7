"""Issue 55: how steady is `update_precision: auto`'s start-up probe?  Runs the probe (bf16_matmul.probe_layer_times,
the 256x256 layer's forward and backward on 256 rows, fp32 against bf16 products) in N fresh processes at one thread
and prints one JSON line each: both times, their ratio, the decision, the probe's wall seconds with and without the
first-call set-up.  Usage: python probe_repeat.py N > probe.jsonl"""
import json
import subprocess
import sys

CHILD = r"""
import json, time, torch
torch.set_num_threads(1)
from mlagents_plugins.common import bf16_matmul as b
from mlagents_plugins.common.cpu_info import cpu_fields
t0 = time.perf_counter(); first = b.probe_layer_times(); t1 = time.perf_counter()
ms = b.probe_layer_times(); t2 = time.perf_counter()
f = cpu_fields()
print(json.dumps({"cpu": f.get("model name"), "family": f.get("cpu family"), "model": f.get("model"),
                  "bf16_flag": b.native_bf16_matmul("cpu"), "fp32_ms": round(ms["fp32"], 4),
                  "bf16_ms": round(ms["bf16"], 4), "ratio": round(ms["bf16"] / ms["fp32"], 3),
                  "decision": "bf16" if b.bf16_wins(ms) else "fp32",
                  "first_ratio": round(first["bf16"] / first["fp32"], 3),
                  "first_probe_s": round(t1 - t0, 3), "probe_s": round(t2 - t1, 3)}))
"""

for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    print(out.stdout.strip().splitlines()[-1], flush=True)
