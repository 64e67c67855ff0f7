"""fast_sac's update (2x256, batch 256, one thread, update_precision auto) in this REPO: median ms of blocks."""
import os, sys, tempfile, time, logging, json
import numpy as np
sys.path.insert(0, os.environ["REPO"])
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, sizes={"hidden_units": 256, "num_layers": 2, "batch_size": 256})
    common.fill(tr, spec, 5000, np.random.default_rng(0))
    for _ in range(60):
        tr.update_once()
    batch = tr.sample_batch()
    res = []
    for b in range(8):
        t0 = time.thread_time()
        for _ in range(150):
            tr.optimizer.update(batch)
        res.append((time.thread_time() - t0) / 150 * 1e3)
    print(json.dumps({"repo": os.environ["REPO"], "median_ms": round(float(np.median(res)), 3), "blocks": [round(x, 3) for x in res],
                      "whole": tr.optimizer.head.loss_step.whole_mode, "bf16": tr.optimizer.head.bf16_update}))
