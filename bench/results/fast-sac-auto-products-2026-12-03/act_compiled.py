"""LeanPolicy.act's continuous stochastic math for one agent (mock spec: 8 observations, 2 actions; 2x256), compiled
(Inductor, cpp_wrapper, fallback_random) against eager, and the whole get_action: ms per call, one thread.
usage: python act_compiled.py   (from the repository root)"""
import os, sys, tempfile, time, logging
import numpy as np
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import torch
from bench.speed import common
from mlagents_envs.logging_util import set_log_level
from mlagents_envs.base_env import DecisionSteps
set_log_level(logging.WARNING)
torch.set_num_threads(1)
sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
with tempfile.TemporaryDirectory() as tmp:
    tr, spec = common.make_trainer("fast_sac", tmp, overrides={}, sizes=sizes)
    pol = tr.policy; actor = pol.actor; gauss = actor.action_model._continuous_distribution
    obs = [np.random.default_rng(0).standard_normal((1,) + s.shape).astype(np.float32) for s in spec.observation_specs]
    ds = DecisionSteps(obs, np.zeros(1, np.float32), np.arange(1, dtype=np.int32), None, np.zeros(1, np.int32), np.zeros(1, np.float32))
    def core(inputs):
        encoding, _ = actor.network_body(inputs)
        mu = gauss.mu(encoding)
        log_sigma = torch.clamp(gauss.log_sigma(encoding), min=-20, max=2)
        std = torch.exp(log_sigma)
        u = mu + torch.randn_like(mu) * std
        cont = torch.tanh(u)
        ent = torch.mean(0.5 * torch.log(2 * np.pi * np.e * std ** 2 + 1e-7), dim=1)
        return cont, cont, ent
    comp = torch.compile(core, dynamic=False, options={"cpp_wrapper": True, "fallback_random": True})
    def eager_act():
        with torch.inference_mode():
            c, ce, e = core([torch.as_tensor(o) for o in ds.obs]); return c.numpy(), ce.numpy(), e.numpy()
    def comp_act():
        with torch.inference_mode():
            c, ce, e = comp([torch.as_tensor(o) for o in ds.obs]); return c.numpy(), ce.numpy(), e.numpy()
    t0 = time.process_time(); comp_act(); print("compile s", round(time.process_time() - t0, 2))
    torch.manual_seed(3); a = eager_act(); torch.manual_seed(3); b = comp_act()
    print("max diff", float(np.abs(a[0] - b[0]).max()), float(np.abs(a[2] - b[2]).max()))
    res = {"lean_get_action": [], "eager_core": [], "compiled_core": []}
    fns = {"lean_get_action": lambda: pol.get_action(ds, 0), "eager_core": eager_act, "compiled_core": comp_act}
    for f in fns.values():
        for _ in range(200): f()
    for _ in range(5):
        for k, f in fns.items():
            t0 = time.thread_time()
            for _ in range(1000): f()
            res[k].append(time.thread_time() - t0)
    print({k: round(float(np.median(v)), 4) for k, v in res.items()}, "ms per call")
