"""In-process split of one muzero_repr update against fast_sac's, CPU (thread) time, one process (issue #52 cost).

Both trainers are built from the profile's config (``bench.profiling.profile_config``: the defaults benchmark's
minimal config, 2x128, batch 128) on the Balance spec, their buffers filled with the same number of random
rows, every update compiled as in a run (``compile_update`` automatic), then timed interleaved
(``bench.speed.common.time_interleaved``, thread CPU clock):

* ``fast_sac update_once``: sampling + the SAC update;
* ``muzero sample_model_batch`` / ``update_model`` (on one pre-sampled batch) / ``sample_rl_batch`` /
  ``update_rl`` (on one pre-sampled batch) / ``update_once`` (everything, fresh batches).

Usage: ``PYTHONPATH=. python bench/results/muzero-cost-2026-11-29/update_split.py [--rows 6000] [--updates 200]
[--set KEY=VALUE ...]`` (muzero_repr hyperparameters, YAML values).  Prints one JSON line.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import yaml


def build(trainer: str, tmp: str, overrides):
    from mlagents import plugins as mla_plugins
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
    from mlagents.trainers.settings import TrainerSettings

    from bench.profiling import profile_config
    from bench.speed import common

    common.register_plugins()
    cfg = profile_config(trainer, 10 ** 7, 128, 128, 10 ** 9)
    cfg["hyperparameters"].update(overrides)
    cfg.update(checkpoint_interval=10 ** 9)
    settings = TrainerSettings.structure(cfg, TrainerSettings)
    spec = common.balance_spec()
    t = mla_plugins.all_trainer_types[trainer]("B", 10, settings, True, False, 0, os.path.join(tmp, trainer))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    t.add_policy(bid, t.create_policy(bid, spec))
    return t, spec


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=6000)
    p.add_argument("--updates", type=int, default=200)
    p.add_argument("--warmup", type=int, default=60)
    p.add_argument("--set", nargs="*", default=[])
    args = p.parse_args(argv)
    overrides = {kv.split("=", 1)[0]: yaml.safe_load(kv.split("=", 1)[1]) for kv in args.set}
    import torch

    from bench.speed import common

    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp()
    fs, spec = build("fast_sac", tmp, {})
    mz, _ = build("muzero_repr", tmp, overrides)
    for t in (fs, mz):
        common.fill(t, spec, args.rows, np.random.default_rng(0))
    t0 = time.thread_time()
    for _ in range(args.warmup):  # compiles both updates (the first calls) and chooses the matmul kernels
        fs.update_once()
        mz.update_once()
    warm_s = time.thread_time() - t0
    opt = mz.optimizer
    mb = mz.sample_model_batch()
    rb = mz.sample_rl_batch()
    steps = {
        "fast_sac update_once": fs.update_once,
        "muzero update_once": mz.update_once,
        "muzero sample_model_batch": mz.sample_model_batch,
        "muzero update_model": lambda: opt.update_model(mb),
        "muzero sample_rl_batch": mz.sample_rl_batch,
        "muzero update_rl": lambda: opt.update_rl(rb),
    }
    ms = common.time_interleaved(steps, args.updates, warmup=5, clock=time.thread_time)
    out = {"rows": args.rows, "set": overrides, "warmup_cpu_s": round(warm_s, 1),
           "model_mode": opt.model_step.whole_mode, "head_mode": opt.head.loss_step.whole_mode,
           "ms": {k: round(v, 3) for k, v in ms.items()},
           "ratio update_once": round(ms["muzero update_once"] / ms["fast_sac update_once"], 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
