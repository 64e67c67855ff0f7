"""SumTree sampling and updates against an exact distribution / naive loops."""
import numpy as np
import pytest

from mlagents_plugins.replay import SumTree, importance_weights

# chi-square critical values at p = 0.001 by degrees of freedom (tables)
CHI2_999 = {4: 18.467, 7: 24.322, 8: 26.124, 9: 27.877}


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    n = counts.sum()
    stat = 0.0
    for c, p in zip(counts, probs):
        if p > 0:
            stat += (c - n * p) ** 2 / (n * p)
    return stat


@pytest.mark.parametrize("capacity", [10, 13])
def test_sampling_frequencies_match_priorities(capacity):
    pri = np.array([0.0, 1.0, 2.5, 0.5, 7.0, 0.0, 3.0, 0.1, 1.5, 4.0, 2.0, 0.0, 6.0][:capacity])
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), pri)
    total = 0.0
    for p in pri:
        total += p
    assert tree.total == pytest.approx(total)
    rng = np.random.default_rng(1234)
    idx, probs = tree.sample(200_000, rng)
    counts = np.bincount(idx, minlength=capacity)
    assert counts[pri == 0].sum() == 0  # zero-priority rows never drawn
    exact = pri / total
    np.testing.assert_allclose(probs, exact[idx])
    df = int((pri > 0).sum()) - 1
    assert chi_square(counts, exact) < CHI2_999[df]


def naive_find(leaves, mass):
    acc = 0.0
    for i, p in enumerate(leaves):
        if p > 0 and mass < acc + p:
            return i
        acc += p
    return max(i for i, p in enumerate(leaves) if p > 0)


def test_updates_with_duplicates_keep_sums_exact():
    rng = np.random.default_rng(7)
    cap = 37
    tree = SumTree(cap)
    model = [0.0] * cap
    running_max = 1.0  # the initial max priority
    for _ in range(50):
        idx = rng.integers(0, cap, size=12)
        val = rng.random(12) * 10
        tree.update(idx, val)
        for i, v in zip(idx, val):  # last write wins
            model[i] = v
            running_max = max(running_max, v)
    np.testing.assert_allclose(tree.priorities(), model)
    assert tree.total == pytest.approx(sum(model))
    assert tree.max_priority == running_max  # max of every priority ever set
    masses = np.linspace(0, tree.total, 500, endpoint=False)
    found = tree.find(masses)
    assert list(found) == [naive_find(model, m) for m in masses]
    # set a row to zero: never sampled again
    tree.update(np.array([int(np.argmax(model))]), np.array([0.0]))
    i, _ = tree.sample(5000, rng)
    assert int(np.argmax(model)) not in set(i.tolist())


def test_max_priority_for_new_rows_and_validation():
    tree = SumTree(4)
    tree.set_to_max(np.array([0, 1]))
    np.testing.assert_array_equal(tree.priorities(), [1, 1, 0, 0])
    tree.update(np.array([1]), np.array([5.0]))
    tree.set_to_max(np.array([2]))
    np.testing.assert_array_equal(tree.priorities(), [1, 5, 5, 0])
    with pytest.raises(ValueError, match="finite and >= 0"):
        tree.update(np.array([0]), np.array([-1.0]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        tree.update(np.array([0]), np.array([np.nan]))
    with pytest.raises(IndexError):
        tree.update(np.array([4]), np.array([1.0]))
    with pytest.raises(ValueError, match="all zero"):
        SumTree(3).sample(2, np.random.default_rng(0))
    one = SumTree(1)
    one.update(np.array([0]), np.array([2.0]))
    i, p = one.sample(3, np.random.default_rng(0))
    assert list(i) == [0, 0, 0] and np.allclose(p, 1.0)


def test_importance_weights_match_naive_formula():
    probs = np.array([0.05, 0.2, 0.01, 0.5, 0.1])
    size, beta = 40, 0.6
    raw = [(size * p) ** (-beta) for p in probs]
    mx = max(raw)
    expect = [r / mx for r in raw]
    got = importance_weights(probs, size, beta)
    np.testing.assert_allclose(got, expect, rtol=1e-6)
    assert got.argmax() == 2  # rarest sample gets the largest weight
    np.testing.assert_allclose(SumTree.importance_weights(probs, size, 0.0), 1.0)
    with pytest.raises(ValueError, match="beta"):
        importance_weights(probs, size, 1.5)


def test_find_never_lands_on_zero_priority_row_at_the_top_edge():
    # mass == total (what rng.random() * total can round up to) must still pick a row with priority > 0
    tree = SumTree(8)
    tree.update(np.arange(8), np.array([0.1, 0.2, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0]))
    assert list(tree.find(np.array([tree.total, tree.total * (1 + 1e-12)]))) == [4, 4]
    one = SumTree(4)
    one.update(np.array([0]), np.array([1.0]))
    assert list(one.find(np.array([1.0, 0.999999]))) == [0, 0]
