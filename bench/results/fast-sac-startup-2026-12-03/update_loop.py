"""fast_sac's update at gym sizes (2x256, batch 256, bf16), warm; then N updates in a loop between two marker files (for perf)."""
import os, sys, tempfile, time, logging
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
with tempfile.TemporaryDirectory() as tmp:
    torch.manual_seed(0)
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": os.environ.get("PREC", "bf16")}, sizes=sizes)
    common.fill(tr, spec, 5000, np.random.default_rng(0))
    for _ in range(30):
        tr.update_once()
    batch = tr.sample_batch(); opt = tr.optimizer
    print("whole", opt.head.loss_step.whole_mode, flush=True)
    open("/tmp/loop_start", "w").close()
    t0 = time.process_time()
    for _ in range(n):
        opt.update(batch)
    dt = time.process_time() - t0
    print(f"update CPU ms {1000 * dt / n:.3f}", flush=True)
