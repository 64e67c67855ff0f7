"""V-trace against a naive reference written straight from Espeholt et al. 2018, eq. (1) and sec. 4.2.

The reference is an explicit double loop (sum over t of products over i), not the backward recursion
used by ``losses.vtrace``; inputs are random and asymmetric, with padding, a terminal and a time-out.
"""
import math

import numpy as np
import pytest
from mlagents.torch_utils import torch

from mlagents_plugins.impala import losses

GAMMA = 0.9


def naive_vtrace(log_rho, discount, r, v, bootstrap, lengths, rho_clip, c_clip, pg_rho_clip, lam):
    """Paper eq. (1): v_s = V(x_s) + sum_{t=s}^{L-1} (prod_{i=s}^{t-1} d_i c_i) rho_t (r_t + d_t V(x_{t+1}) - V(x_t))."""
    T, B = v.shape
    vs = np.zeros((T, B))
    adv = np.zeros((T, B))

    def clip(x, c):
        return x if c is None else min(c, x)

    for b in range(B):
        L = lengths[b]
        V = [v[t, b] for t in range(L)] + [bootstrap[b]]  # V(x_0..x_L)
        for s in range(L):
            total = V[s]
            for t in range(s, L):
                weight = 1.0
                for i in range(s, t):
                    weight *= discount[i, b] * lam * clip(math.exp(log_rho[i, b]), c_clip)
                rho_t = clip(math.exp(log_rho[t, b]), rho_clip)
                delta = rho_t * (r[t, b] + discount[t, b] * V[t + 1] - V[t])
                total += weight * delta
            vs[s, b] = total
        for s in range(L):
            vs_next = vs[s + 1, b] if s + 1 < L else bootstrap[b]
            pg_rho = clip(math.exp(log_rho[s, b]), pg_rho_clip)
            adv[s, b] = pg_rho * (r[s, b] + discount[s, b] * vs_next - V[s])
    return vs, adv


def make_inputs(seed=0, T=7, lengths=(7, 5, 3, 6)):
    """Pieces: 0 = cut mid-episode, 1 = ends in a terminal, 2 = ends in a time-out, 3 = cut, padded."""
    rng = np.random.default_rng(seed)
    B = len(lengths)
    mask = np.zeros((T, B))
    for b, L in enumerate(lengths):
        mask[:L, b] = 1.0
    log_rho = rng.normal(0.0, 0.8, size=(T, B))  # many rho > 1 and many < 1
    r = rng.normal(0.3, 1.0, size=(T, B)) * mask
    v = rng.normal(0.0, 2.0, size=(T, B)) * mask
    bootstrap = rng.normal(1.0, 2.0, size=B)
    discount = GAMMA * mask
    discount[lengths[1] - 1, 1] = 0.0  # terminal: no bootstrap
    # piece 2 ends in a time-out: discount stays GAMMA and it bootstraps from its next observation
    return log_rho, discount, r, v, bootstrap, mask, list(lengths)


def t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float32)


@pytest.mark.parametrize(
    "rho_clip,c_clip,pg_rho_clip,lam",
    [(1.0, 1.0, 1.0, 1.0), (1.3, 0.8, 2.0, 0.9), (None, None, None, 1.0), (0.7, 1.5, None, 0.5)],
)
def test_vtrace_matches_paper_equation(rho_clip, c_clip, pg_rho_clip, lam):
    log_rho, discount, r, v, bootstrap, mask, lengths = make_inputs(seed=3)
    out = losses.vtrace(
        t(log_rho), t(discount), t(r), t(v), t(bootstrap), t(mask),
        rho_clip=rho_clip, c_clip=c_clip, pg_rho_clip=pg_rho_clip, lambda_=lam,
    )
    ref_vs, ref_adv = naive_vtrace(log_rho, discount, r, v, bootstrap, lengths, rho_clip, c_clip, pg_rho_clip, lam)
    m = mask > 0
    np.testing.assert_allclose(out.vs.numpy()[m], ref_vs[m], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out.pg_advantage.numpy()[m], ref_adv[m], rtol=1e-4, atol=1e-4)
    assert np.all(out.pg_advantage.numpy()[~m] == 0.0)


def test_on_policy_unclipped_equals_n_step_return():
    """rho = 1, no clipping, lambda = 1: v_s is the discounted return to the piece end plus the bootstrap."""
    _, discount, r, v, bootstrap, mask, lengths = make_inputs(seed=5)
    zeros = np.zeros_like(r)
    out = losses.vtrace(t(zeros), t(discount), t(r), t(v), t(bootstrap), t(mask), None, None, None, 1.0)
    for b, L in enumerate(lengths):
        for s in range(L):
            ret, scale = 0.0, 1.0
            for k in range(s, L):
                ret += scale * r[k, b]
                scale *= discount[k, b]
            ret += scale * bootstrap[b]  # scale is 0 after a terminal
            assert out.vs[s, b].item() == pytest.approx(ret, abs=1e-4)


def test_on_policy_lambda_equals_lambda_return():
    """rho = 1, lambda < 1: v_s is the TD(lambda) return G_s = r_s + d_s ((1 - lam) V(x_{s+1}) + lam G_{s+1})."""
    lam = 0.7
    _, discount, r, v, bootstrap, mask, lengths = make_inputs(seed=8)
    out = losses.vtrace(t(np.zeros_like(r)), t(discount), t(r), t(v), t(bootstrap), t(mask), None, None, None, lam)
    for b, L in enumerate(lengths):
        g_next = bootstrap[b]
        for s in reversed(range(L)):
            v_next = v[s + 1, b] if s + 1 < L else bootstrap[b]
            g = r[s, b] + discount[s, b] * ((1 - lam) * v_next + lam * g_next)
            assert out.vs[s, b].item() == pytest.approx(g, abs=1e-4)
            g_next = g


def test_hand_calculation_two_steps():
    """T=2, one piece, gamma=0.5: rho = (2, 0.5), rho_clip = c_clip = 1.
    delta_1 = 0.5*(1 + 0.5*4 - 3) = 0; delta_0 = 1*(2 + 0.5*3 - 1) = 2.5; c_0 = 1.
    v_1 = 3 + 0 = 3; v_0 = 1 + 2.5 + 0.5*1*0 = 3.5.  pg: A_0 = 1*(2 + 0.5*3 - 1) = 2.5, A_1 = 0.5*(1+2-3) = 0."""
    log_rho = t([[math.log(2.0)], [math.log(0.5)]])
    out = losses.vtrace(log_rho, t([[0.5], [0.5]]), t([[2.0], [1.0]]), t([[1.0], [3.0]]), t([4.0]), t([[1.0], [1.0]]))
    np.testing.assert_allclose(out.vs.numpy().ravel(), [3.5, 3.0], atol=1e-6)
    np.testing.assert_allclose(out.pg_advantage.numpy().ravel(), [2.5, 0.0], atol=1e-6)
    # Swapping reward and value inputs must change the answer (guards argument order).
    swapped = losses.vtrace(log_rho, t([[0.5], [0.5]]), t([[1.0], [3.0]]), t([[2.0], [1.0]]), t([4.0]), t([[1.0], [1.0]]))
    assert not np.allclose(swapped.vs.numpy(), out.vs.numpy())


def test_clips_change_exactly_what_they_should():
    T, k = 6, 3
    rng = np.random.default_rng(11)
    log_rho = rng.uniform(-1.5, -0.2, size=(T, 1))  # every rho < 1: clipping at 1 is a no-op ...
    log_rho[k, 0] = 1.0  # ... except at step k (rho = e)
    r, v = rng.normal(size=(T, 1)), rng.normal(size=(T, 1))
    args = (t(GAMMA * np.ones((T, 1))), t(r), t(v), t([0.7]), t(np.ones((T, 1))))
    free = losses.vtrace(t(log_rho), *args, None, None, None, 1.0)

    c_only = losses.vtrace(t(log_rho), *args, None, 1.0, None, 1.0)
    # c_k weights the terms t > k of every v_s with s <= k; later targets and the rhos are untouched.
    assert torch.allclose(c_only.vs[k + 1:], free.vs[k + 1:])
    assert not torch.any(torch.isclose(c_only.vs[: k + 1], free.vs[: k + 1]))
    assert torch.allclose(c_only.rho_t, free.rho_t)

    rho_only = losses.vtrace(t(log_rho), *args, 1.0, None, None, 1.0)
    # rho_k scales delta_k, which every v_s with s <= k sees; later steps do not.
    assert torch.allclose(rho_only.vs[k + 1:], free.vs[k + 1:])
    assert not torch.allclose(rho_only.vs[: k + 1], free.vs[: k + 1], atol=1e-6)
    assert torch.allclose(rho_only.rho_t[k], torch.tensor([1.0]))

    pg_only = losses.vtrace(t(log_rho), *args, None, None, 1.0, 1.0)
    assert torch.allclose(pg_only.vs, free.vs)
    changed = ~torch.isclose(pg_only.pg_advantage, free.pg_advantage)
    assert changed[:, 0].tolist() == [s == k for s in range(T)]
    assert pg_only.pg_advantage[k, 0].item() == pytest.approx(free.pg_advantage[k, 0].item() / math.e, rel=1e-5)


def test_importance_stats():
    log_rho = t([[math.log(2.0), 0.0], [math.log(0.5), math.log(3.0)]])
    mask = t([[1.0, 1.0], [1.0, 0.0]])
    stats = losses.importance_stats(log_rho, mask, rho_clip=1.0)
    assert stats.mean_clipped_rho == pytest.approx((1.0 + 1.0 + 0.5) / 3)
    assert stats.fraction_clipped == pytest.approx(1 / 3)


def test_targets_carry_no_gradient_and_losses_route_gradients():
    log_rho, discount, r, v, bootstrap, mask, _ = make_inputs(seed=2)
    v_param = t(v).requires_grad_(True)
    log_rho_param = t(log_rho).requires_grad_(True)
    out = losses.vtrace(log_rho_param, t(discount), t(r), v_param, t(bootstrap), t(mask))
    assert not out.vs.requires_grad and not out.pg_advantage.requires_grad

    # baseline loss: gradient on V only, d/dV = -(vs - V) * mask / N
    loss_v = losses.baseline_loss(v_param, out.vs, t(mask))
    (grad_v,) = torch.autograd.grad(loss_v, v_param)
    expected = -(out.vs - t(v)) * t(mask) / t(mask).sum()
    assert torch.allclose(grad_v, expected, atol=1e-6)

    # policy-gradient loss: d/dlog_pi = -A * mask / N
    log_pi = torch.zeros_like(t(v)).requires_grad_(True)
    (grad_pi,) = torch.autograd.grad(losses.policy_gradient_loss(log_pi, out.pg_advantage, t(mask)), log_pi)
    assert torch.allclose(grad_pi, -out.pg_advantage * t(mask) / t(mask).sum(), atol=1e-6)

    ent = torch.ones_like(t(v)).requires_grad_(True)
    (grad_h,) = torch.autograd.grad(losses.entropy_loss(ent, t(mask)), ent)
    assert torch.allclose(grad_h, -t(mask) / t(mask).sum())


def test_shape_and_argument_errors():
    log_rho, discount, r, v, bootstrap, mask, _ = make_inputs()
    with pytest.raises(ValueError, match="r_t"):
        losses.vtrace(t(log_rho), t(discount), t(r).T, t(v), t(bootstrap), t(mask))
    with pytest.raises(ValueError, match="bootstrap_value"):
        losses.vtrace(t(log_rho), t(discount), t(r), t(v), t(bootstrap[:2]), t(mask))
    bad_mask = mask.copy()
    bad_mask[0, 2] = 0.0
    with pytest.raises(ValueError, match="prefix"):
        losses.vtrace(t(log_rho), t(discount), t(r), t(v), t(bootstrap), t(bad_mask))
    with pytest.raises(ValueError, match="rho_clip"):
        losses.vtrace(t(log_rho), t(discount), t(r), t(v), t(bootstrap), t(mask), rho_clip=0.0)
    with pytest.raises(ValueError, match="log_importance_ratio|must both"):
        losses.log_importance_ratio(torch.zeros(3, 2), torch.zeros(3, 1))
