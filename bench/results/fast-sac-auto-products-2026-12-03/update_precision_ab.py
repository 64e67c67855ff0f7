"""fast_sac's update (update_once: sample and compiled whole step) at 2x256, batch 256, one thread: fp32 against bf16
products, two trainers in one process, blocks of 100 updates interleaved, thread CPU clock.  Prints each block's ms
and the medians (update_precision_ab.json holds the run of this study).
usage: python update_precision_ab.py [blocks]   (from the repository root)"""
import os, sys, tempfile, time, logging, json
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 6
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
res = {}
with tempfile.TemporaryDirectory() as tmp:
    trs = {}
    for prec in ("fp32", "bf16"):
        torch.manual_seed(0)
        tr, spec = common.make_trainer("fast_sac", os.path.join(tmp, prec), overrides={"update_precision": prec}, sizes=sizes)
        common.fill(tr, spec, 5000, np.random.default_rng(0))
        for _ in range(40):
            tr.update_once()
        trs[prec] = tr
        res[prec] = []
    for b in range(blocks):
        for prec, tr in trs.items():
            t0 = time.thread_time()
            for _ in range(100):
                tr.update_once()
            res[prec].append((time.thread_time() - t0) / 100 * 1e3)
print(json.dumps({k: [round(x, 3) for x in v] for k, v in res.items()}))
print({k: round(float(np.median(v)), 3) for k, v in res.items()}, "ratio bf16/fp32",
      round(float(np.median(res["bf16"]) / np.median(res["fp32"])), 3))
