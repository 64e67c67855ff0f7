"""What ``MatmulKernelChooser`` picks in fresh processes (issue 55): one fast_sac per process (configs/fast_sac_balance.yaml
at 2x256, batch 256, one torch thread, update_precision --precision), updated until the chooser has decided from its
eager updates; prints one JSON line per process: the probe's answer, the decision and the chooser's medians.

    python eager_choices.py --precision auto --processes 10
"""
import argparse
import json
import os
import subprocess
import sys

CHILD = r'''
import json, logging, os, sys, tempfile
import numpy as np
sys.path.insert(0, os.getcwd())
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
torch.manual_seed(0)
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": sys.argv[1]},
                                   sizes={"hidden_units": 256, "num_layers": 2, "batch_size": 256})
    common.fill(tr, spec, 3000, np.random.default_rng(0))
    head = tr.optimizer.head
    ch = head.matmul_kernels
    n = 0
    while not ch.decided and n < 100:
        tr.update_once(); n += 1
    med = {k: sorted(v)[len(v) // 2] * 1e3 if v else None for k, v in ch.seconds.items()}
    print(json.dumps({"bf16_update": head.bf16_update, "active": ch.active, "onednn": ch.use_onednn,
                      "eager_default_ms": med[False], "eager_onednn_ms": med[True], "updates": n}))
'''

p = argparse.ArgumentParser()
p.add_argument("--precision", default="auto")
p.add_argument("--processes", type=int, default=10)
args = p.parse_args()
for _ in range(args.processes):
    out = subprocess.run([sys.executable, "-c", CHILD, args.precision], capture_output=True, text=True)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    print(lines[-1] if lines else json.dumps({"error": out.stderr[-500:]}), flush=True)
