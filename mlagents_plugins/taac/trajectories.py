"""Action trajectories of TAAC and their update rules (pure tensor functions).

A trajectory ``tau`` is the parameter vector of a short open-loop action curve.  It is stored flat as
``[..., num_params(kind) * A]`` laid out ``[a | v | u]`` (action, first and second derivative, each of
width ``A`` = continuous action size), so it can travel through the ONNX ``recurrent_in`` memory and the
replay buffer as plain floats.

Kinds (Yu, Xu, Zhang 2021, "TAAC", Sec. 5 and appendix on higher-order trajectories):

* ``constant`` (TAAC): ``tau = (a)``; keeping the trajectory repeats the action.
* ``linear`` (TAAC-L): ``tau = (a, v)``; keeping advances ``a <- clip(a + 2 v)``.
* ``quadratic`` (TAAC-Q): ``tau = (a, v, u)``; keeping advances ``v <- clip(v + 2 u)`` then
  ``a <- clip(a + 2 v)``.

The factor 2 lets a derivative in ``[-1, 1]`` reach the whole action range ``[-1, 1]`` in one step;
clipping to ``[-1, 1]`` keeps every executed action legal (the "clamped" rules).

A new trajectory is built from the actor's proposal ``x`` (a value in ``[-1, 1]``) and the previous one:

* ``inverse_mode=True`` (default): ``x`` is the next *action*; the derivatives are inferred so that the
  new curve passes through the previous action one step earlier (``v = (x - a^-) / 2``, and for the
  quadratic kind, after resetting ``v^-`` to 0, ``u = v / 2``).
* ``inverse_mode=False``: ``x`` is the new highest derivative (``v`` for linear, ``u`` for quadratic with
  ``v^-`` reset to 0) and the action is obtained by advancing one step.
"""
import warnings
from enum import Enum
from typing import Tuple

from mlagents.torch_utils import torch


class TrajectoryKind(Enum):
    CONSTANT = "constant"
    LINEAR = "linear"
    QUADRATIC = "quadratic"


_NUM_PARAMS = {TrajectoryKind.CONSTANT: 1, TrajectoryKind.LINEAR: 2, TrajectoryKind.QUADRATIC: 3}


def num_params(kind: TrajectoryKind) -> int:
    """Number of ``A``-wide blocks in a trajectory of ``kind`` (1, 2 or 3)."""
    return _NUM_PARAMS[kind]


def trajectory_size(kind: TrajectoryKind, action_size: int) -> int:
    return num_params(kind) * action_size


def _split(tau: torch.Tensor, kind: TrajectoryKind, action_size: int) -> Tuple[torch.Tensor, ...]:
    expected = trajectory_size(kind, action_size)
    if not torch.jit.is_tracing() and tau.shape[-1] != expected:
        raise ValueError(
            f"trajectory of kind {kind.value!r} with action size {action_size} must have last dim "
            f"{expected}, got shape {tuple(tau.shape)}"
        )
    # narrow on a non-negative axis: a static Slice the opset-9 ONNX exporter accepts (no Split op, which
    # Unity's inference engine has not always supported; mlagents' own LSTM avoids it for that reason).
    axis = tau.dim() - 1
    return tuple(torch.narrow(tau, axis, i * action_size, action_size) for i in range(num_params(kind)))


def _static_width(x: torch.Tensor) -> int:
    """Last-dim size as a Python int: fixed for a given model, so a constant in the exported graph (the ONNX
    tracer's warning about it is silenced only while tracing, since ``torch.compile`` cannot trace the
    ``warnings`` filters)."""
    if not torch.jit.is_tracing():
        return int(x.shape[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=torch.jit.TracerWarning)
        return int(x.shape[-1])


def action_of(tau: torch.Tensor, action_size: int) -> torch.Tensor:
    """The action the trajectory executes now: its ``a`` block."""
    return torch.narrow(tau, tau.dim() - 1, 0, action_size)


def advance(tau_tm1: torch.Tensor, kind: TrajectoryKind, action_size: int) -> torch.Tensor:
    """Keep the previous trajectory (switch ``b = 0``): move it one step along its curve."""
    if kind == TrajectoryKind.CONSTANT:
        _split(tau_tm1, kind, action_size)
        return tau_tm1
    if kind == TrajectoryKind.LINEAR:
        a, v = _split(tau_tm1, kind, action_size)
        return torch.cat([torch.clamp(a + 2.0 * v, -1.0, 1.0), v], dim=-1)
    a, v, u = _split(tau_tm1, kind, action_size)
    v_t = torch.clamp(v + 2.0 * u, -1.0, 1.0)
    a_t = torch.clamp(a + 2.0 * v_t, -1.0, 1.0)
    return torch.cat([a_t, v_t, u], dim=-1)


def from_proposal(
    x_t: torch.Tensor, tau_tm1: torch.Tensor, kind: TrajectoryKind, inverse_mode: bool
) -> torch.Tensor:
    """Build the new trajectory (switch ``b = 1``) from the actor's proposal ``x_t`` (``[..., A]``).

    Differentiable in ``x_t`` (the actor gradient flows through it); ``tau_tm1`` is treated as data.
    """
    action_size = _static_width(x_t)
    parts = _split(tau_tm1, kind, action_size)
    a_tm1 = parts[0]
    if kind == TrajectoryKind.CONSTANT:
        return x_t
    if kind == TrajectoryKind.LINEAR:
        if inverse_mode:
            return torch.cat([x_t, (x_t - a_tm1) / 2.0], dim=-1)
        return torch.cat([torch.clamp(a_tm1 + 2.0 * x_t, -1.0, 1.0), x_t], dim=-1)
    if inverse_mode:
        v_t = (x_t - a_tm1) / 2.0
        return torch.cat([x_t, v_t, v_t / 2.0], dim=-1)
    # u = x, previous v reset to 0, then one step of the quadratic rule.
    v_t = torch.clamp(2.0 * x_t, -1.0, 1.0)
    a_t = torch.clamp(a_tm1 + 2.0 * v_t, -1.0, 1.0)
    return torch.cat([a_t, v_t, x_t], dim=-1)


def select(b_t: torch.Tensor, tau_keep: torch.Tensor, tau_new: torch.Tensor) -> torch.Tensor:
    """Per row, ``tau_new`` where the switch ``b_t`` (``[...]``, bool or 0/1) is set, else ``tau_keep``."""
    return torch.where(b_t.bool().unsqueeze(b_t.dim()), tau_new, tau_keep)


def next_repeats(b_t: torch.Tensor, repeats_tm1: torch.Tensor) -> torch.Tensor:
    """Steps the executed trajectory has been in use, including this one (1 right after a switch)."""
    return torch.where(b_t.bool(), torch.ones_like(repeats_tm1), repeats_tm1 + 1)


def force_switch(b_t: torch.Tensor, repeats_tm1: torch.Tensor, max_repeat_steps: int) -> torch.Tensor:
    """``max_repeat_steps`` (rollout and inference only): switch once ``tau^-`` ran that many steps.

    ``max_repeat_steps <= 0`` means no limit.
    """
    if max_repeat_steps <= 0:
        return b_t.bool()
    return b_t.bool() | (repeats_tm1 >= max_repeat_steps)
