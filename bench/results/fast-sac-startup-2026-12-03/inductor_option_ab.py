"""fast_sac's warm update (update_once) at 2x256, batch 256, bf16, one thread: the whole step compiled with its
Inductor options against the same plus ``OPTION=VALUE`` (argv), two trainers in one process, blocks of 100 updates
interleaved (order alternating), thread CPU clock; and whether the two trainers' critics stay equal to the bit.
usage: python inductor_option_ab.py OPTION VALUE [blocks]   (from the repository root)"""
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
option, value = sys.argv[1], json.loads(sys.argv[2])
blocks = int(sys.argv[3]) if len(sys.argv) > 3 else 8
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
res = {}
with tempfile.TemporaryDirectory() as tmp:
    trs = {}
    for name in ("default", "option"):
        torch.manual_seed(0)
        tr, spec = common.make_trainer("fast_sac", os.path.join(tmp, name), overrides={"update_precision": "bf16"},
                                       sizes=sizes)
        step = tr.optimizer.head.loss_step
        if name == "option":
            step.whole_options = dict(step.whole_options, **{option: value})
            step._whole = step._compile_whole()
        common.fill(tr, spec, 5000, np.random.default_rng(0))
        trs[name] = tr
        res[name] = []
    for name, tr in trs.items():
        torch.manual_seed(1)
        for _ in range(41):
            tr.update_once()
        assert tr.optimizer.head.loss_step.whole_mode == "on", tr.optimizer.head.loss_step.whole_error
    for b in range(blocks):
        for name, tr in (list(trs.items()) if b % 2 == 0 else list(trs.items())[::-1]):
            torch.manual_seed(1000 + b)
            t0 = time.thread_time()
            for _ in range(100):
                tr.update_once()
            res[name].append((time.thread_time() - t0) / 100 * 1e3)
    same = all(torch.equal(a, b) for a, b in zip(trs["default"].optimizer.head.q_net.state_dict().values(),
                                                  trs["option"].optimizer.head.q_net.state_dict().values()))
print(json.dumps({"option": option, "value": value, "blocks_ms": {k: [round(x, 3) for x in v] for k, v in res.items()},
                  "median_ms": {k: round(float(np.median(v)), 3) for k, v in res.items()},
                  "ratio_option_over_default": round(float(np.median(res["option"]) / np.median(res["default"])), 3),
                  "per_block_ratios": [round(o / d, 3) for o, d in zip(res["option"], res["default"])],
                  "same_critic_parameters_to_the_bit": same}))
