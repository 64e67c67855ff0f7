"""Where fast_sac's update goes outside the compiled whole step: variants skipping one eager part each, interleaved
blocks, thread CPU clock, one process, one thread.  usage: python update_parts.py [blocks]"""
import os, sys, tempfile, time, logging, json
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
import mlagents_plugins.sac.head as head_mod
set_log_level(logging.WARNING)
torch.set_num_threads(1)
blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 10
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
torch.manual_seed(0)
real_stats, real_polyak = head_mod.sac_stats, head_mod.polyak_update_
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": os.environ.get("PREC", "auto")}, sizes=sizes)
    common.fill(tr, spec, 5000, np.random.default_rng(0))
    for _ in range(60):
        tr.update_once()
    batch = tr.sample_batch()
    opt = tr.optimizer
    h = opt.head
    print("whole_mode", h.loss_step.whole_mode, "prec", h.bf16_update, flush=True)
    def normal():
        opt.update(batch)
    def skip_guards():
        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
            opt.update(batch)
    def no_stats():
        head_mod.sac_stats = lambda *a, **k: {}
        try:
            opt.update(batch)
        finally:
            head_mod.sac_stats = real_stats
    def no_polyak():
        head_mod.polyak_update_ = lambda *a, **k: None
        try:
            opt.update(batch)
        finally:
            head_mod.polyak_update_ = real_polyak
    def whole_only():
        # the compiled whole step alone, with its argument lists built as _try_whole builds them
        h.loss_step._try_whole([h.adam], 3e-4, None, (batch,))
    variants = {"normal": normal, "skip_guards": skip_guards, "no_stats": no_stats, "no_polyak": no_polyak,
                "whole_only": whole_only}
    res = {k: [] for k in variants}
    n = 100
    for b in range(blocks):
        for k, f in variants.items():
            for _ in range(5):
                f()
            t0 = time.thread_time()
            for _ in range(n):
                f()
            res[k].append((time.thread_time() - t0) / n * 1e3)
    med = {k: float(np.median(v)) for k, v in res.items()}
    print(json.dumps({"median_ms": {k: round(v, 3) for k, v in med.items()},
                      "range_ms": {k: [round(min(v), 3), round(max(v), 3)] for k, v in res.items()}}))
    print("guards", round(med["normal"] - med["skip_guards"], 3), "stats", round(med["normal"] - med["no_stats"], 3),
          "polyak", round(med["normal"] - med["no_polyak"], 3), "outside whole", round(med["normal"] - med["whole_only"], 3))
