"""Which user functions Dynamo inlines while tracing fast_sac's whole step (warm cache), and the time in each (inclusive, by code)."""
import os, sys, tempfile, time, logging, collections
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
from torch._dynamo import symbolic_convert as sc
cnt = collections.Counter(); tot = collections.Counter(); stack = []
orig = sc.InliningInstructionTranslator.inline_call_
def patched(self, *a, **k):
    code = self.f_code
    key = f"{os.path.relpath(code.co_filename) if code.co_filename.startswith(os.getcwd()) else code.co_filename.split('site-packages/')[-1]}:{code.co_name}"
    t0 = time.process_time(); stack.append(0.0)
    try:
        return orig(self, *a, **k)
    finally:
        dt = time.process_time() - t0; child = stack.pop()
        cnt[key] += 1; tot[key] += dt - child
        if stack: stack[-1] += dt
sc.InliningInstructionTranslator.inline_call_ = patched
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
with tempfile.TemporaryDirectory() as tmp:
    torch.manual_seed(0)
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": "bf16"}, sizes=sizes)
    common.fill(tr, spec, 3000, np.random.default_rng(0))
    tr.update_once()
    t0 = time.process_time(); tr.update_once(); print("first compiled update CPU s", round(time.process_time() - t0, 3))
print("inlined calls", sum(cnt.values()), "self CPU s in inlined frames", round(sum(tot.values()), 2))
for k, v in sorted(tot.items(), key=lambda kv: -kv[1])[:45]:
    print(f"{v:6.3f} {cnt[k]:5d}  {k}")
