"""usage: REPO=<checkout of 642cb31> python polyak_ab.py.  fused Polyak (in the whole step) vs eager Polyak after it, same process, interleaved blocks, thread CPU."""
import os, sys, tempfile, time, logging, json
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
class NoopProjection:
    def __len__(self): return 1
    def project_(self): pass
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, sizes={"hidden_units": 256, "num_layers": 2, "batch_size": 256})
    common.fill(tr, spec, 5000, np.random.default_rng(0))
    for _ in range(60):
        tr.update_once()
    h = tr.optimizer.head; real = h.weight_projection
    batch = tr.sample_batch()
    def fused():
        h.weight_projection = real; tr.optimizer.update(batch)
    def eager():
        h.weight_projection = NoopProjection(); tr.optimizer.update(batch)
    for f in (fused, eager):
        for _ in range(20): f()
    res = {"fused": [], "eager": []}
    for b in range(10):
        for name, f in (("fused", fused), ("eager", eager)):
            t0 = time.thread_time()
            for _ in range(100): f()
            res[name].append((time.thread_time() - t0) / 100 * 1e3)
    print(json.dumps({k: round(float(np.median(v)), 3) for k, v in res.items()}), h.loss_step.whole_mode)
