"""Where the update's aten::copy_ calls come from: a Python profile hook over one update (prints any Python-level
copy_ and the compiled call), then the torch profiler's count of aten::copy_ per update.
usage: python copy_callers.py   (from the repository root)"""
import os, sys, tempfile, logging, collections
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
set_log_level(logging.WARNING)
torch.set_num_threads(1)
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": "bf16"}, sizes=sizes)
    common.fill(tr, spec, 3000, np.random.default_rng(0))
    for _ in range(5): tr.update_once()
    seen = collections.Counter()
    def prof(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") in ("copy_", "inductor_entry_cpp"):
            seen[(arg.__name__, frame.f_code.co_filename.split("site-packages/")[-1], frame.f_lineno, frame.f_code.co_name)] += 1
    sys.setprofile(prof)
    tr.update_once()
    sys.setprofile(None)
    for k, n in seen.most_common(): print(n, k)
    with torch.profiler.profile() as p:
        tr.update_once()
    print("profiler copy_ per update", sum(1 for e in p.events() if e.name == "aten::copy_"))
