"""log pi/mu of whole actions for continuous, multi-branch discrete with masks, and hybrid actions.

Behaviour log-probs come from one mlagents actor at acting time (as the policy records them); target
log-probs are recomputed by another actor on the same actions.  The reference computes both densities
by hand from the actors' raw layer outputs: Gaussian formula per dimension, softmax over the allowed
actions of each branch.
"""
import math

import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.networks import SimpleActor

from mlagents_plugins.impala import losses
from tests.impala.helpers import impala_spec

N = 12


def hand_log_prob(actor: SimpleActor, obs: torch.Tensor, action, masks: np.ndarray) -> np.ndarray:
    """Joint log-probability of each row's action, written with explicit loops."""
    with torch.no_grad():
        encoding, _ = actor.network_body([obs])
        model = actor.action_model
        mu = sigma = None
        if model._continuous_distribution is not None:
            mu = model._continuous_distribution.mu(encoding).numpy()
            sigma = np.exp(model._continuous_distribution.log_sigma.numpy())[0]
        logits = []
        if model._discrete_distribution is not None:
            logits = [branch(encoding).numpy() for branch in model._discrete_distribution.branches]
    out = np.zeros(N)
    for n in range(N):
        total = 0.0
        if mu is not None:
            for d in range(mu.shape[1]):
                a = float(action.continuous_tensor[n, d])
                total += -((a - mu[n, d]) ** 2) / (2 * sigma[d] ** 2) - math.log(sigma[d]) - 0.5 * math.log(2 * math.pi)
        offset = 0
        for br, lg in enumerate(logits):
            size = lg.shape[1]
            allowed = [j for j in range(size) if masks[n, offset + j] > 0]
            chosen = int(action.discrete_list[br][n])
            assert chosen in allowed, "a masked action was sampled"
            norm = sum(math.exp(lg[n, j]) for j in allowed)
            total += lg[n, chosen] - math.log(norm)
            offset += size
        out[n] = total
    return out


@pytest.mark.parametrize("continuous,branches", [(3, ()), (0, (3, 2, 4)), (2, (3, 2))])
def test_log_ratio_matches_hand_densities(continuous, branches):
    spec = impala_spec(continuous, branches)
    settings = NetworkSettings(hidden_units=8, num_layers=1)
    torch.manual_seed(0)
    behaviour = SimpleActor(spec.observation_specs, settings, spec.action_spec)
    target = SimpleActor(spec.observation_specs, settings, spec.action_spec)
    with torch.no_grad():  # make the two policies clearly different and sigma != 1
        for p in target.parameters():
            p.add_(0.3 * torch.randn_like(p))
    rng = np.random.default_rng(1)
    obs = torch.as_tensor(rng.normal(size=(N, 5)), dtype=torch.float32)
    width = int(sum(branches))
    masks = np.ones((N, width), dtype=np.float32)
    offset = 0
    for size in branches:  # block a random non-empty subset, leaving at least one action per branch
        for n in range(N):
            blocked = rng.choice(size, size=rng.integers(0, size), replace=False)
            masks[n, offset + blocked] = 0.0
        offset += size
    mask_t = torch.as_tensor(masks)

    with torch.no_grad():
        action, run_out, _ = behaviour.get_action_and_stats([obs], masks=mask_t)
        recorded = run_out["log_probs"].flatten()  # what the trajectory stores
        recomputed = target.get_stats([obs], action, masks=mask_t)["log_probs"].flatten()
    assert recorded.shape == (N, continuous + len(branches))
    log_rho = losses.log_importance_ratio(recomputed, recorded).numpy()

    expected = hand_log_prob(target, obs, action, masks) - hand_log_prob(behaviour, obs, action, masks)
    np.testing.assert_allclose(log_rho, expected, rtol=1e-3, atol=2e-3)
    assert np.abs(expected).max() > 0.05  # the policies really differ
