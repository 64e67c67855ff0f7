"""V-trace targets and the IMPALA losses as pure tensor functions.

Layout: every per-step tensor is time-major ``[T, B]`` (T = unroll length, B = number of pieces).
Pieces shorter than T are right-padded; ``mask_t`` is 1 on real steps and 0 on padding, and must be a
prefix mask (once 0, 0 to the end of the piece).  ``discount_t`` is ``gamma`` on ordinary steps and on
time-outs, and 0 on true terminal steps; ``bootstrap_value`` is V(x) of the observation that follows the
last real step of each piece (its next observation), so a time-out (or a piece cut inside an episode)
bootstraps from it while a terminal step multiplies it by ``discount_t = 0``.

Equations (Espeholt et al. 2018, section 4.1), with per-step discounts in place of ``gamma``:

* eq. (1):  ``v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} discount_i c_i) delta_t``,
  ``delta_t = rho_t (r_t + discount_t V(x_{t+1}) - V(x_t))``,
  ``rho_t = min(rho_clip, pi/mu)``, ``c_i = lambda min(c_clip, pi/mu)`` (``lambda`` as in section 4.2 /
  DI-engine's ``lambda_``).  We evaluate it with the equivalent backward recursion
  ``v_s - V(x_s) = delta_s + discount_s c_s (v_{s+1} - V(x_{s+1}))``.
* section 4.2: policy-gradient advantage ``pg_rho_s (r_s + discount_s v_{s+1} - V(x_s))`` with
  ``pg_rho_s = min(pg_rho_clip, pi/mu)``.

Deviation from the paper: the losses below average over real steps instead of summing, so the learning
rate does not depend on ``batch_size x unroll_length``.
"""
from typing import NamedTuple, Optional

from mlagents.torch_utils import torch

from mlagents_plugins.common.tensor_utils import check_shape, masked_mean


class VTraceReturns(NamedTuple):
    """Outputs of :func:`vtrace` (all ``[T, B]``, no gradient)."""

    vs: torch.Tensor  # V-trace value targets v_s (baseline targets)
    pg_advantage: torch.Tensor  # pg_rho_s (r_s + discount_s v_{s+1} - V(x_s)); 0 on padding
    rho_t: torch.Tensor  # importance weights clipped at rho_clip (what scaled the TD errors)
    q_t: torch.Tensor  # r_s + discount_s v_{s+1}: V-trace's estimate of Q(x_s, a_s); 0 on padding


class ImportanceStats(NamedTuple):
    """Diagnostics of the importance weights over real steps."""

    mean_clipped_rho: float  # mean of min(rho_clip, pi/mu)
    fraction_clipped: float  # fraction of steps where pi/mu > rho_clip


def _check_time_major(name: str, x: torch.Tensor, shape: torch.Size) -> None:
    check_shape(f"{name} (time-major [T, B])", x, tuple(shape))


def _check_clip(name: str, value: Optional[float]) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be > 0 or None (no clipping), got {value}")


def clip_weight(rho: torch.Tensor, clip: Optional[float]) -> torch.Tensor:
    """``min(clip, rho)``, or ``rho`` when ``clip`` is None (no clip): rho-bar, c-bar and the pg clip."""
    return rho if clip is None else torch.clamp(rho, max=clip)


def next_step_values(
    values_t: torch.Tensor, bootstrap_value: torch.Tensor, mask_t: torch.Tensor
) -> torch.Tensor:
    """``x_{t+1}``'s value for every step: the next step's value inside the piece, ``bootstrap_value``
    after the last real step.  On padding the result is ``bootstrap_value`` (masked out later)."""
    next_mask = torch.cat([mask_t[1:], torch.zeros_like(mask_t[:1])], dim=0)
    shifted = torch.cat([values_t[1:], bootstrap_value.unsqueeze(0)], dim=0)
    return torch.where(next_mask > 0, shifted, bootstrap_value.unsqueeze(0).expand_as(values_t))


def vtrace(
    log_rho_t: torch.Tensor,
    discount_t: torch.Tensor,
    r_t: torch.Tensor,
    v_tm1: torch.Tensor,
    bootstrap_value: torch.Tensor,
    mask_t: torch.Tensor,
    rho_clip: Optional[float] = 1.0,
    c_clip: Optional[float] = 1.0,
    pg_rho_clip: Optional[float] = 1.0,
    lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace value targets and policy-gradient advantages (paper eq. 1 and section 4.2).

    :param log_rho_t: ``log pi(a_t|x_t) - log mu(a_t|x_t)``, target minus behaviour, ``[T, B]``.
    :param discount_t: ``gamma`` or 0 at terminal steps, ``[T, B]``.
    :param r_t: reward received after acting at step t, ``[T, B]``.
    :param v_tm1: the learner's V(x_t) for every step of the piece, ``[T, B]`` (``v_tm1`` in rlax: the
        value at the start of transition t).
    :param bootstrap_value: V of the observation after the last real step of each piece, ``[B]``.
    :param mask_t: 1 on real steps, 0 on padding, ``[T, B]`` (prefix mask).
    :param rho_clip, c_clip, pg_rho_clip: rho-bar, c-bar and the policy-gradient clip; None = no clip.
    :param lambda_: trace decay in [0, 1] multiplying every c_i.
    All inputs are detached: targets never carry gradient.
    """
    shape = v_tm1.shape
    if v_tm1.dim() != 2:
        raise ValueError(f"v_tm1 must be time-major [T, B], got shape {list(v_tm1.shape)}")
    for name, x in (("log_rho_t", log_rho_t), ("discount_t", discount_t), ("r_t", r_t), ("mask_t", mask_t)):
        _check_time_major(name, x, shape)
    if bootstrap_value.shape != shape[1:]:
        raise ValueError(
            f"bootstrap_value must be [B] = {[shape[1]]}, got shape {list(bootstrap_value.shape)}"
        )
    for name, clip in (("rho_clip", rho_clip), ("c_clip", c_clip), ("pg_rho_clip", pg_rho_clip)):
        _check_clip(name, clip)
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")

    with torch.no_grad():
        log_rho_t, discount_t, r_t, v_tm1, bootstrap_value, mask_t = (
            x.detach().float() for x in (log_rho_t, discount_t, r_t, v_tm1, bootstrap_value, mask_t)
        )
        if torch.any(mask_t[1:] > mask_t[:-1]):
            raise ValueError("mask_t must be a prefix mask: real steps first, padding after")
        rho = torch.exp(log_rho_t)
        rho_t = clip_weight(rho, rho_clip)
        c_t = lambda_ * clip_weight(rho, c_clip)
        pg_rho_t = clip_weight(rho, pg_rho_clip)

        # The trace continues into step t+1 only while t+1 is a real step of the same piece.
        next_mask = torch.cat([mask_t[1:], torch.zeros_like(mask_t[:1])], dim=0)
        v_t = next_step_values(v_tm1, bootstrap_value, mask_t)
        delta_t = rho_t * (r_t + discount_t * v_t - v_tm1) * mask_t

        vs_minus_v = torch.zeros_like(v_tm1)
        acc = torch.zeros_like(bootstrap_value)
        for t in range(shape[0] - 1, -1, -1):
            acc = delta_t[t] + discount_t[t] * c_t[t] * next_mask[t] * acc
            vs_minus_v[t] = acc
        vs = v_tm1 + vs_minus_v

        vs_t = next_step_values(vs, bootstrap_value, mask_t)
        q_t = (r_t + discount_t * vs_t) * mask_t
        pg_advantage = pg_rho_t * (q_t - v_tm1) * mask_t
    return VTraceReturns(vs=vs, pg_advantage=pg_advantage, rho_t=rho_t, q_t=q_t)


def importance_stats(log_rho_t: torch.Tensor, mask_t: torch.Tensor, rho_clip: Optional[float]) -> ImportanceStats:
    """Mean clipped rho and the fraction of real steps whose rho exceeded ``rho_clip``."""
    _check_time_major("log_rho_t", log_rho_t, mask_t.shape)
    with torch.no_grad():
        rho = torch.exp(log_rho_t.detach())
        n = torch.clamp(mask_t.sum(), min=1.0)
        clipped = clip_weight(rho, rho_clip)
        frac = 0.0 if rho_clip is None else float(((rho > rho_clip).float() * mask_t).sum() / n)
        return ImportanceStats(float((clipped * mask_t).sum() / n), frac)


def log_importance_ratio(target_log_probs: torch.Tensor, behaviour_log_probs: torch.Tensor) -> torch.Tensor:
    """``log pi(a|x) - log mu(a|x)`` of the whole action, ``[N]``.

    Inputs are ``[N, K]`` per-component log-probabilities as ML-Agents lays them out
    (``ActionLogProbs.flatten()``: one column per continuous dimension, then one per discrete branch).
    Components are independent given x, so the joint log-probability is their sum: continuous
    (Gaussian or tanh-squashed Gaussian, per dimension), discrete (one sampled action per branch, masks
    already applied by the distribution) and hybrid alike.
    """
    if target_log_probs.dim() != 2 or target_log_probs.shape != behaviour_log_probs.shape:
        raise ValueError(
            "target_log_probs and behaviour_log_probs must both be [N, K]; got "
            f"{list(target_log_probs.shape)} and {list(behaviour_log_probs.shape)}"
        )
    return target_log_probs.sum(dim=1) - behaviour_log_probs.sum(dim=1)


def standardize(x_t: torch.Tensor, mask_t: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(x - mean) / std`` over real steps (padding stays 0); optional advantage normalisation."""
    _check_time_major("x_t", x_t, mask_t.shape)
    n = torch.clamp(mask_t.sum(), min=1.0)
    mean = (x_t * mask_t).sum() / n
    var = (((x_t - mean) * mask_t) ** 2).sum() / n
    return (x_t - mean) / torch.sqrt(var + eps) * mask_t


def policy_gradient_loss(log_pi_t: torch.Tensor, pg_advantage_t: torch.Tensor, mask_t: torch.Tensor) -> torch.Tensor:
    """``-mean(log pi(a_t|x_t) * A_t)`` over real steps; the advantage is a constant (paper sec. 4.2)."""
    _check_time_major("log_pi_t", log_pi_t, mask_t.shape)
    _check_time_major("pg_advantage_t", pg_advantage_t, mask_t.shape)
    return -masked_mean(log_pi_t * pg_advantage_t.detach(), mask_t)


def clipped_surrogate_loss(
    log_pi_t: torch.Tensor,
    log_mu_t: torch.Tensor,
    advantage_t: torch.Tensor,
    mask_t: torch.Tensor,
    epsilon: float,
) -> torch.Tensor:
    """PPO's clipped surrogate (Schulman et al. 2017, eq. 7) with the behaviour policy as the old policy:
    ``-mean(min(ratio_t A_t, clip(ratio_t, 1 - epsilon, 1 + epsilon) A_t))``, ``ratio_t = pi/mu``.

    Why: plain V-trace policy gradient (sec. 4.2) bounds the *weight* of each sample (``pg_rho_clip``)
    but not how far the learner moves from the acting policy; with policy lag plus piece reuse a few
    large steps can push the policy off a cliff.  The clip removes the incentive to move ``pi/mu`` beyond
    ``1 +- epsilon`` (IMPACT, Luo et al. 2020, arXiv 1912.00167, eq. 5, with the behaviour policy instead
    of a target network).  ``ratio_t`` is the importance weight itself (its gradient is
    ``ratio_t grad log pi``), so ``advantage_t`` must *not* be scaled by ``pg_rho`` again: pass
    ``q_t - V(x_t)`` from :func:`vtrace`.  The advantage is a constant; ``log_mu_t`` is data.
    """
    for name, x in (("log_pi_t", log_pi_t), ("log_mu_t", log_mu_t), ("advantage_t", advantage_t)):
        _check_time_major(name, x, mask_t.shape)
    if not 0.0 < epsilon < 1.0:
        raise ValueError(f"epsilon must be in (0, 1), got {epsilon}")
    ratio_t = torch.exp(log_pi_t - log_mu_t.detach())
    a_t = advantage_t.detach()
    surrogate_t = torch.min(ratio_t * a_t, torch.clamp(ratio_t, 1.0 - epsilon, 1.0 + epsilon) * a_t)
    return -masked_mean(surrogate_t, mask_t)


def fraction_outside_clip(log_rho_t: torch.Tensor, mask_t: torch.Tensor, epsilon: float) -> float:
    """Fraction of real steps whose ``pi/mu`` lies outside ``[1 - epsilon, 1 + epsilon]``."""
    _check_time_major("log_rho_t", log_rho_t, mask_t.shape)
    with torch.no_grad():
        rho = torch.exp(log_rho_t.detach())
        outside = ((rho < 1.0 - epsilon) | (rho > 1.0 + epsilon)).float()
        return float((outside * mask_t).sum() / torch.clamp(mask_t.sum(), min=1.0))


def approx_kl(log_rho_t: torch.Tensor, mask_t: torch.Tensor) -> float:
    """Estimate of KL(mu || pi) from the sampled actions: ``mean((rho - 1) - log rho)`` over real steps
    (the non-negative, low-variance estimator; every term is >= 0)."""
    _check_time_major("log_rho_t", log_rho_t, mask_t.shape)
    with torch.no_grad():
        log_rho = log_rho_t.detach()
        return float(masked_mean(torch.expm1(log_rho) - log_rho, mask_t))


def baseline_loss(v_tm1: torch.Tensor, vs: torch.Tensor, mask_t: torch.Tensor) -> torch.Tensor:
    """``0.5 * mean((v_s - V(x_s))^2)`` over real steps; the target ``v_s`` gets no gradient."""
    _check_time_major("v_tm1", v_tm1, mask_t.shape)
    _check_time_major("vs", vs, mask_t.shape)
    return 0.5 * masked_mean((vs.detach() - v_tm1) ** 2, mask_t)


def entropy_loss(entropy_t: torch.Tensor, mask_t: torch.Tensor) -> torch.Tensor:
    """``-mean(H(pi(.|x_t)))`` over real steps: minimising it raises the entropy."""
    _check_time_major("entropy_t", entropy_t, mask_t.shape)
    return -masked_mean(entropy_t, mask_t)
