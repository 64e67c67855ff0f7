"""Eager split of one muzero_repr model update (MLAGENTS_PLUGINS_COMPILE=0): the whole update, the target model's
bootstrap pass alone, the forward (model_loss) and forward + backward, and one SAC head update; ms of thread CPU.

Usage: MLAGENTS_PLUGINS_COMPILE=0 PYTHONPATH=. python bench/results/muzero-cost-2026-11-29/eager_split.py
"""
import sys, time, tempfile, numpy as np, torch
sys.path.insert(0, "bench/results/muzero-cost-2026-11-29")  # update_split.build
from update_split import build
from bench.speed import common
torch.set_num_threads(1)
tmp = tempfile.mkdtemp()
mz, spec = build("muzero_repr", tmp, {})
common.fill(mz, spec, 3000, np.random.default_rng(0))
opt = mz.optimizer
mb = mz.sample_model_batch()
for _ in range(5): opt.update_model(mb)
hp = opt.hyperparameters
K = hp.num_unroll_steps; B = 128
def target_only():
    with torch.no_grad():
        opt.target_model.initial_inference(mb.boot_obs).value
def fwd_only():
    opt.model_loss(mb)
def fwd_bwd():
    opt.model_opt.zero_grad(); fwd = opt.model_loss(mb); fwd.losses.total.backward()
ms = common.time_interleaved({"update_model": lambda: opt.update_model(mb), "target": target_only, "fwd": fwd_only, "fwd_bwd": fwd_bwd, "rl": lambda: opt.update_rl(mz.sample_rl_batch())}, 40, warmup=3, clock=time.thread_time)
print(ms)
