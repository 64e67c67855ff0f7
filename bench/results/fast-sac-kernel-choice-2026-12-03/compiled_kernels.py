"""fast_sac's compiled update with each fp32 matmul kernel, in one process, timed interleaved (issue 55).

One fast_sac (configs/fast_sac_balance.yaml at --hidden x 2 layers, batch 256, one torch thread, seed 0) with the
oneDNN probe's answer forced to yes, so ``MatmulKernelChooser`` is active; after 40 updates (its eager timing and
the compile) the kernel is set by hand before each step: ATen's default, or oneDNN ("medium" fp32 precision).  Dynamo
guards on that global setting, so both compiled graphs exist and alternate; ``time_interleaved`` on the thread's CPU
clock, median of 12 blocks of 50 steps.  Prints one JSON line.

    python compiled_kernels.py --precision auto --hidden 256
"""
import argparse
import json
import logging
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.environ.get("REPO", os.getcwd()))

import torch  # noqa: E402

from bench.speed import common  # noqa: E402
from mlagents_envs.logging_util import set_log_level  # noqa: E402
from mlagents_plugins.common import fast_kernels  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--precision", default="fp32", choices=["fp32", "auto", "bf16"])
p.add_argument("--hidden", type=int, default=256)
args = p.parse_args()
set_log_level(logging.WARNING)
torch.set_num_threads(1)
fast_kernels._ONEDNN_MATMUL_OK = True
sizes = {"hidden_units": args.hidden, "num_layers": 2, "batch_size": 256}
torch.manual_seed(0)
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": args.precision}, sizes=sizes)
    common.fill(tr, spec, 5000, np.random.default_rng(0))
    ch = tr.optimizer.head.matmul_kernels
    ch.active, ch.use_onednn = True, None  # the chooser as where the probe says yes
    for _ in range(40):
        tr.update_once()
    batch = tr.sample_batch()
    opt = tr.optimizer

    def step(onednn):
        def f():
            ch.use_onednn = onednn
            opt.update(batch)
        return f

    ms = common.time_interleaved({"default": step(False), "oneDNN": step(True)}, updates=600, warmup=10, blocks=12,
                                 clock=time.thread_time)
    print(json.dumps({"precision": args.precision, "hidden": args.hidden, "bf16_update": opt.head.bf16_update,
                      "whole_mode": opt.head.loss_step.whole_mode, "default_ms": round(ms["default"], 3),
                      "onednn_ms": round(ms["oneDNN"], 3), "ratio": round(ms["oneDNN"] / ms["default"], 3)}),
          flush=True)
