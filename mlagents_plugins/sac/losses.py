"""Pure tensor math of fast_sac: n-step targets, soft state values, twin-Q, policy and temperature losses.

Every function takes and returns plain tensors, checks the shapes it is given, and touches no module state,
so the tests can compare each against a naive loop.  Shape letters:

* ``B`` batch, ``N`` n-step window, ``S`` reward streams (one Q head each), ``A`` Q outputs per stream
  (``sum(discrete_branches)`` for discrete/hybrid actions, ``1`` for continuous-only), ``K`` discrete branches.

References: Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications" (arXiv:1812.05905),
equations cited as [SAC-2 eq. n]; Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings"
(arXiv:1910.07207) for the exact expectation over discrete actions.
"""
import math
from typing import Optional, Sequence, Tuple

import torch


def _check_shape(name: str, t: torch.Tensor, shape: Sequence[Optional[int]]) -> None:
    """Raise ``ValueError`` naming ``name`` when ``t`` does not have ``shape`` (``None`` = any size)."""
    if t.dim() != len(shape) or any(s is not None and s != d for s, d in zip(shape, t.shape)):
        want = "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"
        raise ValueError(f"{name} must have shape {want}, got {list(t.shape)}")


def n_step_targets(
    r_t: torch.Tensor, discount_t: torch.Tensor, valid_t: torch.Tensor, v_boot: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Soft n-step TD targets ``y = sum_j (prod_{i<j} discount_i) r_j + (prod_{i<k} discount_i) v_boot``.

    :param r_t: [B, N, S] rewards of the window's steps, step ``j`` of row ``b`` is ``t_b + j``.
    :param discount_t: [B, N, S] per-step discount ``gamma_s * (1 - terminal_j)``: zero after a true terminal
        (no bootstrap), ``gamma_s`` after a time-out interruption (bootstrap from the final observation).
    :param valid_t: [B, N] bool, ``True`` while step ``j`` belongs to the same stored segment as step 0.  Only
        the leading run of ``True`` counts, so a window stops at the end of a segment (trajectory chunk).
    :param v_boot: [B, S] soft value of the next observation of the window's last valid step ``k-1``.
    :return: (targets [B, S], bootstrap discount [B, S] = ``prod_{i<k} discount_i``).

    Generalises [SAC-2 eq. 2-3] from one step to ``k <= N`` steps (Sutton & Barto eq. 7.1, truncated at the
    segment end).  Off-policy n-step returns are used without importance correction, like Ape-X/R2D2.
    """
    if r_t.dim() != 3:
        raise ValueError(f"r_t must have shape [B, N, S], got {list(r_t.shape)}")
    b, n, s = r_t.shape
    _check_shape("discount_t", discount_t, (b, n, s))
    _check_shape("valid_t", valid_t, (b, n))
    _check_shape("v_boot", v_boot, (b, s))
    # Leading run of valid steps: a step after an invalid one never counts again.
    live = torch.cumprod(valid_t.to(r_t.dtype), dim=1).unsqueeze(-1)  # [B, N, 1]
    # Effective discount of a dead step is 1 so the running product freezes at the last valid step.
    eff_discount = discount_t * live + (1.0 - live)
    acc = torch.cumprod(eff_discount, dim=1)  # prod_{i<=j}
    before = torch.cat([torch.ones_like(acc[:, :1]), acc[:, :-1]], dim=1)  # prod_{i<j}
    returns = (before * r_t * live).sum(dim=1)
    boot_discount = acc[:, -1]
    return returns + boot_discount * v_boot, boot_discount


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def tanh_gaussian_sample(
    mu: torch.Tensor, log_sigma: torch.Tensor, noise: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised tanh-squashed Gaussian sample and its log-density, summed over action dimensions.

    ``u = mu + sigma * noise``, ``a = tanh(u)``, ``log pi(a) = sum_d [log N(u_d; mu_d, sigma_d) - log(1 - a_d^2)]``
    [SAC-2 eq. 21 / appendix C], with ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``, which stays finite
    where ``1 - a^2`` rounds to 0.  ``log N(u)`` is written through ``noise`` (``(u - mu) / sigma``) so it does not
    divide by a tiny sigma.  This is the distribution of ML-Agents' ``TanhGaussianDistInstance`` (the policy acts
    with it), evaluated with a few fused ops instead of its transform objects and unused entropies.

    :param mu: [B, C] means; :param log_sigma: [B, C] log standard deviations (already clamped by the caller);
    :param noise: [B, C] standard normal draws.  :return: (a [B, C], log pi(a) [B]).
    """
    if mu.dim() != 2:
        raise ValueError(f"mu must have shape [B, C], got {list(mu.shape)}")
    _check_shape("log_sigma", log_sigma, tuple(mu.shape))
    _check_shape("noise", noise, tuple(mu.shape))
    u = mu + log_sigma.exp() * noise
    log_normal = -0.5 * noise.square() - log_sigma - _HALF_LOG_2PI
    log_det = 2.0 * (_LOG_2 - u - torch.nn.functional.softplus(-2.0 * u))
    return torch.tanh(u), (log_normal - log_det).sum(dim=1)


def branch_sums(x: torch.Tensor, branches: Sequence[int]) -> torch.Tensor:
    """Sum ``x`` [..., A] over each discrete branch's slice, giving [..., K]."""
    if x.shape[-1] != sum(branches):
        raise ValueError(f"last dimension must be sum(branches)={sum(branches)}, got {list(x.shape)}")
    return torch.stack([part.sum(dim=-1) for part in torch.split(x, list(branches), dim=-1)], dim=-1)


def condense_q(q: torch.Tensor, disc_actions: torch.Tensor, branches: Sequence[int]) -> torch.Tensor:
    """Q of the taken discrete actions: the mean over branches of each branch's chosen entry (ML-Agents' form).

    :param q: [B, S, A] per-action Q outputs, ``A = sum(branches)``.
    :param disc_actions: [B, K] integer actions.
    :return: [B, S]
    """
    if q.dim() != 3:
        raise ValueError(f"q must have shape [B, S, A], got {list(q.shape)}")
    b, s, a = q.shape
    _check_shape("disc_actions", disc_actions, (b, len(branches)))
    offsets = torch.tensor([0] + list(branches[:-1]), device=q.device).cumsum(0)
    flat = (disc_actions.long() + offsets).unsqueeze(1).expand(b, s, len(branches))
    return q.gather(2, flat).mean(dim=2)


def soft_value(
    q: torch.Tensor,
    log_pi_cont: Optional[torch.Tensor],
    log_probs_disc: Optional[torch.Tensor],
    alpha_cont: torch.Tensor,
    alpha_disc: torch.Tensor,
    branches: Sequence[int],
) -> torch.Tensor:
    """Soft state value ``V(s) = E_pi[Q(s, a)] - sum_k alpha_k E_pi[log pi_k]`` per stream [SAC-2 eq. 3].

    Continuous actions enter as one sample ``a_c ~ pi`` (already fed to ``q``); discrete branches are
    integrated exactly over their probabilities (Christodoulou 2019, eq. 10).  ``Q(s, a)`` of a multi-branch
    action is the mean of the branches' heads (ML-Agents' convention), while the policy's log-probability is
    the sum over independent branches, each weighted by its own temperature.  (Deviation: ML-Agents averages
    the discrete entropy bonus over branches; the sum is the joint policy's entropy.)

    :param q: [B, S, A] (``A = 1`` without discrete branches), usually ``min(Q1, Q2)`` or a mean over Q heads.
    :param log_pi_cont: [B] summed log-probability of the sampled continuous action, or ``None``.
    :param log_probs_disc: [B, A] log-probabilities of every discrete action, or ``None``.
    :param alpha_cont: scalar (0-d or [1]) continuous temperature.
    :param alpha_disc: [K] per-branch temperatures (may be empty).
    :return: [B, S]
    """
    if q.dim() != 3:
        raise ValueError(f"q must have shape [B, S, A], got {list(q.shape)}")
    b, s, a = q.shape
    if log_probs_disc is None:
        if a != 1:
            raise ValueError(f"q must have one output per stream without discrete actions, got {list(q.shape)}")
        v = q[:, :, 0]
    else:
        _check_shape("log_probs_disc", log_probs_disc, (b, a))
        _check_shape("alpha_disc", alpha_disc, (len(branches),))
        probs = log_probs_disc.exp()
        expected_q = branch_sums(q * probs.unsqueeze(1), branches).mean(dim=-1)  # [B, S]
        neg_ent = branch_sums(probs * log_probs_disc, branches)  # [B, K] = E[log pi_k]
        v = expected_q - (neg_ent * alpha_disc).sum(dim=-1, keepdim=True)
    if log_pi_cont is not None:
        _check_shape("log_pi_cont", log_pi_cont, (b,))
        v = v - alpha_cont.reshape(()) * log_pi_cont.unsqueeze(-1)
    return v


def twin_q_loss(
    q1: torch.Tensor, q2: torch.Tensor, target: torch.Tensor, weights: Optional[torch.Tensor] = None
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Soft Bellman residuals of both critics [SAC-2 eq. 5], weighted per sample (PER importance weights).

    :param q1: [B, S], :param q2: [B, S] predictions for the taken actions.
    :param target: [B, S] targets; detached here so no gradient can reach target networks or the actor.
    :param weights: [B] importance weights or ``None`` (all ones).
    :return: (q1_loss, q2_loss, td_abs [B]) where each loss is ``0.5 * mean_b w_b * mean_s (q - y)^2`` and
        ``td_abs`` is the mean over streams of ``max(|q1 - y|, |q2 - y|)``, the new PER priority base.
    """
    if q1.dim() != 2:
        raise ValueError(f"q1 must have shape [B, S], got {list(q1.shape)}")
    b, s = q1.shape
    _check_shape("q2", q2, (b, s))
    _check_shape("target", target, (b, s))
    y = target.detach()
    d1 = q1 - y
    d2 = q2 - y
    se1 = (d1 * d1).mean(dim=1)
    se2 = (d2 * d2).mean(dim=1)
    if weights is not None:
        _check_shape("weights", weights, (b,))
        se1 = se1 * weights
        se2 = se2 * weights
    with torch.no_grad():
        td_abs = torch.maximum(d1.abs(), d2.abs()).mean(dim=1)
    return 0.5 * se1.mean(), 0.5 * se2.mean(), td_abs


def policy_loss(
    q_pi: torch.Tensor,
    log_pi_cont: Optional[torch.Tensor],
    log_probs_disc: Optional[torch.Tensor],
    alpha_cont: torch.Tensor,
    alpha_disc: torch.Tensor,
    branches: Sequence[int],
) -> torch.Tensor:
    """Actor loss ``E_s[sum_k alpha_k E_pi log pi_k - E_pi Q(s, a)]`` [SAC-2 eq. 7], averaged over streams.

    ``q_pi`` is evaluated at the actor's reparameterised continuous sample; temperatures must come in
    detached (the actor does not move them).  Equals ``-mean(soft_value)``.
    """
    return -soft_value(q_pi, log_pi_cont, log_probs_disc, alpha_cont, alpha_disc, branches).mean()


def temperature_loss(
    log_alpha_cont: torch.Tensor,
    log_alpha_disc: torch.Tensor,
    log_pi_cont: Optional[torch.Tensor],
    log_probs_disc: Optional[torch.Tensor],
    target_entropy_cont: float,
    target_entropy_disc,
    branches: Sequence[int],
) -> torch.Tensor:
    """Automatic entropy tuning [SAC-2 eq. 18], in log space: ``-log_alpha * (log pi + H_target)``.

    The policy terms are detached, so only the temperatures move.  Continuous dimensions share one
    temperature (target ``-scale * dim``); every discrete branch has its own (target ``scale * log n_k``), and
    the branch losses are summed so each branch adapts at the same rate regardless of branch count.

    :param log_alpha_cont: [1]; :param log_alpha_disc: [K].
    :param log_pi_cont: [B] or ``None``; :param log_probs_disc: [B, A] or ``None``.
    :param target_entropy_disc: per-branch targets, a sequence [K] or a per-sample tensor [B, K] (see
        ``masked_target_entropy``).
    """
    loss = log_alpha_cont.new_zeros(())
    if log_probs_disc is not None:
        b, a = log_probs_disc.shape
        _check_shape("log_alpha_disc", log_alpha_disc, (len(branches),))
        tgt = torch.as_tensor(target_entropy_disc, dtype=log_probs_disc.dtype, device=log_probs_disc.device)
        if tgt.shape != (len(branches),) and tgt.shape != (b, len(branches)):
            raise ValueError(
                f"target_entropy_disc must have shape [{len(branches)}] or [{b}, {len(branches)}], got {list(tgt.shape)}"
            )
        with torch.no_grad():
            neg_ent = branch_sums(log_probs_disc.exp() * log_probs_disc, branches)  # [B, K]
            gap = neg_ent + tgt
        loss = loss - (log_alpha_disc * gap).mean(dim=0).sum()
    if log_pi_cont is not None:
        if log_pi_cont.dim() != 1:
            raise ValueError(f"log_pi_cont must have shape [B], got {list(log_pi_cont.shape)}")
        with torch.no_grad():
            gap_c = log_pi_cont + target_entropy_cont
        loss = loss - (log_alpha_cont.reshape(()) * gap_c).mean()
    return loss


def masked_target_entropy(action_mask: torch.Tensor, branches: Sequence[int], scale: float) -> torch.Tensor:
    """Per-sample discrete target entropy ``scale * log(#allowed actions of branch k)``, [B, K].

    Deviation from ML-Agents (``scale * log(branch size)`` always): a branch masked down to one action has
    entropy 0 whatever the temperature, so a fixed positive target would raise its temperature without
    bound and flood the soft values with the entropy bonus wherever the branch does open up.  Scaling the
    target by the allowed count keeps the same target when nothing is masked.

    :param action_mask: [B, A] 1 = allowed.
    """
    if action_mask.dim() != 2 or action_mask.shape[1] != sum(branches):
        raise ValueError(f"action_mask must have shape [B, {sum(branches)}], got {list(action_mask.shape)}")
    allowed = branch_sums(action_mask.to(torch.float32), branches).clamp(min=1.0)
    return scale * torch.log(allowed)


def per_priorities(td_abs: torch.Tensor, alpha: float, eps: float = 1e-6) -> torch.Tensor:
    """Prioritized replay priorities ``(|delta| + eps)^alpha`` (Schaul et al. 2016, eq. 1 numerator)."""
    if td_abs.dim() != 1:
        raise ValueError(f"td_abs must have shape [B], got {list(td_abs.shape)}")
    return (td_abs + eps).pow(alpha)
