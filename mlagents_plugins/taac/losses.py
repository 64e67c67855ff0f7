"""TAAC's losses as pure tensor functions (no networks, no settings), shapes checked on entry.

Notation: ``tau^-`` is the previous trajectory, ``tau_hat`` the actor's proposal, ``b`` the second-stage
switch (``b = 1``: take the proposal, ``b = 0``: keep advancing ``tau^-``), ``alpha_b`` / ``alpha_a`` the
switch / action entropy temperatures.  Equation numbers refer to Yu, Xu, Zhang, "TAAC: Temporally
Abstract Actor-Critic for Continuous Control", NeurIPS 2021 (arXiv 2104.06521).
"""
from typing import NamedTuple, Optional, Tuple

from mlagents.torch_utils import torch

from mlagents_plugins.common.tensor_utils import check_same_shape, masked_mean

# Smallest switch temperature used in a division; below it the switch is (numerically) greedy.
MIN_SWITCH_TEMPERATURE = 1e-10


class SwitchDistribution(NamedTuple):
    """Second-stage policy ``beta(b | s, tau^-, tau_hat) ~ exp(Q(s, tau_b) / alpha_b)`` (Eq. 3)."""

    log_p_keep: torch.Tensor  # log beta(b=0)
    log_p_switch: torch.Tensor  # log beta(b=1)
    p_switch: torch.Tensor  # beta(b=1)
    entropy: torch.Tensor  # H(beta), exact Bernoulli entropy
    advantage: torch.Tensor  # Q(s, tau_hat) - Q(s, tau^-), after optional clipping


def switch_distribution(
    q_keep_t: torch.Tensor,
    q_new_t: torch.Tensor,
    temperature: torch.Tensor,
    advantage_clipping: Optional[Tuple[float, float]] = None,
) -> SwitchDistribution:
    """Softmax over ``(Q(s, tau^-), Q(s, tau_hat))`` at ``temperature``, stable at tiny temperatures.

    Why a sigmoid: a two-way softmax only depends on the advantage ``A = Q_new - Q_keep``, and
    ``sigmoid``/``logsigmoid`` of ``A / alpha_b`` stay finite for any magnitude, so ``alpha_b -> 0`` gives
    the greedy switch without ``exp`` overflow or ``0 * log 0`` NaNs.  ``advantage_clipping`` (``[lo,
    hi]``) bounds ``A`` first (ALF's ``b1_advantage_clipping``), which caps how sure the switch can become
    from a possibly over-estimated critic.
    """
    check_same_shape("switch_distribution", q_keep_t=q_keep_t, q_new_t=q_new_t)
    advantage = q_new_t - q_keep_t
    if advantage_clipping is not None:
        lo, hi = advantage_clipping
        advantage = torch.clamp(advantage, lo, hi)
    if not isinstance(temperature, torch.Tensor):
        temperature = torch.tensor(float(temperature), dtype=advantage.dtype)
    z = advantage / torch.clamp(temperature, min=MIN_SWITCH_TEMPERATURE)
    log_p_switch = torch.nn.functional.logsigmoid(z)
    log_p_keep = torch.nn.functional.logsigmoid(-z)
    p_switch = torch.sigmoid(z)
    p_keep = torch.sigmoid(-z)
    entropy = -(p_keep * log_p_keep + p_switch * log_p_switch)
    return SwitchDistribution(log_p_keep, log_p_switch, p_switch, entropy, advantage)


def expected_switch_value(p_switch_t: torch.Tensor, q_keep_t: torch.Tensor, q_new_t: torch.Tensor) -> torch.Tensor:
    """``E_beta[Q] = (1 - beta_1) Q(s, tau^-) + beta_1 Q(s, tau_hat)``: the bootstrap value of a state.

    ``q_*`` may carry trailing reward-stream dims beyond ``p_switch_t``'s shape; ``p_switch_t`` is
    broadcast over them.
    """
    check_same_shape("expected_switch_value", q_keep_t=q_keep_t, q_new_t=q_new_t)
    if tuple(q_keep_t.shape[: p_switch_t.dim()]) != tuple(p_switch_t.shape):
        raise ValueError(
            f"expected_switch_value: p_switch_t shape {tuple(p_switch_t.shape)} must prefix q shape "
            f"{tuple(q_keep_t.shape)}"
        )
    p = p_switch_t.reshape(tuple(p_switch_t.shape) + (1,) * (q_keep_t.dim() - p_switch_t.dim()))
    return (1.0 - p) * q_keep_t + p * q_new_t


def compare_through_returns(
    r_t: torch.Tensor,
    discount_t: torch.Tensor,
    v_t: torch.Tensor,
    switch_t: torch.Tensor,
    done_t: torch.Tensor,
    valid_t: torch.Tensor,
) -> torch.Tensor:
    """Targets of the compare-through multi-step operator (TAAC Sec. 4.2, Eq. 5), ``[B, L]``.

    Row ``t`` of a sampled window holds ``(s_t, tau^-_t, tau_t, r_t, s_{t+1})`` where ``tau_t`` is the
    trajectory the rollout executed.  The target of ``Q(s_t, tau_t)`` follows the stored sequence for as
    long as the rollout and a freshly sampled switch both kept the trajectory (then the current policy
    would have executed the same action), and bootstraps at the first step where either switched:

        G_t = r_t + discount_t * ( v_t[t]  if cut after t  else  G_{t+1} )

    "cut after t" holds when ``switch_t[t+1]`` (rollout switch OR fresh switch at ``t+1``) is set, when
    the episode ended at ``t`` (``done_t``), when row ``t+1`` is not valid, or at the window's last row.

    :param r_t: reward after acting at ``t``.
    :param discount_t: ``gamma * (1 - terminal_t)``: 0 cuts the return at a real terminal; a time-out
        keeps ``gamma`` and so bootstraps from ``v_t`` (computed at the final observation).
    :param v_t: ``E_beta[Q_target(s_{t+1}, .)]`` with ``tau^- = tau_t``: the value at the end of row ``t``'s transition.
    :param switch_t: rollout switch OR fresh switch at row ``t`` (only rows ``1..L-1`` matter).
    :param done_t: episode ended after row ``t`` (terminal or time-out).
    :param valid_t: row exists in the window (``ReplayBuffer.sequence_indices``); invalid rows get 0.
    """
    check_same_shape(
        "compare_through_returns", r_t=r_t, discount_t=discount_t, v_t=v_t, switch_t=switch_t, done_t=done_t,
        valid_t=valid_t,
    )
    if r_t.dim() != 2 or r_t.shape[1] < 1:
        raise ValueError(f"compare_through_returns: inputs must be [B, L] with L >= 1, got {tuple(r_t.shape)}")
    length = r_t.shape[1]
    valid = valid_t.bool()
    switch_tp1 = torch.zeros_like(valid)
    valid_tp1 = torch.zeros_like(valid)
    switch_tp1[:, :-1] = switch_t.bool()[:, 1:]
    valid_tp1[:, :-1] = valid[:, 1:]
    cut_t = switch_tp1 | done_t.bool() | ~valid_tp1
    returns = torch.zeros_like(r_t)
    g_tp1 = torch.zeros_like(r_t[:, 0])
    with torch.no_grad():
        for t in reversed(range(length)):
            carry = torch.where(cut_t[:, t], v_t[:, t], g_tp1)
            g_t = r_t[:, t] + discount_t[:, t] * carry
            g_t = torch.where(valid[:, t], g_t, torch.zeros_like(g_t))
            returns[:, t] = g_t
            g_tp1 = g_t
    return returns


def critic_loss(q_tm1: torch.Tensor, g_t: torch.Tensor, valid_t: torch.Tensor) -> torch.Tensor:
    """Sum over critic replicas of ``0.5 * mean (Q_i(s_t, tau_t) - G_t)^2`` on valid rows (``q_tm1``: at the row's start).

    :param q_tm1: ``[R, *S]`` replica estimates; ``g_t`` and ``valid_t`` are ``[*S]``.  Targets are detached.
    """
    if q_tm1.dim() < 1 or tuple(q_tm1.shape[1:]) != tuple(g_t.shape):
        raise ValueError(f"critic_loss: q_tm1 must be [R, *g_t.shape], got {tuple(q_tm1.shape)} and {tuple(g_t.shape)}")
    check_same_shape("critic_loss", g_t=g_t, valid_t=valid_t)
    g = g_t.detach()
    return sum(0.5 * masked_mean((q_tm1[i] - g) ** 2, valid_t) for i in range(q_tm1.shape[0]))


def actor_loss(
    log_pi_t: torch.Tensor,
    q_new_t: torch.Tensor,
    p_switch_t: torch.Tensor,
    alpha_action: torch.Tensor,
    mask_t: torch.Tensor,
) -> torch.Tensor:
    """First-stage actor loss: ``mean(alpha_a log pi(x|s,tau^-) - beta_1 Q(s, tau_hat(x)))`` (Eq. 7).

    The SAC reparameterised gradient scaled by the switch's probability of taking the proposal: a
    proposal the switch would reject anyway gets little push.  ``beta_1`` and ``alpha_a`` are constants
    here (detached); the gradient reaches the actor through ``x`` inside ``q_new_t`` and ``log_pi_t``.
    """
    check_same_shape("actor_loss", log_pi_t=log_pi_t, q_new_t=q_new_t, p_switch_t=p_switch_t, mask_t=mask_t)
    per_row = alpha_action.detach() * log_pi_t - p_switch_t.detach() * q_new_t
    return masked_mean(per_row, mask_t)


def temperature_loss(
    log_alpha: torch.Tensor, entropy_t: torch.Tensor, target_entropy: float, mask_t: torch.Tensor
) -> torch.Tensor:
    """``log_alpha * mean(H - H_target)`` (entropy detached): raises alpha when entropy is below target."""
    check_same_shape("temperature_loss", entropy_t=entropy_t, mask_t=mask_t)
    if log_alpha.dim() != 0:
        raise ValueError(f"temperature_loss: log_alpha must be a scalar, got shape {tuple(log_alpha.shape)}")
    return log_alpha * masked_mean(entropy_t.detach() - target_entropy, mask_t)
