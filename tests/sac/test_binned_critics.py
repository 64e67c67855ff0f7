"""Binned critics (fast_sac's ``critic_value_bins``, issue #56): the symlog support, the HL-Gauss target
distribution, the critics' values and their cross-entropy loss, each against a float64 reference written here from
the definitions (a normal's mass per bin through ``math.erf``, softmax expectations by loops); their wiring into
``losses.sac_losses``; the setting's reach and its refusals.
"""
import math

import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.sac import losses
from tests.builders import behavior_spec, trajectory
from tests.fast_sac.helpers import make_trainer


def _symlog(x):
    return math.copysign(math.log(1.0 + abs(x)), x)


def _normal_cdf(x, mean, sigma):
    return 0.5 * (1.0 + math.erf((x - mean) / (sigma * math.sqrt(2.0))))


def _reference_hl_gauss(y, centres, sigma):
    """The mass of N(symlog(y) clamped to the support, sigma) in each bin, bins edged halfway between centres."""
    width = centres[1] - centres[0]
    mean = min(max(_symlog(y), centres[0]), centres[-1])
    edges = [c - width / 2 for c in centres] + [centres[-1] + width / 2]
    mass = [_normal_cdf(hi, mean, sigma) - _normal_cdf(lo, mean, sigma) for lo, hi in zip(edges[:-1], edges[1:])]
    total = _normal_cdf(edges[-1], mean, sigma) - _normal_cdf(edges[0], mean, sigma)
    return [m / total for m in mass]


def _reference_value(logits, centres):
    top = max(logits)
    w = [math.exp(v - top) for v in logits]
    z = sum(wi * c for wi, c in zip(w, centres)) / sum(w)
    return math.copysign(math.expm1(abs(z)), z)


def test_symlog_and_symexp_are_inverse_and_match_the_definition():
    x = torch.tensor([-250.0, -1.5, 0.0, 0.3, 7.0, 1e4], dtype=torch.float64)
    assert torch.allclose(losses.symlog(x), torch.tensor([_symlog(v) for v in x.tolist()], dtype=torch.float64))
    assert torch.allclose(losses.symexp(losses.symlog(x)), x, rtol=1e-12, atol=1e-12)


def test_value_support_spans_the_limit_in_equal_steps_and_refuses_bad_sizes():
    s = losses.value_support(5, 2.0)
    assert s.tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="bins"):
        losses.value_support(1, 2.0)
    with pytest.raises(ValueError, match="limit"):
        losses.value_support(5, 0.0)


def test_hl_gauss_probs_match_a_float64_reference_inside_at_and_beyond_the_support():
    centres = losses.value_support(9, 4.0, None).double()  # width 1
    sigma = 0.6
    # asymmetric targets: negative, near zero, between centres, large (symlog 5.5 > 4: clamped), a large negative
    targets = torch.tensor([[-3.7, 0.2], [250.0, 11.0], [-1e4, 1.3]], dtype=torch.float64)
    got = losses.hl_gauss_probs(targets, centres, sigma)
    assert got.shape == (3, 2, 9)
    for i in range(3):
        for j in range(2):
            want = _reference_hl_gauss(float(targets[i, j]), centres.tolist(), sigma)
            np.testing.assert_allclose(got[i, j].numpy(), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.sum(-1).numpy(), 1.0, rtol=1e-12)
    # a target beyond the support puts its mass at that end
    assert got[1, 0].argmax() == 8 and got[2, 0].argmax() == 0


def test_binned_q_is_symexp_of_the_softmax_expectation():
    centres = losses.value_support(7, 3.0, None).double()
    logits = torch.tensor([[[0.3, -1.2, 2.0, 0.0, 0.5, -0.7, 1.1]], [[5.0, 0.0, -2.0, -2.0, -2.0, 0.0, 1.0]]],
                          dtype=torch.float64)
    got = losses.binned_q(logits, centres)
    assert got.shape == (2, 1)
    for i in range(2):
        assert abs(float(got[i, 0]) - _reference_value(logits[i, 0].tolist(), centres.tolist())) < 1e-10
    with pytest.raises(ValueError, match="agree on K"):
        losses.binned_q(logits, centres[:-1])


def test_a_critic_holding_the_hl_gauss_distribution_values_near_the_target():
    """The mean of the discretized normal is the target's symlog (to a small fraction of a bin) away from the ends:
    the values a trained critic reports are in the rewards' units."""
    support = losses.value_support(101, losses.VALUE_LIMIT, None).double()
    sigma = losses.HL_GAUSS_SIGMA_BINS * float(support[1] - support[0])
    y = torch.tensor([-480.0, -3.0, 0.0, 0.75, 42.0, 900.0], dtype=torch.float64)
    logits = torch.log(losses.hl_gauss_probs(y, support, sigma))
    np.testing.assert_allclose(losses.binned_q(logits, support).numpy(), y.numpy(), rtol=1e-3, atol=1e-3)


def test_twin_q_cross_entropy_matches_a_reference_with_weights_and_keeps_the_critics_apart():
    g = torch.Generator().manual_seed(3)
    b, s, k = 4, 2, 9
    support = losses.value_support(k, 4.0, None).double()
    sigma = 0.75
    logits1 = torch.randn(b, s, k, generator=g, dtype=torch.float64, requires_grad=True)
    logits2 = (3.0 * torch.randn(b, s, k, generator=g, dtype=torch.float64) + 1.0).requires_grad_()
    target = torch.tensor([[-3.0, 0.5], [12.0, 40.0], [-0.2, 2.5], [600.0, -7.0]], dtype=torch.float64)
    weights = torch.tensor([0.5, 1.0, 2.0, 0.25], dtype=torch.float64)
    l1, l2, td_abs = losses.twin_q_cross_entropy(logits1, logits2, target, support, sigma, weights)

    def ce(logits, bi, si):
        p = _reference_hl_gauss(float(target[bi, si]), support.tolist(), sigma)
        row = logits[bi, si].tolist()
        top = max(row)
        log_z = top + math.log(sum(math.exp(v - top) for v in row))
        return -sum(pi * (v - log_z) for pi, v in zip(p, row))

    for got, logits in ((l1, logits1), (l2, logits2)):
        want = sum(float(weights[i]) * sum(ce(logits, i, j) for j in range(s)) / s for i in range(b)) / b
        assert abs(float(got.detach()) - want) < 1e-9
    assert abs(float(l1) - float(l2)) > 0.1  # the two critics' losses are not swapped or shared
    for i in range(b):
        gaps = [max(abs(_reference_value(logits1[i, j].tolist(), support.tolist()) - float(target[i, j])),
                    abs(_reference_value(logits2[i, j].tolist(), support.tolist()) - float(target[i, j])))
                for j in range(s)]
        assert abs(float(td_abs[i]) - sum(gaps) / s) < 1e-6 * max(1.0, sum(gaps))
    # each loss reaches its own critic's logits only; the target is a constant
    target.requires_grad_()
    l1, l2, _ = losses.twin_q_cross_entropy(logits1, logits2, target, support, sigma)
    g1, g2 = torch.autograd.grad(l1, (logits1, logits2), allow_unused=True)
    assert g1 is not None and g1.abs().sum() > 0 and g2 is None


def test_sac_losses_with_binned_critics_bootstrap_the_target_critics_values():
    """One continuous action, every critic's logits fixed per state: the target is r + 0.9 * (min of the target
    critics' binned values - alpha * log pi), the critic loss the cross-entropy against it, the actor reads the
    frozen critic's binned value."""
    b, k = 3, 11
    support = losses.value_support(k, losses.VALUE_LIMIT, None)
    base = torch.linspace(-1.0, 1.0, k)

    def critic_at(shift):
        # the second critic's slope differs, so the twins' values differ (a constant added to logits would not)
        return lambda state, a: (base * shift * state + 0.1 * state, -0.6 * base * shift * state - 0.2)

    online = lambda state, a: tuple(x.expand(b, 1, k) for x in critic_at(1.0)(state, a))  # noqa: E731
    target = lambda state, a: tuple(x.expand(b, 1, k) for x in critic_at(2.0)(state, a))  # noqa: E731

    def frozen(state, a, first_only):
        q1, q2 = online(state, a)
        return q1, None if first_only else q2

    lp = torch.tensor([-0.5, 0.3, 1.0])

    def actor(state, mask):
        return torch.zeros(b, 1), lp, None

    nets = losses.SACNetworks(actor, online, frozen, target, torch.zeros(1), torch.zeros(0))
    batch = losses.SACBatch(
        s_tm1=torch.tensor(1.0), a_tm1_cont=torch.zeros(b, 1), a_tm1_disc=None, mask_tm1=None,
        r_t=torch.tensor([[[1.0]], [[-2.0]], [[0.5]]]), discount_t=torch.full((b, 1, 1), 0.9),
        valid_t=torch.ones(b, 1, dtype=torch.bool), s_t=torch.tensor(2.0), mask_t=None)
    settings = losses.SACLossSettings(branches=(), cont_size=1, target_entropy_cont=-1.0, discrete_entropy_scale=0.2,
                                      actor_min_q=False, value_bins=k)
    out = losses.sac_losses(nets, batch, settings)
    t1, t2 = target(torch.tensor(2.0), None)
    v_t = torch.minimum(losses.binned_q(t1, support), losses.binned_q(t2, support))[:, 0] - lp  # alpha = 1
    y = batch.r_t[:, 0, 0] + 0.9 * v_t
    o1, o2 = online(torch.tensor(1.0), None)
    sigma = losses.HL_GAUSS_SIGMA_BINS * float(support[1] - support[0])
    want1, want2, _ = losses.twin_q_cross_entropy(o1, o2, y.unsqueeze(1), support, sigma)
    assert torch.allclose(out.q1_loss, want1) and torch.allclose(out.q2_loss, want2)
    assert torch.allclose(out.diagnostics[3], y.mean())  # target mean
    q_pi = losses.binned_q(o1, support)[:, 0]
    assert torch.allclose(out.policy_loss, (lp - q_pi).mean())
    with pytest.raises(ValueError, match="continuous-only"):
        losses.sac_losses(nets, batch, settings._replace(branches=(2,), cont_size=1))


def _filled(tmp_path, spec, **hyper):
    trainer = make_trainer(spec, tmp_path, batch_size=16, buffer_init_steps=10 ** 6, **hyper)
    rng = np.random.default_rng(1)
    for i in range(4):
        trainer._process_trajectory(trajectory(spec, 9, rng, done=i % 2 == 0))
    return trainer


def test_the_setting_gives_every_critic_head_its_bins_and_trains(tmp_path):
    trainer = _filled(tmp_path, behavior_spec(((5,),), cont=2), critic_value_bins=21)
    head = trainer.optimizer.head
    for q in (head.q_net, head.q_target):
        for critic in (q.q1, q.q2):
            assert critic.value_heads.value_heads["extrinsic"].out_features == 21
    before = [p.detach().clone() for p in head.q_net.parameters()]
    for _ in range(3):
        stats = trainer.update_once()
        assert all(np.isfinite(v) for v in stats.values()), stats
    assert any(not torch.equal(a, p) for a, p in zip(before, head.q_net.parameters()))
    plain = _filled(tmp_path / "plain", behavior_spec(((5,),), cont=2))
    assert plain.optimizer.head.q_net.q1.value_heads.value_heads["extrinsic"].out_features == 1


def test_discrete_actions_are_refused_naming_the_field(tmp_path):
    with pytest.raises(TrainerConfigError, match="critic_value_bins: 21 needs continuous-only actions"):
        make_trainer(behavior_spec(((5,),), cont=1, branches=(2,)), tmp_path, critic_value_bins=21)
    # a recurrent fast_sac (its own optimizer, the same SAC head) refuses them at start-up too
    from tests.fast_sac.test_recurrent import _settings, _trainer

    with pytest.raises(TrainerConfigError, match="critic_value_bins: 21 needs continuous-only actions"):
        _trainer(behavior_spec(((5,),), cont=1, branches=(2,)), tmp_path / "rnn", _settings(critic_value_bins=21))


@pytest.mark.parametrize("value", [1, -3, 2.5, True, "many"])
def test_bad_bin_counts_name_the_field(value):
    with pytest.raises(TrainerConfigError, match="critic_value_bins"):
        FastSACSettings(critic_value_bins=value)
