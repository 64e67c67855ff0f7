"""fast_sac's warm update (update_once: sample and compiled whole step) at 2x256, batch 256, bf16, one thread:
Adam's bias corrections in the graph (``CompiledStep.host_scalars = False``) against computed on the host, two
trainers in one process, blocks of 100 updates interleaved (the order alternating), thread CPU clock; also whether both trainers, from the
same seed and data, hold the same parameters to the bit at the end.
usage: python adam_scalars_ab.py [blocks]   (from the repository root)"""
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

set_log_level(logging.WARNING)
torch.set_num_threads(1)
blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 8
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
res = {}
with tempfile.TemporaryDirectory() as tmp:
    trs = {}
    for name, host in (("in_graph", False), ("host", True)):
        torch.manual_seed(0)
        tr, spec = common.make_trainer("fast_sac", os.path.join(tmp, name), overrides={"update_precision": "bf16"},
                                       sizes=sizes)
        tr.optimizer.head.loss_step.host_scalars = host
        common.fill(tr, spec, 5000, np.random.default_rng(0))
        trs[name] = tr
        res[name] = []
    for name, tr in trs.items():  # same seeds, same draws: the same updates
        torch.manual_seed(1)
        tr.update_once()  # the eager first step
        for _ in range(40):
            tr.update_once()
    for b in range(blocks):
        for name, tr in (list(trs.items()) if b % 2 == 0 else list(trs.items())[::-1]):  # order alternates
            torch.manual_seed(1000 + b)
            t0 = time.thread_time()
            for _ in range(100):
                tr.update_once()
            res[name].append((time.thread_time() - t0) / 100 * 1e3)
    same = all(torch.equal(a, b) for a, b in zip(trs["in_graph"].optimizer.head.q_net.state_dict().values(),
                                                  trs["host"].optimizer.head.q_net.state_dict().values()))
print(json.dumps({k: [round(x, 3) for x in v] for k, v in res.items()}))
print(json.dumps({"median_ms": {k: round(float(np.median(v)), 3) for k, v in res.items()},
                  "ratio_host_over_in_graph": round(float(np.median(res["host"]) / np.median(res["in_graph"])), 3),
                  "per_block_ratios": [round(h / g, 3) for h, g in zip(res["host"], res["in_graph"])],
                  "same_critic_parameters_to_the_bit": same}))
