"""CPU of the first compiled update (warm caches) and Dynamo's own compile timers."""
import os, sys, tempfile, time, logging
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
with tempfile.TemporaryDirectory() as tmp:
    torch.manual_seed(0)
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": "bf16"}, sizes=sizes)
    common.fill(tr, spec, 3000, np.random.default_rng(0))
    tr.update_once()
    t0 = time.process_time(); tr.update_once(); print("first compiled update CPU s", round(time.process_time() - t0, 3))
    from torch._dynamo.utils import compile_times, counters
    print(compile_times(repr="str", aggregate=True))
    print({k: dict(v) for k, v in counters.items() if k in ("aot_autograd", "inductor", "dynamo_cache")})
