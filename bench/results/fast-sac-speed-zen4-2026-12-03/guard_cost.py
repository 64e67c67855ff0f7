"""Guard cost of fast_sac's whole step: step ms normally vs under skip_guard_eval_unsafe, one process.
usage: python guard_cost.py VARIANT   (full | dicttags: torch._dynamo.config.use_recursive_dict_tags_for_guards); PREC=auto|fp32"""
import os, sys, tempfile, time, logging
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
variant = sys.argv[1]
if variant == "dicttags":
    torch._dynamo.config.use_recursive_dict_tags_for_guards = True
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
torch.manual_seed(0)
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": os.environ.get("PREC", "fp32")}, sizes=sizes)
    common.fill(tr, spec, 5000, np.random.default_rng(0))
    for _ in range(40):
        tr.update_once()
    batch = tr.sample_batch()
    opt = tr.optimizer
    print("whole_mode", opt.head.loss_step.whole_mode, "onednn", opt.head.matmul_kernels.use_onednn, "prec", opt.head.bf16_update)
    def normal():
        opt.update(batch)
    def skip():
        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
            opt.update(batch)
    r = common.time_interleaved({"normal": normal, "skip": skip}, updates=600, warmup=20, blocks=12, clock=time.thread_time)
    print(variant, {k: round(v, 3) for k, v in r.items()}, "guard ms", round(r["normal"] - r["skip"], 3))
