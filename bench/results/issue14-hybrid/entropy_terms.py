"""Issue #14: the soft value's entropy terms per step next to the hybrid target, from probe.py snapshots.

Agents placed uniformly within the grab radius of their targets; prints alpha_d x H_d (discrete bonus) and
-alpha_c x log pi_c (continuous, negative when the tanh-Gaussian is narrow), their sum and the sum / (1 - gamma)
that an episode looping there forever would collect.

    .venv/bin/python bench/results/issue14-hybrid/entropy_terms.py SNAPSHOT.pt [...]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from mlagents_plugins.envs.scenes.hybrid import HybridScene  # noqa: E402
from mlagents_plugins.fast_sac.networks import sample_for_training  # noqa: E402

torch.manual_seed(0)
for path in sys.argv[1:]:
    snap = torch.load(path, weights_only=False)
    actor = snap['actor'].eval()
    ac = float(snap['temperatures'].log_alpha_cont.exp()); ad = float(snap['temperatures'].log_alpha_disc.exp()[0])
    # states near the target: agent placed within the radius
    sc = HybridScene(num_areas=256, seed=5)
    n = sc.num_agents
    r = np.random.default_rng(1).uniform(0, 0.15, n); th = np.random.default_rng(2).uniform(0, 2*np.pi, n)
    sc.pos = np.clip(sc.target + np.stack([r*np.cos(th), r*np.sin(th)], 1), -0.99, 0.99)
    obs = sc.observe()[0]
    with torch.no_grad():
        enc, _ = actor.network_body([torch.as_tensor(obs)])
        a, lpc, lpd = sample_for_training(actor.action_model, enc, torch.ones(n, 3))
        hd = -(lpd.exp() * lpd).sum(1)
    bonus_d = ad * hd.mean().item(); bonus_c = -ac * lpc.mean().item()
    g = snap['gamma'][0]
    print(path.split('/')[-1], f"alpha_d {ad:.4f} H_d {hd.mean():.3f} alpha_c {ac:.5f} -logpi_c {-lpc.mean():.3f} | bonus/step d {bonus_d:.5f} c {bonus_c:.5f} sum {bonus_d+bonus_c:.5f} -> /(1-g) {(bonus_d+bonus_c)/(1-g):.3f}")
