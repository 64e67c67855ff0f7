"""The optional clipped surrogate (``surrogate_clip``) against loops written from PPO's eq. (7), the
V-trace Q estimate ``q_t`` it uses, the KL / clip diagnostics, and its wiring in the optimizer."""
import math

import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import strict_to_cls
from mlagents.trainers.torch_entities.agent_action import AgentAction
from mlagents.trainers.torch_entities.networks import SimpleActor

from mlagents_plugins.impala import losses
from mlagents_plugins.impala.optimizer import TorchImpalaOptimizer
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.impala.settings import ImpalaSettings
from tests.impala.helpers import impala_spec, trainer_settings
from tests.impala.test_components import _batch_for
from tests.impala.test_vtrace import make_inputs, t


def naive_surrogate(log_pi, log_mu, adv, mask, eps):
    """-(1/N) sum over real steps of min(ratio A, clip(ratio, 1-eps, 1+eps) A), ratio = exp(log_pi - log_mu)."""
    total, n = 0.0, 0
    for s in range(log_pi.shape[0]):
        for b in range(log_pi.shape[1]):
            if mask[s, b] == 0:
                continue
            ratio = math.exp(log_pi[s, b] - log_mu[s, b])
            clipped = min(max(ratio, 1.0 - eps), 1.0 + eps)
            total += min(ratio * adv[s, b], clipped * adv[s, b])
            n += 1
    return -total / n


def naive_surrogate_grad(log_pi, log_mu, adv, mask, eps):
    """d loss / d log_pi per step: -ratio A / N where the unclipped term is the minimum, else 0."""
    n = int(mask.sum())
    g = np.zeros_like(log_pi)
    for s in range(log_pi.shape[0]):
        for b in range(log_pi.shape[1]):
            if mask[s, b] == 0:
                continue
            ratio = math.exp(log_pi[s, b] - log_mu[s, b])
            a = adv[s, b]
            # the clipped term wins (zero gradient) when the ratio has left the band in A's direction
            if (a > 0 and ratio > 1.0 + eps) or (a < 0 and ratio < 1.0 - eps):
                continue
            g[s, b] = -ratio * a / n
    return g


def surrogate_inputs(seed=5, T=8, B=4):
    rng = np.random.default_rng(seed)
    mask = np.ones((T, B))
    mask[4:, 1] = 0.0
    mask[2:, 3] = 0.0
    log_mu = rng.normal(-1.0, 0.5, size=(T, B))
    log_pi = log_mu + rng.normal(0.0, 0.5, size=(T, B))  # ratios on both sides of the band
    adv = rng.normal(0.2, 1.0, size=(T, B))  # both signs
    return log_pi, log_mu, adv, mask


@pytest.mark.parametrize("eps", [0.1, 0.3])
def test_clipped_surrogate_value_and_gradient_match_loops(eps):
    log_pi, log_mu, adv, mask = surrogate_inputs()
    ratio = np.exp(log_pi - log_mu)
    # the test only means something if every case occurs on real steps
    real = mask > 0
    assert np.any(real & (ratio > 1 + eps) & (adv > 0)) and np.any(real & (ratio < 1 - eps) & (adv < 0))
    assert np.any(real & (ratio > 1 + eps) & (adv < 0)) and np.any(real & (np.abs(ratio - 1) < eps))
    log_pi_param = t(log_pi).requires_grad_(True)
    loss = losses.clipped_surrogate_loss(log_pi_param, t(log_mu), t(adv), t(mask), eps)
    assert loss.item() == pytest.approx(naive_surrogate(log_pi, log_mu, adv, mask, eps), rel=1e-5)
    (grad,) = torch.autograd.grad(loss, log_pi_param)
    np.testing.assert_allclose(grad.numpy(), naive_surrogate_grad(log_pi, log_mu, adv, mask, eps), atol=1e-6)
    # swapping target and behaviour changes the loss (guards argument order)
    swapped = losses.clipped_surrogate_loss(t(log_mu), t(log_pi), t(adv), t(mask), eps)
    assert swapped.item() != pytest.approx(loss.item(), rel=1e-3)


def test_clipped_surrogate_on_policy_equals_policy_gradient():
    """pi == mu: ratio 1 inside the band, so the loss is -mean(A) and its gradient is the plain PG's."""
    _, log_mu, adv, mask = surrogate_inputs(seed=9)
    log_pi = t(log_mu).requires_grad_(True)
    loss = losses.clipped_surrogate_loss(log_pi, t(log_mu), t(adv), t(mask), 0.2)
    assert loss.item() == pytest.approx(-(adv * mask).sum() / mask.sum(), rel=1e-5)
    (g_sur,) = torch.autograd.grad(loss, log_pi)
    log_pi2 = t(log_mu).requires_grad_(True)
    (g_pg,) = torch.autograd.grad(losses.policy_gradient_loss(log_pi2, t(adv), t(mask)), log_pi2)
    assert torch.allclose(g_sur, g_pg, atol=1e-7)


def test_clipped_surrogate_errors():
    log_pi, log_mu, adv, mask = surrogate_inputs()
    with pytest.raises(ValueError, match="epsilon"):
        losses.clipped_surrogate_loss(t(log_pi), t(log_mu), t(adv), t(mask), 1.5)
    with pytest.raises(ValueError, match="log_mu_t"):
        losses.clipped_surrogate_loss(t(log_pi), t(log_mu).T, t(adv), t(mask), 0.2)


def test_vtrace_q_estimate_is_reward_plus_discounted_next_target():
    """q_s = r_s + d_s v_{s+1} (v after the last real step = bootstrap), and pg_advantage = pg_rho (q_s - V(x_s))."""
    log_rho, discount, r, v, bootstrap, mask, lengths = make_inputs(seed=4)
    out = losses.vtrace(t(log_rho), t(discount), t(r), t(v), t(bootstrap), t(mask), 1.0, 1.0, 1.0, 1.0)
    vs = out.vs.numpy()
    for b, L in enumerate(lengths):
        for s in range(L):
            v_next = vs[s + 1, b] if s + 1 < L else bootstrap[b]
            q = r[s, b] + discount[s, b] * v_next
            assert out.q_t[s, b].item() == pytest.approx(q, abs=1e-4)
            pg_rho = min(1.0, math.exp(log_rho[s, b]))
            assert out.pg_advantage[s, b].item() == pytest.approx(pg_rho * (q - v[s, b]), abs=1e-4)
        assert np.all(out.q_t.numpy()[L:, b] == 0.0)


def test_approx_kl_and_fraction_outside_clip_by_hand():
    log_rho = t([[math.log(2.0), 0.0], [math.log(0.5), math.log(3.0)]])
    mask = t([[1.0, 1.0], [1.0, 0.0]])
    # (rho - 1) - log rho: (1 - ln 2) + 0 + (-0.5 + ln 2), mean over 3 real steps
    assert losses.approx_kl(log_rho, mask) == pytest.approx((1.0 - math.log(2.0) - 0.5 + math.log(2.0)) / 3, rel=1e-5)
    assert losses.fraction_outside_clip(log_rho, mask, 0.2) == pytest.approx(2 / 3)
    assert losses.fraction_outside_clip(log_rho, mask, 0.6) == pytest.approx(1 / 3)  # band [0.4, 1.6]: only rho = 2 is outside


def _policy_loss_grads(surrogate_clip, behaviour_noise):
    torch.manual_seed(0)
    spec = impala_spec(2, (3, 2))  # hybrid: the ratio covers continuous dims and both branches
    settings = trainer_settings(surrogate_clip=surrogate_clip, pg_rho_clip=1.0)
    policy = ImpalaPolicy(0, spec, settings.network_settings, SimpleActor, {})
    opt = TorchImpalaOptimizer(policy, settings)
    batch = _batch_for(spec)
    # behaviour log-probs = the current policy's on the stored actions, plus noise of both signs
    actions = AgentAction(batch.continuous_action, list(batch.discrete_action.unbind(1)))
    with torch.no_grad():
        log_mu = policy.actor.get_stats(batch.obs, actions, masks=batch.action_mask)["log_probs"].flatten()
    noise = torch.as_tensor(np.random.default_rng(1).normal(0.0, behaviour_noise, size=log_mu.shape), dtype=torch.float32)
    batch = batch._replace(behaviour_log_probs=log_mu + noise)
    terms = opt.compute_losses(batch)
    params = [p for p in policy.actor.parameters() if p.requires_grad]
    return torch.cat([g.flatten() for g in torch.autograd.grad(terms.policy_loss, params, allow_unused=False)]), terms


def test_optimizer_surrogate_wiring():
    """On-policy (mu = pi) the surrogate's gradient equals the paper's policy gradient (ratio 1, pg_rho 1);
    off-policy they differ, and the surrogate's clip diagnostic is reported only when it is on."""
    g_pg, _ = _policy_loss_grads(None, behaviour_noise=0.0)
    g_sur, terms_sur = _policy_loss_grads(0.2, behaviour_noise=0.0)
    assert torch.allclose(g_pg, g_sur, atol=1e-6) and g_pg.abs().sum() > 0
    assert terms_sur.approx_kl == pytest.approx(0.0, abs=1e-6) and terms_sur.fraction_outside_clip == 0.0
    g_pg_off, terms_pg_off = _policy_loss_grads(None, behaviour_noise=0.3)
    g_sur_off, terms_off = _policy_loss_grads(0.2, behaviour_noise=0.3)
    # pi/mu > 1.2 with A > 0: the surrogate drops the step, the paper's gradient keeps it with pg_rho = 1
    assert (g_pg_off - g_sur_off).abs().max() > 1e-3
    assert terms_off.approx_kl > 0.01 and 0.2 < terms_off.fraction_outside_clip < 1.0
    assert terms_pg_off.fraction_outside_clip == 0.0  # not computed when the surrogate is off


@pytest.mark.parametrize("value", [0.0, 1.0, -0.2, 2])
def test_surrogate_clip_setting_errors(value):
    with pytest.raises(TrainerConfigError) as err:
        strict_to_cls({"surrogate_clip": value}, ImpalaSettings)
    assert "surrogate_clip" in str(err.value) and repr(value) in str(err.value) and "(0, 1)" in str(err.value)


def test_surrogate_clip_setting_default_and_valid():
    """On by default (0.2, a deviation from the paper: docs/impala.md); null keeps the paper's gradient."""
    assert ImpalaSettings().surrogate_clip == 0.2
    assert strict_to_cls({}, ImpalaSettings).surrogate_clip == 0.2
    assert strict_to_cls({"surrogate_clip": None}, ImpalaSettings).surrogate_clip is None
    assert strict_to_cls({"surrogate_clip": 0.1}, ImpalaSettings).surrogate_clip == 0.1


def test_default_settings_use_the_surrogate_and_null_the_paper_gradient():
    """With default settings the optimizer's policy loss is the clipped surrogate (off-policy it differs
    from the paper's gradient, and the clip diagnostic is reported); surrogate_clip: null gives the paper's."""
    g_default, terms_default = _policy_loss_grads(ImpalaSettings().surrogate_clip, behaviour_noise=0.3)
    g_sur, _ = _policy_loss_grads(0.2, behaviour_noise=0.3)
    g_pg, _ = _policy_loss_grads(None, behaviour_noise=0.3)
    assert torch.equal(g_default, g_sur)
    assert (g_default - g_pg).abs().max() > 1e-3
    assert terms_default.fraction_outside_clip > 0.0
