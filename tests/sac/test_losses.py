"""SAC head loss math (fast_sac, muzero_repr's RL head) against naive Python-loop references on asymmetric inputs."""
import math

import numpy as np
import pytest
import torch

from mlagents_plugins.sac import losses


def naive_n_step(r, terminal, valid, gammas, v_t):
    """Explicit loop: walk forward until a terminal, an invalid step or the window end."""
    B, N, S = r.shape
    out = np.zeros((B, S))
    disc_out = np.zeros((B, S))
    for b in range(B):
        for s in range(S):
            g, disc = 0.0, 1.0
            for j in range(N):
                if not valid[b, j]:
                    break
                g += disc * r[b, j, s]
                disc *= gammas[s] * (0.0 if terminal[b, j] else 1.0)
                if terminal[b, j]:
                    break
            out[b, s] = g + disc * v_t[b, s]
            disc_out[b, s] = disc
    return out, disc_out


def test_n_step_targets_match_naive_loop_with_terminals_timeouts_and_segment_ends():
    rng = np.random.default_rng(3)
    B, N, S = 6, 4, 2
    gammas = [0.9, 0.5]
    r = rng.normal(size=(B, N, S))
    terminal = np.zeros((B, N), bool)
    valid = np.ones((B, N), bool)
    terminal[1, 2] = True  # true terminal inside the window: no bootstrap, later steps ignored
    valid[2, 3] = False  # segment ends after 3 steps (chunk boundary): bootstrap at step 2's next obs
    valid[3, 1:] = False  # one-step segment
    valid[4, 2] = False
    valid[4, 3] = True  # a valid step after an invalid one must not count
    # row 5: time-out on the last step = interruption, terminal False -> bootstraps
    v_t = rng.normal(size=(B, S))
    discount = np.stack([g * (1.0 - terminal) for g in gammas], axis=-1)
    y, d = losses.n_step_targets(
        torch.tensor(r), torch.tensor(discount), torch.tensor(valid), torch.tensor(v_t)
    )
    y_ref, d_ref = naive_n_step(r, terminal, valid, gammas, v_t)
    np.testing.assert_allclose(y.numpy(), y_ref, rtol=1e-12)
    np.testing.assert_allclose(d.numpy(), d_ref, rtol=1e-12)
    # hand check of the terminal row, stream 0: r0 + .9 r1 + .81 r2, nothing after
    assert y[1, 0].item() == pytest.approx(r[1, 0, 0] + 0.9 * r[1, 1, 0] + 0.81 * r[1, 2, 0])
    # hand check of the one-step segment: r0 + gamma * v
    assert y[3, 1].item() == pytest.approx(r[3, 0, 1] + 0.5 * v_t[3, 1])


def test_n_step_targets_shape_errors_name_the_argument():
    with pytest.raises(ValueError, match="discount_t"):
        losses.n_step_targets(torch.zeros(2, 3, 1), torch.zeros(2, 3, 2), torch.ones(2, 3, dtype=torch.bool), torch.zeros(2, 1))
    with pytest.raises(ValueError, match="v_t"):
        losses.n_step_targets(torch.zeros(2, 3, 1), torch.zeros(2, 3, 1), torch.ones(2, 3, dtype=torch.bool), torch.zeros(3, 1))


def test_condense_q_picks_each_branch_entry_and_averages():
    branches = [2, 3]
    q = torch.arange(2 * 2 * 5, dtype=torch.float64).reshape(2, 2, 5) ** 1.5
    acts = torch.tensor([[1, 0], [0, 2]])
    out = losses.condense_q(q, acts, branches)
    for b in range(2):
        for s in range(2):
            ref = (q[b, s, acts[b, 0]] + q[b, s, 2 + acts[b, 1]]) / 2
            assert out[b, s].item() == pytest.approx(ref.item())


def naive_soft_value(q, lp_c, lp_d, a_c, a_d, branches):
    B, S, A = q.shape
    out = np.zeros((B, S))
    for b in range(B):
        for s in range(S):
            if lp_d is None:
                v = q[b, s, 0]
            else:
                eq, ent = 0.0, 0.0
                off = 0
                for k, n in enumerate(branches):
                    p = [math.exp(lp_d[b, off + i]) for i in range(n)]
                    eq += sum(p[i] * q[b, s, off + i] for i in range(n)) / len(branches)
                    ent += a_d[k] * sum(p[i] * lp_d[b, off + i] for i in range(n))
                    off += n
                v = eq - ent
            if lp_c is not None:
                v -= a_c * lp_c[b]
            out[b, s] = v
    return out


def _disc_log_probs(rng, B, branches):
    parts = []
    for n in branches:
        logits = rng.normal(size=(B, n)) * 2
        parts.append(logits - np.log(np.exp(logits).sum(1, keepdims=True)))
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("kind", ["continuous", "discrete", "hybrid"])
def test_soft_value_and_policy_loss_match_naive(kind):
    rng = np.random.default_rng(7)
    B, S = 5, 2
    branches = [3, 2] if kind != "continuous" else []
    A = sum(branches) if branches else 1
    q = rng.normal(size=(B, S, A))
    lp_c = rng.normal(size=B) if kind != "discrete" else None
    lp_d = _disc_log_probs(rng, B, branches) if branches else None
    a_c, a_d = 0.3, [0.7, 0.05][: len(branches)]
    t = lambda x: None if x is None else torch.tensor(x)  # noqa: E731
    v = losses.soft_value(t(q), t(lp_c), t(lp_d), torch.tensor(a_c, dtype=torch.float64), torch.tensor(a_d, dtype=torch.float64), branches)
    ref = naive_soft_value(q, lp_c, lp_d, a_c, a_d, branches)
    np.testing.assert_allclose(v.numpy(), ref, rtol=1e-10)
    pl = losses.policy_loss(t(q), t(lp_c), t(lp_d), torch.tensor(a_c, dtype=torch.float64), torch.tensor(a_d, dtype=torch.float64), branches)
    assert pl.item() == pytest.approx(-ref.mean())


def test_twin_q_loss_matches_naive_and_weights_apply():
    rng = np.random.default_rng(11)
    B, S = 4, 3
    q1, q2, y = (rng.normal(size=(B, S)) for _ in range(3))
    w = np.array([0.1, 1.0, 2.0, 0.5])
    l1, l2, td = losses.twin_q_loss(torch.tensor(q1), torch.tensor(q2), torch.tensor(y), torch.tensor(w))
    ref1 = sum(w[b] * sum((q1[b, s] - y[b, s]) ** 2 for s in range(S)) / S for b in range(B)) / B * 0.5
    ref2 = sum(w[b] * sum((q2[b, s] - y[b, s]) ** 2 for s in range(S)) / S for b in range(B)) / B * 0.5
    assert l1.item() == pytest.approx(ref1)
    assert l2.item() == pytest.approx(ref2)
    for b in range(B):
        ref_td = sum(max(abs(q1[b, s] - y[b, s]), abs(q2[b, s] - y[b, s])) for s in range(S)) / S
        assert td[b].item() == pytest.approx(ref_td)


def test_twin_q_loss_sends_no_gradient_to_target():
    q1 = torch.randn(3, 1, requires_grad=True)
    q2 = torch.randn(3, 1, requires_grad=True)
    y = torch.randn(3, 1, requires_grad=True)
    l1, l2, _ = losses.twin_q_loss(q1, q2, y)
    (l1 + l2).backward()
    assert y.grad is None
    assert q1.grad is not None and q2.grad is not None


def test_temperature_loss_matches_naive_and_moves_only_alpha():
    rng = np.random.default_rng(5)
    B, branches = 6, [2, 4]
    lp_c = torch.tensor(rng.normal(size=B), requires_grad=True)
    lp_d = torch.tensor(_disc_log_probs(rng, B, branches), requires_grad=True)
    la_c = torch.tensor([0.2], dtype=torch.float64, requires_grad=True)
    la_d = torch.tensor([-0.5, 0.3], dtype=torch.float64, requires_grad=True)
    tgt_c, tgt_d = -2.0, [0.1, 0.25]
    loss = losses.temperature_loss(la_c, la_d, lp_c, lp_d, tgt_c, tgt_d, branches)
    lpd = lp_d.detach().numpy()
    ref = 0.0
    for k, (off, n) in enumerate([(0, 2), (2, 4)]):
        ref -= la_d[k].item() * np.mean([sum(math.exp(lpd[b, off + i]) * lpd[b, off + i] for i in range(n)) + tgt_d[k] for b in range(B)])
    ref -= la_c.item() * np.mean(lp_c.detach().numpy() + tgt_c)
    assert loss.item() == pytest.approx(ref)
    loss.backward()
    assert lp_c.grad is None and lp_d.grad is None
    # too little entropy (log pi large) must push log_alpha up: gradient negative
    la = torch.zeros(1, requires_grad=True)
    losses.temperature_loss(la, torch.zeros(0), torch.full((4,), 5.0), None, -1.0, [], []).backward()
    assert la.grad.item() < 0


def test_per_priorities():
    td = torch.tensor([0.0, 1.0, 4.0])
    np.testing.assert_allclose(losses.per_priorities(td, 0.5, eps=0.0).numpy(), [0.0, 1.0, 2.0])


def test_masked_target_entropy_scales_with_allowed_actions_and_accepts_per_sample_targets():
    branches = [3, 2]
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 1, 0, 1, 0], [1, 0, 1, 1, 1]], dtype=torch.float32)
    t = losses.masked_target_entropy(mask, branches, 0.5)
    ref = [[0.5 * math.log(3), 0.5 * math.log(2)], [0.0, 0.0], [0.5 * math.log(2), 0.5 * math.log(2)]]
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6)
    rng = np.random.default_rng(2)
    lp_d = torch.tensor(_disc_log_probs(rng, 3, branches), dtype=torch.float32)
    la_d = torch.tensor([0.1, -0.2], requires_grad=True)
    loss = losses.temperature_loss(torch.zeros(1), la_d, None, lp_d, 0.0, t, branches)
    lpd = lp_d.numpy()
    ref_loss = 0.0
    for k, (off, n) in enumerate([(0, 3), (3, 2)]):
        gaps = [sum(math.exp(lpd[b, off + i]) * lpd[b, off + i] for i in range(n)) + ref[b][k] for b in range(3)]
        ref_loss -= la_d[k].item() * np.mean(gaps)
    assert loss.item() == pytest.approx(ref_loss, rel=1e-5)


def test_tanh_gaussian_sample_against_scalar_formula():
    mu = torch.tensor([[0.3, -1.2, 2.5], [-0.7, 0.05, -3.0]])
    log_sigma = torch.tensor([[-0.5, 0.4, -2.0], [1.1, -0.1, 0.0]])
    noise = torch.tensor([[1.3, -0.2, 0.9], [-2.1, 0.6, 0.35]])
    a, logp = losses.tanh_gaussian_sample(mu, log_sigma, noise)
    for b in range(2):
        total = 0.0
        for d in range(3):
            m, ls, e = float(mu[b, d]), float(log_sigma[b, d]), float(noise[b, d])
            sigma = math.exp(ls)
            u = m + sigma * e
            assert float(a[b, d]) == pytest.approx(math.tanh(u), abs=1e-6)
            # density of u under N(m, sigma), then change of variables a = tanh(u)
            log_n = -((u - m) ** 2) / (2 * sigma * sigma) - math.log(sigma) - 0.5 * math.log(2 * math.pi)
            total += log_n - math.log(1.0 - math.tanh(u) ** 2)
        assert float(logp[b]) == pytest.approx(total, rel=1e-5, abs=1e-4)


def test_tanh_gaussian_sample_is_finite_where_tanh_saturates():
    mu = torch.tensor([[12.0, -15.0]])
    a, logp = losses.tanh_gaussian_sample(mu, torch.zeros(1, 2), torch.zeros(1, 2))
    assert torch.isfinite(logp).all()
    # log(1 - tanh(u)^2) ~ log 4 - 2|u| for large |u|
    expected = 2 * (-0.5 * math.log(2 * math.pi)) - (math.log(4) - 24.0) - (math.log(4) - 30.0)
    assert float(logp[0]) == pytest.approx(expected, rel=1e-5)


def test_tanh_gaussian_sample_checks_shapes():
    with pytest.raises(ValueError, match="log_sigma"):
        losses.tanh_gaussian_sample(torch.zeros(4, 2), torch.zeros(4, 3), torch.zeros(4, 2))
