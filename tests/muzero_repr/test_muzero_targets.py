"""Unroll targets vs. a naive per-sample loop over asymmetric data."""
import random

import pytest
import torch

from mlagents_plugins.muzero_repr.targets import actions_for_unroll, compute_unroll_targets


def naive_targets(r, terminal, end, valid, v_next, gamma, K, n):
    """Straightforward re-statement of the definitions for one window (lists of Python scalars)."""
    W = K + n
    alive = []
    ok = True
    for j in range(W):
        ok = ok and valid[j] and (j == 0 or not end[j - 1])
        alive.append(ok)
    values, vmask = [], []
    for k in range(K + 1):
        if not alive[k]:
            values.append(0.0)
            vmask.append(False)
            continue
        g, i = 0.0, k
        while True:
            g += gamma ** (i - k) * r[i]
            last_stored = i + 1 >= W or not valid[i + 1]
            if end[i] or last_stored or i - k + 1 == n:
                break
            i += 1
        m = i - k + 1
        if not terminal[i]:
            g += gamma**m * v_next[i]
        values.append(g)
        vmask.append(True)
    rewards = [r[k] if alive[k] else 0.0 for k in range(K)]
    rmask = [alive[k] for k in range(K)]
    game_over, gmask = [], []
    for k in range(K + 1):
        go = any(terminal[j] and alive[j] for j in range(k))
        game_over.append(1.0 if go else 0.0)
        gmask.append(alive[k] or go)
    return values, vmask, rewards, rmask, game_over, gmask


def random_windows(B, W, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(B):
        r = [rng.uniform(-2, 3) for _ in range(W)]
        end = [rng.random() < 0.25 for _ in range(W)]
        terminal = [e and rng.random() < 0.5 for e in end]
        cut = rng.randrange(1, W + 1) if rng.random() < 0.4 else W
        valid = [j < cut for j in range(W)]
        v_next = [rng.uniform(-5, 5) for _ in range(W)]
        rows.append((r, terminal, end, valid, v_next))
    return rows


@pytest.mark.parametrize("K,n,gamma", [(3, 4, 0.9), (5, 1, 0.8), (0, 3, 0.97), (2, 6, 0.5)])
def test_targets_match_naive_loop(K, n, gamma):
    W = K + n
    rows = random_windows(64, W, seed=K * 10 + n)
    tens = [torch.tensor([row[i] for row in rows]) for i in range(5)]
    out = compute_unroll_targets(*tens, gamma=gamma, num_unroll_steps=K, td_steps=n)
    assert out.value_target_k.shape == (64, K + 1) and out.reward_target_k.shape == (64, K)
    for b, row in enumerate(rows):
        v, vm, rw, rm, go, gm = naive_targets(*row, gamma, K, n)
        assert out.value_target_k[b].tolist() == pytest.approx(v, abs=1e-5), b
        assert out.value_mask_k[b].tolist() == vm
        assert out.reward_target_k[b].tolist() == pytest.approx(rw, abs=1e-6)
        assert out.reward_mask_k[b].tolist() == rm
        assert out.game_over_target_k[b].tolist() == go
        assert out.game_over_mask_k[b].tolist() == gm


def test_targets_hand_cases_terminal_timeout_segment_end():
    # K = 1, n = 3, gamma = 0.5, W = 4; rewards differ so any index slip shows.
    r = torch.tensor([[1.0, 2.0, 4.0, 8.0]] * 4)
    v_next = torch.tensor([[10.0, 20.0, 40.0, 80.0]] * 4)
    F, T = False, True
    terminal = torch.tensor([[F, T, F, F], [F, F, F, F], [F, F, F, F], [F, F, F, F]])
    end = torch.tensor([[F, T, F, F], [F, T, F, F], [F, F, F, F], [F, F, F, F]])
    valid = torch.tensor([[T, T, T, T], [T, T, T, T], [T, T, F, F], [T, T, T, T]])
    out = compute_unroll_targets(r, terminal, end, valid, v_next, 0.5, 1, 3)
    # 0) terminal after row 1: z0 = 1 + 0.5*2 ; z1 = 2 (no bootstrap)
    # 1) time-out after row 1: z0 = 1 + 0.5*2 + 0.25*v_next[1]=20 ; z1 = 2 + 0.5*20
    # 2) stored data ends after row 1: same bootstrap from row 1's next obs as a time-out
    # 3) full n-step: z0 = 1 + 1 + 1 + 0.125*40 ; z1 = 2 + 2 + 2 + 0.125*80
    expected = torch.tensor([[2.0, 2.0], [7.0, 12.0], [7.0, 12.0], [8.0, 16.0]])
    assert torch.allclose(out.value_target_k, expected)
    assert out.game_over_target_k.tolist() == [[0.0, 0.0]] * 4
    # Beyond the end at unroll step 1? Not yet at K=1: row 1 still alive in all four.
    assert out.value_mask_k.all()


def test_beyond_end_masks_and_game_over():
    F, T = False, True
    # K = 3, n = 1: terminal at row 0 -> steps 1..3 beyond the end; time-out at row 1 in sample 2.
    r = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    terminal = torch.tensor([[T, F, F, F], [F, F, F, F]])
    end = torch.tensor([[T, F, T, F], [F, T, F, F]])
    valid = torch.ones(2, 4, dtype=torch.bool)
    out = compute_unroll_targets(r, terminal, end, valid, torch.full((2, 4), 9.0), 0.9, 3, 1)
    assert out.value_mask_k.tolist() == [[T, F, F, F], [T, T, F, F]]
    assert out.reward_mask_k.tolist() == [[T, F, F], [T, T, F]]
    assert out.reward_target_k.tolist() == [[1.0, 0.0, 0.0], [1.0, 2.0, 0.0]]
    assert out.game_over_target_k.tolist() == [[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
    # after the terminal the game-over head is trained (absorbing), after the time-out it is unknown
    assert out.game_over_mask_k.tolist() == [[T, T, T, T], [T, T, F, F]]
    assert out.value_target_k[0, 0] == pytest.approx(1.0)
    assert out.value_target_k[1, 1] == pytest.approx(2.0 + 0.9 * 9.0)


def test_bad_shapes_raise():
    z = torch.zeros(2, 4)
    b = torch.zeros(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match="window length"):
        compute_unroll_targets(z, b, b, b, z, 0.9, 2, 3)
    with pytest.raises(ValueError, match="v_t"):
        compute_unroll_targets(z, b, b, b, torch.zeros(2, 3), 0.9, 1, 3)
    with pytest.raises(ValueError, match="terminal_t set"):
        t = b.clone()
        t[0, 1] = True
        compute_unroll_targets(z, t, b, b, z, 0.9, 1, 3)


def test_actions_for_unroll_repeat_and_random():
    a = torch.tensor([[[1.0], [2.0], [3.0], [4.0]], [[5.0], [6.0], [7.0], [8.0]]])
    alive = torch.tensor([[True, True, False, False], [True, True, True, True]])
    rep = actions_for_unroll(a, alive, "repeat")
    assert rep.squeeze(-1).tolist() == [[1.0, 2.0, 2.0, 2.0], [5.0, 6.0, 7.0, 8.0]]
    rnd = torch.full_like(a, -1.0)
    out = actions_for_unroll(a, alive, "random", rnd)
    assert out.squeeze(-1).tolist() == [[1.0, 2.0, -1.0, -1.0], [5.0, 6.0, 7.0, 8.0]]
    with pytest.raises(ValueError, match="mode must be one of"):
        actions_for_unroll(a, alive, "zero")


@pytest.mark.parametrize("K,n", [(3, 4), (2, 1), (4, 6)])
def test_bootstrap_rows_pick_the_only_row_that_matters(K, n):
    """Values placed only at the returned rows give the same targets as a full v_next."""
    from mlagents_plugins.muzero_repr.targets import bootstrap_rows

    rows = random_windows(48, K + n, seed=7 + K)
    r, terminal, end, valid, v_next = [torch.tensor([row[i] for row in rows]) for i in range(5)]
    last = bootstrap_rows(terminal, end, valid, K, n)
    assert last.shape == (48, K + 1)
    sparse = torch.zeros_like(v_next).scatter(1, last, v_next.gather(1, last))
    full = compute_unroll_targets(r, terminal, end, valid, v_next, 0.9, K, n)
    part = compute_unroll_targets(r, terminal, end, valid, sparse, 0.9, K, n)
    assert torch.allclose(full.value_target_k, part.value_target_k)
    # and against the naive scan for alive steps
    for b, row in enumerate(rows):
        _, vmask, *_ = naive_targets(*row, 0.9, K, n)
        for k in range(K + 1):
            if not vmask[k]:
                continue
            i = k
            while not (end[b, i] or i + 1 >= K + n or not valid[b, i + 1] or i - k + 1 == n):
                i += 1
            assert int(last[b, k]) == i
