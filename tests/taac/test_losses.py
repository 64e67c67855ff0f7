"""TAAC loss math against naive references (explicit loops / hand values) on asymmetric inputs."""
import math

import numpy as np
import pytest
from mlagents.torch_utils import torch

from mlagents_plugins.taac import losses


def naive_compare_through(r, disc, v, switch, done, valid):
    """Forward, per-sequence: follow the window from t until the first cut, then bootstrap."""
    B, L = r.shape
    out = np.zeros((B, L))
    for b in range(B):
        for t in range(L):
            if not valid[b, t]:
                continue
            g, scale, k = 0.0, 1.0, t
            while True:
                g += scale * r[b, k]
                scale *= disc[b, k]
                last = k == L - 1
                if last or done[b, k] or not valid[b, k + 1] or switch[b, k + 1]:
                    g += scale * v[b, k]
                    break
                k += 1
            out[b, t] = g
    return out


def test_compare_through_hand_example():
    # One sequence, gamma 0.9: rows 0,1 keep (no switch at 1, 2), switch at row 3.
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    disc = torch.full((1, 4), 0.9)
    v = torch.tensor([[10.0, 20.0, 30.0, 40.0]])
    switch = torch.tensor([[True, False, False, True]])  # switch at row 0 never matters
    done = torch.zeros(1, 4, dtype=torch.bool)
    valid = torch.ones(1, 4, dtype=torch.bool)
    g = losses.compare_through_returns(r, disc, v, switch, done, valid)
    g3 = 4 + 0.9 * 40  # last row bootstraps
    g2 = 3 + 0.9 * 30  # switch at row 3 -> bootstrap from v_tp1[2]
    g1 = 2 + 0.9 * g2
    g0 = 1 + 0.9 * g1
    np.testing.assert_allclose(g.numpy()[0], [g0, g1, g2, g3], rtol=1e-6)


def test_compare_through_terminal_cuts_and_timeout_bootstraps():
    r = torch.tensor([[1.0, 2.0, 5.0], [1.0, 2.0, 5.0]])
    v = torch.tensor([[7.0, 8.0, 9.0], [7.0, 8.0, 9.0]])
    no_switch = torch.zeros(2, 3, dtype=torch.bool)
    done = torch.tensor([[False, True, False], [False, True, False]])
    valid = torch.tensor([[True, True, False], [True, True, False]])
    # Row 0: terminal at row 1 (discount 0 there); row 1: time-out at row 1 (discount gamma).
    disc = torch.tensor([[0.5, 0.0, 0.5], [0.5, 0.5, 0.5]])
    g = losses.compare_through_returns(r, disc, v, no_switch, done, valid).numpy()
    np.testing.assert_allclose(g[0], [1 + 0.5 * 2, 2, 0], rtol=1e-6)
    np.testing.assert_allclose(g[1], [1 + 0.5 * (2 + 0.5 * 8), 2 + 0.5 * 8, 0], rtol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compare_through_matches_naive_reference(seed):
    rng = np.random.default_rng(seed)
    B, L = 7, 9
    r = rng.normal(size=(B, L))
    v = rng.normal(size=(B, L)) * 3 + 1
    terminal = rng.random((B, L)) < 0.15
    timeout = (rng.random((B, L)) < 0.15) & ~terminal
    done = terminal | timeout
    disc = np.where(terminal, 0.0, 0.97)
    switch = rng.random((B, L)) < 0.3
    lengths = rng.integers(1, L + 1, size=B)
    valid = np.arange(L)[None, :] < lengths[:, None]
    t = lambda x: torch.as_tensor(x)
    g = losses.compare_through_returns(
        t(r).float(), t(disc).float(), t(v).float(), t(switch), t(done), t(valid)
    ).numpy()
    ref = naive_compare_through(r, disc, v, switch, done, valid)
    np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-5)


def test_compare_through_rejects_mismatched_shapes():
    a = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="same shape"):
        losses.compare_through_returns(a, a, torch.zeros(2, 4), a.bool(), a.bool(), a.bool())


def test_switch_distribution_matches_softmax_and_clipping():
    q_keep = torch.tensor([1.0, 3.0, -2.0])
    q_new = torch.tensor([2.5, 1.0, -2.0])
    temp = torch.tensor(0.7)
    d = losses.switch_distribution(q_keep, q_new, temp)
    ref = torch.softmax(torch.stack([q_keep, q_new], -1) / 0.7, -1)
    np.testing.assert_allclose(d.p_switch.numpy(), ref[:, 1].numpy(), rtol=1e-6)
    np.testing.assert_allclose(d.log_p_keep.exp().numpy(), ref[:, 0].numpy(), rtol=1e-6)
    ent = -(ref * ref.log()).sum(-1)
    np.testing.assert_allclose(d.entropy.numpy(), ent.numpy(), rtol=1e-5)
    np.testing.assert_allclose(d.advantage.numpy(), [1.5, -2.0, 0.0])
    c = losses.switch_distribution(q_keep, q_new, temp, advantage_clipping=(-0.5, 1.0))
    np.testing.assert_allclose(c.advantage.numpy(), [1.0, -0.5, 0.0])
    np.testing.assert_allclose(c.p_switch.numpy(), [1 / (1 + math.exp(-1 / 0.7)), 1 / (1 + math.exp(0.5 / 0.7)), 0.5], rtol=1e-6)


@pytest.mark.parametrize("temp", [1e-6, 1e-12, 0.0])
def test_switch_distribution_is_finite_and_greedy_at_tiny_temperature(temp):
    q_keep = torch.tensor([1.0, 1.0, 5.0, 1e4])
    q_new = torch.tensor([1.001, 0.999, 5.0, -1e4])
    d = losses.switch_distribution(q_keep, q_new, torch.tensor(temp))
    for x in d:
        assert torch.isfinite(x).all(), x
    np.testing.assert_allclose(d.p_switch.numpy(), [1.0, 0.0, 0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(d.entropy.numpy(), [0.0, 0.0, math.log(2), 0.0], atol=1e-6)


def test_expected_switch_value_broadcasts_streams():
    p = torch.tensor([0.25, 1.0])
    qk = torch.tensor([[1.0, 10.0], [2.0, 20.0]])
    qn = torch.tensor([[3.0, 30.0], [4.0, 40.0]])
    v = losses.expected_switch_value(p, qk, qn).numpy()
    np.testing.assert_allclose(v, [[0.75 * 1 + 0.25 * 3, 0.75 * 10 + 0.25 * 30], [4.0, 40.0]])


def test_critic_loss_per_replica_masked():
    q = torch.tensor([[[1.0, 2.0], [3.0, 9.0]], [[0.0, 2.0], [5.0, 9.0]]])  # [R=2, B=2, L=2]
    g = torch.tensor([[2.0, 2.0], [1.0, -100.0]])
    valid = torch.tensor([[True, True], [True, False]])
    got = losses.critic_loss(q, g, valid).item()
    r0 = 0.5 * ((1 - 2) ** 2 + 0 + (3 - 1) ** 2) / 3
    r1 = 0.5 * ((0 - 2) ** 2 + 0 + (5 - 1) ** 2) / 3
    assert got == pytest.approx(r0 + r1)


def test_actor_loss_gradient_routing():
    x = torch.tensor([0.3, -0.2, 0.5], requires_grad=True)
    log_pi = (x ** 2) * 0.5  # stand-in differentiable log prob
    q_new = 2.0 * x + 1.0
    p_switch = torch.tensor([0.9, 0.1, 0.5], requires_grad=True)
    alpha = torch.tensor(0.2, requires_grad=True)
    mask = torch.tensor([True, True, False])
    loss = losses.actor_loss(log_pi, q_new, p_switch, alpha, mask)
    expected = ((0.2 * 0.045 - 0.9 * 1.6) + (0.2 * 0.02 - 0.1 * 0.6)) / 2
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    loss.backward()
    # d/dx_i = (alpha * x_i - beta_1 * 2) / 2 on valid rows, 0 on the masked one.
    np.testing.assert_allclose(x.grad.numpy(), [(0.2 * 0.3 - 1.8) / 2, (0.2 * -0.2 - 0.2) / 2, 0.0], rtol=1e-5)
    assert p_switch.grad is None and alpha.grad is None


def test_temperature_loss_sign_and_detach():
    log_alpha = torch.tensor(0.0, requires_grad=True)
    ent = torch.tensor([0.1, 0.3, 5.0], requires_grad=True)
    mask = torch.tensor([True, True, False])
    loss = losses.temperature_loss(log_alpha, ent, 0.5, mask)
    loss.backward()
    # mean entropy 0.2 below target 0.5: gradient -0.3 -> gradient descent raises alpha.
    assert log_alpha.grad.item() == pytest.approx(-0.3)
    assert ent.grad is None
