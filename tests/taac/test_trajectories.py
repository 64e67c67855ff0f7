"""Trajectory update rules against hand-computed values (clamping, inverse_mode)."""
import numpy as np
import pytest
from mlagents.torch_utils import torch

from mlagents_plugins.taac.trajectories import (
    TrajectoryKind,
    action_of,
    advance,
    force_switch,
    from_proposal,
    next_repeats,
    select,
)

C, L, Q = TrajectoryKind.CONSTANT, TrajectoryKind.LINEAR, TrajectoryKind.QUADRATIC


def t(*rows):
    return torch.tensor(rows, dtype=torch.float32)


def test_constant_repeats_and_takes_proposal():
    tau = t([0.3, -0.7])
    np.testing.assert_allclose(advance(tau, C, 2).numpy(), [[0.3, -0.7]])
    np.testing.assert_allclose(from_proposal(t([0.1, 0.2]), tau, C, True).numpy(), [[0.1, 0.2]])


def test_linear_advance_with_clamp():
    # A=2: a=(0.2, 0.9), v=(0.1, 0.3): a+2v = (0.4, 1.5 -> 1.0)
    tau = t([0.2, 0.9, 0.1, 0.3])
    np.testing.assert_allclose(advance(tau, L, 2).numpy(), [[0.4, 1.0, 0.1, 0.3]], rtol=1e-6)
    # Negative side clamps too and v is kept.
    tau = t([-0.5, -0.4])
    np.testing.assert_allclose(advance(tau, L, 1).numpy(), [[-1.0, -0.4]], rtol=1e-6)


def test_linear_from_proposal_inverse_and_direct():
    tau = t([0.2, 0.7])  # A=1: a=0.2, v=0.7
    x = t([-0.6])
    np.testing.assert_allclose(from_proposal(x, tau, L, True).numpy(), [[-0.6, -0.4]], rtol=1e-6)
    # Direct: x is the new v; a = clip(0.2 + 2*(-0.6)) = -1.0
    np.testing.assert_allclose(from_proposal(x, tau, L, False).numpy(), [[-1.0, -0.6]], rtol=1e-6)
    np.testing.assert_allclose(from_proposal(t([0.1]), tau, L, False).numpy(), [[0.4, 0.1]], rtol=1e-6)


def test_quadratic_advance_clamps_v_then_a():
    # a=0.1, v=0.3, u=0.45: v' = clip(0.3+0.9)=1.0, a' = clip(0.1+2.0)=1.0
    np.testing.assert_allclose(advance(t([0.1, 0.3, 0.45]), Q, 1).numpy(), [[1.0, 1.0, 0.45]], rtol=1e-6)
    # no clamp: a=0.1, v=-0.1, u=0.05: v'=0.0, a'=0.1
    np.testing.assert_allclose(advance(t([0.1, -0.1, 0.05]), Q, 1).numpy(), [[0.1, 0.0, 0.05]], atol=1e-7)
    # a=-0.2, v=0.1, u=-0.2: v'=-0.3, a'=-0.8
    np.testing.assert_allclose(advance(t([-0.2, 0.1, -0.2]), Q, 1).numpy(), [[-0.8, -0.3, -0.2]], rtol=1e-6)


def test_quadratic_from_proposal_inverse_and_direct():
    tau = t([0.4, 0.9, -0.3])
    # inverse: a=x, v=(x-a^-)/2, u=v/2 (previous v ignored)
    np.testing.assert_allclose(from_proposal(t([-0.2]), tau, Q, True).numpy(), [[-0.2, -0.3, -0.15]], rtol=1e-6)
    # direct: u=x, v = clip(0 + 2x), a = clip(a^- + 2v)
    np.testing.assert_allclose(from_proposal(t([0.1]), tau, Q, False).numpy(), [[0.8, 0.2, 0.1]], rtol=1e-6)
    np.testing.assert_allclose(from_proposal(t([-0.7]), tau, Q, False).numpy(), [[-1.0, -1.0, -0.7]], rtol=1e-6)


def test_inverse_proposal_then_advance_continues_the_line():
    # A new linear trajectory passes through the previous action one step earlier and keeps its slope.
    tau = t([0.1, 0.0])
    new = from_proposal(t([0.3]), tau, L, True)
    np.testing.assert_allclose(action_of(advance(new, L, 1), 1).numpy(), [[0.5]], rtol=1e-6)


def test_from_proposal_is_differentiable_in_x():
    x = torch.tensor([[0.2, -0.1]], requires_grad=True)
    tau = t([0.0, 0.5, 0.1, 0.1, 0.0, 0.0])
    from_proposal(x, tau, Q, True).sum().backward()
    # d/dx of (x + (x-a)/2 + (x-a)/4) = 1.75
    np.testing.assert_allclose(x.grad.numpy(), [[1.75, 1.75]])


def test_select_repeats_and_force_switch():
    keep = t([1.0, 1.0], [2.0, 2.0], [3.0, 3.0])
    new = t([-1.0, -1.0], [-2.0, -2.0], [-3.0, -3.0])
    b = torch.tensor([True, False, True])
    np.testing.assert_allclose(select(b, keep, new).numpy(), [[-1, -1], [2, 2], [-3, -3]])
    reps = torch.tensor([4.0, 4.0, 0.0])
    np.testing.assert_allclose(next_repeats(b, reps).numpy(), [1.0, 5.0, 1.0])
    forced = force_switch(torch.tensor([False, False, True]), torch.tensor([3.0, 2.0, 0.0]), 3)
    assert forced.tolist() == [True, False, True]
    assert force_switch(torch.tensor([False]), torch.tensor([100.0]), 0).tolist() == [False]


def test_wrong_width_is_rejected():
    with pytest.raises(ValueError, match="last dim 4"):
        advance(t([0.1, 0.2, 0.3]), L, 2)
