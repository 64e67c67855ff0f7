"""Does Dynamo's experimental caching precompile (TORCH_CACHING_PRECOMPILE=1) skip the whole step's trace in a later
process?  Each process: fast_sac trainer at 2x256 (gym sizes), buffer filled, updates until the whole step has run
compiled; prints CPU s of the update that compiled (the first whole step), the dynamo_cache counters, and with SAVE=1
calls torch.compiler.save_cache_artifacts() at the end (which writes the Dynamo packages)."""
import os, sys, tempfile, time, logging, json
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
out = {"flag": os.environ.get("TORCH_CACHING_PRECOMPILE"), "save": os.environ.get("SAVE")}
with tempfile.TemporaryDirectory() as tmp:
    torch.manual_seed(0)
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": "bf16"}, sizes=sizes)
    common.fill(tr, spec, 3000, np.random.default_rng(0))
    step = tr.optimizer.head.loss_step
    times = []
    for i in range(6):
        t0 = time.process_time(); s = tr.update_once(); times.append(round(time.process_time() - t0, 3))
    out["update_cpu_s"] = times
    out["whole_mode"] = step.whole_mode
    out["whole_error"] = step.whole_error
    out["q1_loss"] = float(s.get("Losses/Q1 Loss", float("nan"))) if isinstance(s, dict) else None
    from torch._dynamo.utils import counters
    out["dynamo_cache"] = dict(counters.get("dynamo_cache", {}))
    if os.environ.get("SAVE") == "1":
        try:
            t0 = time.process_time(); art = torch.compiler.save_cache_artifacts(); out["save_s"] = round(time.process_time() - t0, 3)
            out["saved_bytes"] = len(art[0]) if art else None
        except Exception as e:
            out["save_error"] = f"{type(e).__name__}: {e}"[:400]
    from torch._dynamo.package import DynamoCache
    p = DynamoCache.path_prefix()
    out["dynamo_dir"] = p
    out["dynamo_entries"] = sorted(os.listdir(p)) if os.path.isdir(p) else None
print(json.dumps(out))
