"""Both probes of ``update_precision: auto`` in fresh processes, one thread: the eager layer probe of 6bb1236 and
before (a Bf16Linear's forward and backward, reproduced here) and ``bf16_matmul.probe_product_times`` (96ee628 on),
each twice per process (the first pays oneDNN's set-up).  One JSON line per process.
usage: python probe_kinds.py [processes]   (from the repository root)"""
import json
import subprocess
import sys

CHILD = r'''
import json, time, torch
from mlagents.torch_utils import nn
from mlagents_plugins.common import bf16_matmul
from mlagents_plugins.common.timing import time_interleaved
torch.set_num_threads(1)

def layer_times(features=256, rows=256, calls=40):
    """6bb1236's probe_layer_times: one layer's forward and backward, fp32 against bf16 products, casts included."""
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        layer = nn.Linear(features, features)
    layer.__class__ = bf16_matmul.Bf16Linear
    data = torch.randn(rows, features, generator=generator).requires_grad_(True)
    grad_out = torch.randn(rows, features, generator=generator)
    def step(bf16):
        layer.weight.grad = layer.bias.grad = data.grad = None
        with bf16_matmul.bf16_products(bf16):
            layer(data).backward(grad_out)
    return time_interleaved({"fp32": lambda: step(False), "bf16": lambda: step(True)}, updates=calls,
                            warmup=3, blocks=5, clock=time.process_time)

out = {}
for i in (1, 2):
    t = time.process_time(); out[f"layer{i}"] = layer_times(); out[f"layer{i}_s"] = time.process_time() - t
    t = time.process_time(); out[f"products{i}"] = bf16_matmul.probe_product_times(); out[f"products{i}_s"] = time.process_time() - t
print(json.dumps(out))
'''



def sig7(x):
    """Numbers kept to 7 significant digits, as every record under bench/results."""
    if isinstance(x, float):
        return float(f"{x:.7g}")
    if isinstance(x, dict):
        return {k: sig7(v) for k, v in x.items()}
    return x


n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
for _ in range(n):
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    d = json.loads(lines[-1]) if lines else {"error": r.stderr[-500:]}
    for kind in ("layer", "products"):
        for i in (1, 2):
            if f"{kind}{i}" in d:
                d[f"{kind}{i}_ratio"] = round(d[f"{kind}{i}"]["bf16"] / d[f"{kind}{i}"]["fp32"], 3)
    print(json.dumps(sig7(d)), flush=True)
