"""Pure tensor math of the SAC head (fast_sac, muzero_repr's RL head): n-step targets, soft state values, twin-Q,
policy and temperature losses.

Every function takes and returns plain tensors, checks the shapes it is given, and touches no module state,
so the tests can compare each against a naive loop.  Shape letters:

* ``B`` batch, ``N`` n-step window, ``S`` reward streams (one Q head each), ``A`` Q outputs per stream
  (``sum(discrete_branches)`` for discrete/hybrid actions, ``1`` for continuous-only), ``K`` discrete branches.

References: Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications" (arXiv:1812.05905),
equations cited as [SAC-2 eq. n]; Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings"
(arXiv:1910.07207) for the exact expectation over discrete actions.
"""
import math
from typing import Any, Callable, NamedTuple, Optional, Sequence, Tuple

import torch

from mlagents_plugins.common.tensor_utils import check_shape as _check_shape
from mlagents_plugins.common.tensor_utils import tanh_gaussian_log_prob


def n_step_targets(
    r_t: torch.Tensor, discount_t: torch.Tensor, valid_t: torch.Tensor, v_t: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Soft n-step TD targets ``y = sum_j (prod_{i<j} discount_i) r_j + (prod_{i<k} discount_i) v_t``.

    :param r_t: [B, N, S] rewards of the window's steps, step ``j`` of row ``b`` is ``t_b + j``.
    :param discount_t: [B, N, S] per-step discount ``gamma_s * (1 - terminal_j)``: zero after a true terminal
        (no bootstrap), ``gamma_s`` after a time-out interruption (bootstrap from the final observation).
    :param valid_t: [B, N] bool, ``True`` while step ``j`` belongs to the same stored segment as step 0.  Only
        the leading run of ``True`` counts, so a window stops at the end of a segment (trajectory chunk).
    :param v_t: [B, S] soft value of the next observation of the window's last valid step ``k-1``.
    :return: (targets [B, S], bootstrap discount [B, S] = ``prod_{i<k} discount_i``).

    Generalises [SAC-2 eq. 2-3] from one step to ``k <= N`` steps (Sutton & Barto eq. 7.1, truncated at the
    segment end).  Off-policy n-step returns are used without importance correction, like Ape-X/R2D2.
    """
    if r_t.dim() != 3:
        raise ValueError(f"r_t must have shape [B, N, S], got {list(r_t.shape)}")
    b, n, s = r_t.shape
    _check_shape("discount_t", discount_t, (b, n, s))
    _check_shape("valid_t", valid_t, (b, n))
    _check_shape("v_t", v_t, (b, s))
    # Leading run of valid steps: a step after an invalid one never counts again.
    live = torch.cumprod(valid_t.to(r_t.dtype), dim=1).unsqueeze(-1)  # [B, N, 1]
    # Effective discount of a dead step is 1 so the running product freezes at the last valid step.
    eff_discount = discount_t * live + (1.0 - live)
    acc = torch.cumprod(eff_discount, dim=1)  # prod_{i<=j}
    before = torch.cat([torch.ones_like(acc[:, :1]), acc[:, :-1]], dim=1)  # prod_{i<j}
    returns = (before * r_t * live).sum(dim=1)
    boot_discount = acc[:, -1]
    return returns + boot_discount * v_t, boot_discount


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
    return torch.tanh(u), tanh_gaussian_log_prob(u, noise, log_sigma)


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


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(1 + |x|)``: close to ``x`` near 0, logarithmic far from it (Hafner et al. 2023, DreamerV3)."""
    return torch.sign(x) * torch.log1p(x.abs())


def symexp(z: torch.Tensor) -> torch.Tensor:
    """The inverse of ``symlog``: ``sign(z) * (exp(|z|) - 1)``."""
    return torch.sign(z) * torch.expm1(z.abs())


def value_support(bins: int, limit: float, device: Any = None) -> torch.Tensor:
    """The centres [K] of ``bins`` equal bins spanning ``[-limit, limit]`` in symlog space, ends included: the values a
    binned critic's categorical distribution is over (``binned_q``, ``hl_gauss_probs``)."""
    if bins < 2:
        raise ValueError(f"bins must be at least 2, got {bins}")
    if not limit > 0:
        raise ValueError(f"limit must be positive, got {limit}")
    return torch.linspace(-float(limit), float(limit), int(bins), device=device)


def binned_q(logits: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """A binned critic's value: ``symexp`` of the expected symlog value under ``softmax(logits)`` over ``support``.

    :param logits: [..., K] one categorical distribution per leading index; :param support: [K] bin centres in symlog
        space (``value_support``).  :return: [...] values in the rewards' own units.
    """
    if logits.dim() < 1 or support.dim() != 1 or logits.shape[-1] != support.shape[0]:
        raise ValueError(f"logits [..., K] and support [K] must agree on K, got {list(logits.shape)} and "
                         f"{list(support.shape)}")
    return symexp((torch.softmax(logits, dim=-1) * support).sum(dim=-1))


def hl_gauss_probs(target: torch.Tensor, support: torch.Tensor, sigma: float) -> torch.Tensor:
    """Histogram-loss target distribution (HL-Gauss, Imani & White 2018; Farebrother et al. 2024) of each scalar
    target: the mass a normal ``N(symlog(target), sigma^2)`` puts in each bin of ``support`` (edges halfway between
    centres, the outer bins as wide as the inner ones), renormalized to the support.  A target beyond the support is
    clamped to its end, so its mass sits in the last bins.

    :param target: [...] targets in the rewards' units; :param support: [K] equally spaced bin centres (symlog
        space); :param sigma: the normal's width in symlog units (> 0).  :return: [..., K] probabilities.
    """
    if support.dim() != 1 or support.shape[0] < 2:
        raise ValueError(f"support must have shape [K] with K >= 2, got {list(support.shape)}")
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    width = support[1] - support[0]
    edges = torch.cat([support - 0.5 * width, support[-1:] + 0.5 * width])  # [K + 1]
    centre = torch.minimum(torch.maximum(symlog(target), support[0]), support[-1]).unsqueeze(-1)
    cdf = torch.special.ndtr((edges - centre) / sigma)  # [..., K + 1]
    mass = cdf[..., 1:] - cdf[..., :-1]
    return mass / (cdf[..., -1:] - cdf[..., :1])


def twin_q_cross_entropy(
    logits1: torch.Tensor,
    logits2: torch.Tensor,
    target: torch.Tensor,
    support: torch.Tensor,
    sigma: float,
    weights: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``twin_q_loss`` for binned critics: each critic's cross-entropy against the HL-Gauss distribution of the target
    (``hl_gauss_probs``) instead of the squared residual (a classification loss for the value, as in XQC, Palenicek
    et al. 2025, and Farebrother et al. 2024), weighted per sample (PER importance weights).

    :param logits1: [B, S, K], :param logits2: [B, S, K] both critics' logits at the taken actions.
    :param target: [B, S] targets (detached here). :param support: [K] bin centres (symlog space).
    :param weights: [B] or ``None``.
    :return: (q1_loss, q2_loss, td_abs [B]): each loss is ``mean_b w_b * mean_s CE``; ``td_abs`` as in ``twin_q_loss``
        from the critics' values (``binned_q``), the new PER priority base.
    """
    if logits1.dim() != 3:
        raise ValueError(f"logits1 must have shape [B, S, K], got {list(logits1.shape)}")
    b, s, k = logits1.shape
    _check_shape("logits2", logits2, (b, s, k))
    _check_shape("target", target, (b, s))
    _check_shape("support", support, (k,))
    y = target.detach()
    p = hl_gauss_probs(y, support, sigma)
    ce1 = -(p * torch.log_softmax(logits1, dim=-1)).sum(dim=-1).mean(dim=1)
    ce2 = -(p * torch.log_softmax(logits2, dim=-1)).sum(dim=-1).mean(dim=1)
    if weights is not None:
        _check_shape("weights", weights, (b,))
        ce1 = ce1 * weights
        ce2 = ce2 * weights
    with torch.no_grad():
        d1 = binned_q(logits1, support) - y
        d2 = binned_q(logits2, support) - y
        td_abs = torch.maximum(d1.abs(), d2.abs()).mean(dim=1)
    return ce1.mean(), ce2.mean(), td_abs


def policy_loss(q_pi: torch.Tensor, *policy_terms: Any) -> torch.Tensor:
    """Actor loss ``E_s[sum_k alpha_k E_pi log pi_k - E_pi Q(s, a)]`` [SAC-2 eq. 7], averaged over streams.

    ``policy_terms`` are ``soft_value``'s arguments after ``q`` (``log_pi_cont, log_probs_disc, alpha_cont,
    alpha_disc, branches``).  ``q_pi`` is evaluated at the actor's reparameterised continuous sample;
    temperatures must come in detached (the actor does not move them).  Equals ``-mean(soft_value)``.
    """
    return -soft_value(q_pi, *policy_terms).mean()


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


# ---------------------------------------------------------------------------------------------------------
# The whole SAC head, assembled once: fast_sac calls it on observations, muzero_repr on its latent state.

#: ``actor(state, mask) -> (continuous action [B, C] | None, log pi_cont [B] | None, log p_disc [B, A] | None)``:
#: a reparameterised sample of the continuous part and the log-probabilities of every discrete action.
_Maybe = Optional[torch.Tensor]
ActorFn = Callable[[Any, _Maybe], Tuple[_Maybe, _Maybe, _Maybe]]
#: ``critic(state, continuous action | None) -> (Q1 [B, S, A], Q2 [B, S, A])``.
CriticFn = Callable[[Any, Optional[torch.Tensor]], Tuple[torch.Tensor, torch.Tensor]]
#: ``frozen_critic(state, continuous action, first_only) -> (Q1, Q2 | None)``: the online critic with no gradient
#: reaching its weights (``TwinQ.frozen``); Q2 is None with ``first_only``.
FrozenCriticFn = Callable[[Any, Optional[torch.Tensor], bool], Tuple[torch.Tensor, Optional[torch.Tensor]]]


class SACBatch(NamedTuple):
    """One minibatch of n-step windows on the training device, the input of ``sac_losses``.  ``B`` rows, ``N``
    window steps, ``S`` reward streams, ``C`` continuous action dimensions, ``K`` branches, ``A`` discrete actions.

    The states are whatever the networks take: observation lists for fast_sac (``sac.batch.window_batch`` fills
    them), the latent for muzero_repr, which also sets ``policy_s_tm1``.
    """

    s_tm1: Any  # state of the taken actions: observations, each [B, ...]
    a_tm1_cont: Optional[torch.Tensor]  # [B, C] taken continuous actions (tanh-squashed)
    a_tm1_disc: Optional[torch.Tensor]  # [B, K] taken discrete actions (long)
    mask_tm1: Optional[torch.Tensor]  # [B, A] action mask at s_tm1, 1 = allowed (None: everything allowed)
    r_t: torch.Tensor  # [B, N, S] rewards per stream (strength applied)
    discount_t: torch.Tensor  # [B, N, S] gamma_s * (1 - terminal) (terminal ignored for ignore_done streams)
    valid_t: torch.Tensor  # [B, N] bool, step belongs to the start row's segment
    s_t: Any  # bootstrap state: after the window's last valid step
    mask_t: Optional[torch.Tensor]  # [B, A] action mask at s_t
    weights: Optional[torch.Tensor] = None  # [B] PER importance weights or None
    # The state the actor loss sees (None: s_tm1); muzero_repr passes its latent detached, so the actor loss never
    # reaches the representation (SAC-AE, Yarats et al. 2019, Sec. 6).
    policy_s_tm1: Any = None


class SACNetworks(NamedTuple):
    """The learner as ``sac_losses`` sees it: callables for the networks, the log temperatures as parameters (the
    temperature loss reaches them; the actor and the targets use them detached)."""

    actor: ActorFn
    critic: CriticFn
    frozen_critic: FrozenCriticFn
    target_critic: Optional[CriticFn]  # None with ``SACLossSettings.joint_critic`` (no target critics)
    log_alpha_cont: torch.Tensor  # [1]
    log_alpha_disc: torch.Tensor  # [K]


class SACLossSettings(NamedTuple):
    """What ``sac_losses`` computes, fixed for a behavior (``SACHead`` resolves it from the settings and the spec)."""

    branches: Sequence[int]  # discrete branch sizes (empty without discrete actions)
    cont_size: int  # continuous action dimensions
    target_entropy_cont: float  # target entropy of the continuous temperature
    discrete_entropy_scale: float  # a branch's target entropy is this times log(#allowed actions)
    actor_min_q: bool  # actor objective on min(Q1, Q2) (SAC-2) instead of Q1 (TD3, ML-Agents' sac)
    entropy_reward: bool = True  # the TD targets carry the entropy bonus (soft Q)
    # CrossQ (critic_batch_renorm): no target critics; the online critics evaluate the taken state-actions and the
    # bootstrap state-actions in one batch (``joint_critic_pass``); ``SACNetworks.target_critic`` may be None.
    joint_critic: bool = False
    # Binned critics (fast_sac's critic_value_bins): each Q output is this many logits of a categorical distribution
    # over ``value_support(value_bins, VALUE_LIMIT)``, its value ``binned_q``, trained by ``twin_q_cross_entropy``;
    # continuous-only actions.  0: scalar critics and squared residuals (SAC's).
    value_bins: int = 0


#: The binned critics' support spans ``[-VALUE_LIMIT, VALUE_LIMIT]`` in symlog space: values of magnitude up to
#: ``expm1(10)``, about 22,000, in the rewards' units (larger targets count as that).
VALUE_LIMIT = 10.0
#: HL-Gauss's width as a fraction of one bin (Farebrother et al. 2024's choice, 0.75).
HL_GAUSS_SIGMA_BINS = 0.75


def critic_support(settings: "SACLossSettings", device: Any) -> Optional[torch.Tensor]:
    """The binned critics' bin centres [K] (``value_support``), or None for scalar critics."""
    if not settings.value_bins:
        return None
    return value_support(settings.value_bins, VALUE_LIMIT, device)


def critic_values(raw: torch.Tensor, support: Optional[torch.Tensor]) -> torch.Tensor:
    """A critic's Q values [B, S, A] from its raw outputs: the outputs themselves for scalar critics (``support``
    None), ``binned_q`` of each output's K logits ([B, S, A * K]) for binned ones."""
    if support is None:
        return raw
    b, s, ak = raw.shape
    return binned_q(raw.reshape(b, s, ak // support.shape[0], support.shape[0]), support)


class SACLosses(NamedTuple):
    q1_loss: torch.Tensor
    q2_loss: torch.Tensor
    policy_loss: torch.Tensor
    temperature_loss: torch.Tensor
    td_abs: torch.Tensor  # [B] |TD error| (no gradient)
    q_mean: torch.Tensor  # mean Q1 of the taken actions (no gradient)
    entropy: torch.Tensor  # mean policy entropy estimate (no gradient)
    diagnostics: torch.Tensor  # [6 + K] no gradient: see ``sac_diagnostics``

    def total(self) -> torch.Tensor:
        """The one loss a SAC step differentiates: critic, actor and temperature losses summed.  Their
        parameters are disjoint (the actor loss reads the critic through ``frozen_critic``, the temperature
        loss reads detached log-probs), so one backward of the sum gives each loss's own gradients."""
        return self.q1_loss + self.q2_loss + self.policy_loss + self.temperature_loss


def _check_q_pair(name: str, q1: torch.Tensor, q2: Optional[torch.Tensor], b: int, s: int, a: int) -> None:
    _check_shape(f"{name} Q1", q1, (b, s, a))
    if q2 is not None:
        _check_shape(f"{name} Q2", q2, (b, s, a))


def _check_actor_output(name: str, out, b: int, cont_size: int, num_actions: int) -> None:
    cont, lp_c, lp_d = out
    if (cont is None) != (cont_size == 0) or (lp_c is None) != (cont_size == 0):
        raise ValueError(
            f"{name} must return a continuous action and its log-probability iff there are continuous actions"
        )
    if (lp_d is None) != (num_actions == 0):
        raise ValueError(f"{name} must return discrete log-probabilities iff there are discrete branches")
    if cont is not None:
        _check_shape(f"{name} continuous action", cont, (b, cont_size))
        _check_shape(f"{name} log pi_cont", lp_c, (b,))
    if lp_d is not None:
        _check_shape(f"{name} log p_disc", lp_d, (b, num_actions))


def _check_inputs(nets: SACNetworks, batch: SACBatch, settings: SACLossSettings) -> Tuple[int, int, int]:
    """Shapes of everything ``sac_losses`` is given (an error names the field); returns ``(B, S, A)``, ``A`` the Q
    outputs per stream (``max(sum(branches), 1)``)."""
    if settings.value_bins and settings.branches:
        raise ValueError("value_bins (binned critics) needs continuous-only actions, got discrete branches "
                         f"{list(settings.branches)}")
    if batch.r_t.dim() != 3:
        raise ValueError(f"r_t must have shape [B, N, S], got {list(batch.r_t.shape)}")
    b, n, s = batch.r_t.shape
    k = len(settings.branches)
    num_actions = int(sum(settings.branches))
    _check_shape("discount_t", batch.discount_t, (b, n, s))
    _check_shape("valid_t", batch.valid_t, (b, n))
    _check_shape("log_alpha_cont", nets.log_alpha_cont, (1,))
    _check_shape("log_alpha_disc", nets.log_alpha_disc, (k,))
    if settings.cont_size > 0:
        if batch.a_tm1_cont is None:
            raise ValueError("a_tm1_cont is required with continuous actions")
        _check_shape("a_tm1_cont", batch.a_tm1_cont, (b, settings.cont_size))
    if k > 0:
        if batch.a_tm1_disc is None:
            raise ValueError("a_tm1_disc is required with discrete branches")
        _check_shape("a_tm1_disc", batch.a_tm1_disc, (b, k))
    for name, m in (("mask_tm1", batch.mask_tm1), ("mask_t", batch.mask_t)):
        if m is not None:
            _check_shape(name, m, (b, num_actions))
    if batch.weights is not None:
        _check_shape("weights", batch.weights, (b,))
    return b, s, max(num_actions, 1)


def soft_targets(
    nets: SACNetworks,
    batch: SACBatch,
    settings: SACLossSettings,
    alpha_c: torch.Tensor,
    alpha_d: torch.Tensor,
) -> torch.Tensor:
    """The critics' TD targets [B, S] (no gradient): the actor at ``s_t`` and the target critics' twin minimum give
    ``v(s_t)`` (``soft_value``; without ``entropy_reward`` the temperatures are zero there, so it is
    ``E_pi[min Q]``), bootstrapped after the window's rewards (``n_step_targets``)."""
    b, _, s = batch.r_t.shape
    branches = settings.branches
    with torch.no_grad():
        next_out = nets.actor(batch.s_t, batch.mask_t)
        _check_actor_output("actor(s_t)", next_out, b, settings.cont_size, int(sum(branches)))
        a_t, lp_c_t, lp_d_t = next_out
        tq1, tq2 = nets.target_critic(batch.s_t, a_t)
        _check_q_pair("target_critic(s_t)", tq1, tq2, b, s, _raw_outputs(settings))
        support = critic_support(settings, batch.r_t.device)
        q_t = torch.minimum(critic_values(tq1, support), critic_values(tq2, support))
        y = _bootstrapped(batch, settings, q_t, lp_c_t, lp_d_t, alpha_c, alpha_d)
    return y


def _raw_outputs(settings: SACLossSettings) -> int:
    """Raw outputs per stream of each critic: one per Q output (``max(sum(branches), 1)``), times ``value_bins``
    for binned critics."""
    return max(int(sum(settings.branches)), 1) * max(int(settings.value_bins), 1)


def _bootstrapped(
    batch: SACBatch,
    settings: SACLossSettings,
    q_t: torch.Tensor,
    lp_c_t: _Maybe,
    lp_d_t: _Maybe,
    alpha_c: torch.Tensor,
    alpha_d: torch.Tensor,
) -> torch.Tensor:
    """TD targets [B, S] from the twin minimum ``q_t`` [B, S, A] at the bootstrap state and the actor's
    log-probabilities there: ``soft_value`` (without ``entropy_reward`` at temperature 0) after the window's rewards."""
    if not settings.entropy_reward:
        alpha_c, alpha_d = torch.zeros_like(alpha_c), torch.zeros_like(alpha_d)
    v_t = soft_value(q_t, lp_c_t, lp_d_t, alpha_c, alpha_d, settings.branches)
    y, _ = n_step_targets(batch.r_t, batch.discount_t, batch.valid_t, v_t)
    return y


def concat_states(first: Any, second: Any) -> Any:
    """Two batches of states as one, ``first`` on top: observation lists entry by entry, a tensor as it is."""
    if isinstance(first, (list, tuple)):
        if len(first) != len(second):
            raise ValueError(f"concat_states: {len(first)} observations against {len(second)}")
        return [torch.cat([x, y], dim=0) for x, y in zip(first, second)]
    return torch.cat([first, second], dim=0)


def joint_critic_pass(
    nets: SACNetworks,
    batch: SACBatch,
    settings: SACLossSettings,
    alpha_c: torch.Tensor,
    alpha_d: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CrossQ's critic pass (Bhatt, Palenicek et al. 2024, Sec. 3): no target critics; the online critics see the
    taken state-actions ``(s_tm1, a_tm1)`` and the bootstrap state-actions ``(s_t, a_t ~ pi)`` as one batch of
    ``2B`` rows, so a batch normalization in them normalizes both with the statistics of both.  The bootstrap half
    is detached: the targets [B, S] carry no gradient, while the taken half's Q [B, S, A] does (and, through the
    batch statistics, depends on the bootstrap half's inputs, as in CrossQ).

    :return: (targets ``y`` [B, S], Q1 [B, S, A], Q2 [B, S, A] at ``s_tm1``: the critics' raw outputs, logits
    [B, S, A * K] for binned critics)."""
    b, _, s = batch.r_t.shape
    a = _raw_outputs(settings)
    with torch.no_grad():
        next_out = nets.actor(batch.s_t, batch.mask_t)
    _check_actor_output("actor(s_t)", next_out, b, settings.cont_size, int(sum(settings.branches)))
    a_t, lp_c_t, lp_d_t = next_out
    # Detached: through the batch statistics the taken half's Q depends on the bootstrap actions, and the critic
    # loss must not reach the actor that way (whatever the actor callable returns).
    actions = None if a_t is None else torch.cat([batch.a_tm1_cont, a_t.detach()], dim=0)
    q1_both, q2_both = nets.critic(concat_states(batch.s_tm1, batch.s_t), actions)
    _check_q_pair("critic(s_tm1 + s_t)", q1_both, q2_both, 2 * b, s, a)
    with torch.no_grad():
        support = critic_support(settings, batch.r_t.device)
        q_t = torch.minimum(critic_values(q1_both[b:], support), critic_values(q2_both[b:], support))
        y = _bootstrapped(batch, settings, q_t, lp_c_t, lp_d_t, alpha_c, alpha_d)
    return y, q1_both[:b], q2_both[:b]


def _actor_terms(
    nets: SACNetworks,
    batch: SACBatch,
    settings: SACLossSettings,
    q1_all: torch.Tensor,
    q2_all: torch.Tensor,
    alpha_c: torch.Tensor,
    alpha_d: torch.Tensor,
) -> Tuple[torch.Tensor, torch.Tensor, _Maybe, _Maybe]:
    """(actor loss, temperature loss, log pi_cont, log p_disc) at ``policy_s_tm1`` (default ``s_tm1``).

    Q at the actor's reparameterised action is read through ``frozen_critic``, so the actor loss reaches the actor
    only; with discrete-only actions the critic pass at the taken actions (``q1_all``, ``q2_all``) already holds
    every action's value and is reused detached."""
    b, _, s = batch.r_t.shape
    branches = settings.branches
    num_actions = int(sum(branches))
    policy_s_tm1 = batch.s_tm1 if batch.policy_s_tm1 is None else batch.policy_s_tm1
    pi_out = nets.actor(policy_s_tm1, batch.mask_tm1)
    _check_actor_output("actor(s_tm1)", pi_out, b, settings.cont_size, num_actions)
    a_pi, lp_c, lp_d = pi_out
    if a_pi is None:
        # Discrete-only: Q(s, .) does not depend on the actor, so the critic pass above already holds every
        # action's value; detached, the actor loss reaches the actor only (and a second pass is saved).
        q_pi = (torch.minimum(q1_all, q2_all) if settings.actor_min_q else q1_all).detach()
    else:
        q_pi1, q_pi2 = nets.frozen_critic(policy_s_tm1, a_pi, not settings.actor_min_q)
        _check_q_pair("frozen_critic(s_tm1)", q_pi1, q_pi2, b, s, _raw_outputs(settings))
        support = critic_support(settings, batch.r_t.device)
        q_pi1 = critic_values(q_pi1, support)
        q_pi = q_pi1 if q_pi2 is None else torch.minimum(q_pi1, critic_values(q_pi2, support))
    pi_loss = policy_loss(q_pi, lp_c, lp_d, alpha_c, alpha_d, branches)
    if branches and batch.mask_tm1 is not None:
        target_disc = masked_target_entropy(batch.mask_tm1, branches, settings.discrete_entropy_scale)
    else:
        target_disc = [settings.discrete_entropy_scale * math.log(nb) for nb in branches]
    ent_loss = temperature_loss(
        nets.log_alpha_cont, nets.log_alpha_disc, lp_c, lp_d, settings.target_entropy_cont, target_disc, branches
    )
    return pi_loss, ent_loss, lp_c, lp_d


def sac_losses(
    nets: SACNetworks, batch: SACBatch, settings: SACLossSettings, update_actor: bool = True
) -> SACLosses:
    """The four SAC losses of one minibatch: twin-Q [SAC-2 eq. 5] on soft n-step targets, actor [eq. 7] and
    temperatures [eq. 18], for continuous, discrete-branched and hybrid actions.

    The networks enter as callables and the states as whatever they take (observation lists for fast_sac,
    the latent for muzero_repr), so both trainers run this one assembly; nothing here changes a parameter.

    * Targets (``soft_targets``): the actor at ``s_t`` (no gradient) and the target critics' twin minimum give the
      soft value ``v(s_t)``, bootstrapped after the window's rewards.  With ``entropy_reward`` false the bootstrap
      is ``E_pi[min Q]`` without the entropy terms, while the actor and the temperatures keep them (SACLite: Yu et
      al. 2022, "Do You Need the Entropy Reward (in Practice)?"): the critics then value the task's rewards alone,
      so an entropy bonus summed over ``1 / (1 - gamma)`` bootstrapped steps cannot outweigh a reward that ends
      the episode.
    * Critics: both online critics at the taken action, squared residuals (``twin_q_loss``, PER ``weights``); with
      ``value_bins`` the critics output logits over a symlog support, their values are ``binned_q`` everywhere and
      their loss the HL-Gauss cross-entropy (``twin_q_cross_entropy``).
    * Actor: Q at the actor's reparameterised action, read through ``frozen_critic`` so its loss reaches the
      actor only; ``actor_min_q`` uses ``min(Q1, Q2)`` (SAC-2), otherwise Q1 alone (TD3, ML-Agents' sac).
      With discrete-only actions ``Q(s, .)`` does not depend on the actor, so the critic pass at ``s_tm1`` is
      reused, detached.  The actor sees ``policy_s_tm1`` (default ``s_tm1``).
    * Temperatures: one continuous (target ``target_entropy_cont``) and one per branch with the mask-aware
      target ``discrete_entropy_scale * log(#allowed actions)`` (``masked_target_entropy``).

    * ``joint_critic`` (CrossQ): the targets come from the online critics in one pass with the critic's own
      (``joint_critic_pass``) instead of target critics.
    * ``update_actor`` false (the critic-only updates of ``actor_update_every``): no actor pass at ``s_tm1``; the
      policy and temperature losses are zero tensors without gradient and the entropy is NaN.

    Shapes and the callables' outputs are checked; an error names the field or the callable at fault.
    """
    b, s, _ = _check_inputs(nets, batch, settings)
    branches = settings.branches
    alpha_c = nets.log_alpha_cont.detach().exp()
    alpha_d = nets.log_alpha_disc.detach().exp()

    if settings.joint_critic:
        y, raw1, raw2 = joint_critic_pass(nets, batch, settings, alpha_c, alpha_d)
    else:
        y = soft_targets(nets, batch, settings, alpha_c, alpha_d)
        raw1, raw2 = nets.critic(batch.s_tm1, batch.a_tm1_cont)  # [B, S, A] ([B, S, A * K] binned)
    _check_q_pair("critic(s_tm1)", raw1, raw2, b, s, _raw_outputs(settings))
    support = critic_support(settings, batch.r_t.device)
    q1_all, q2_all = critic_values(raw1, support), critic_values(raw2, support)  # [B, S, A]
    if branches:
        q1_tm1 = condense_q(q1_all, batch.a_tm1_disc, branches)
        q2_tm1 = condense_q(q2_all, batch.a_tm1_disc, branches)
    else:
        q1_tm1, q2_tm1 = q1_all[:, :, 0], q2_all[:, :, 0]
    if support is None:
        q1_loss, q2_loss, td_abs = twin_q_loss(q1_tm1, q2_tm1, y, batch.weights)
    else:  # continuous-only (checked): A = 1, the logits [B, S, K]
        sigma = HL_GAUSS_SIGMA_BINS * 2.0 * VALUE_LIMIT / (settings.value_bins - 1)
        q1_loss, q2_loss, td_abs = twin_q_cross_entropy(raw1, raw2, y, support, sigma, batch.weights)

    if not update_actor:
        zero = q1_loss.new_zeros(())
        with torch.no_grad():
            diagnostics = sac_diagnostics(
                q1_tm1.detach(), q2_tm1.detach(), y, q1_all.detach(), q2_all.detach(), None, branches
            )
        return SACLosses(q1_loss, q2_loss, zero, zero, td_abs, q1_tm1.detach().mean(), zero + math.nan, diagnostics)
    pi_loss, ent_loss, lp_c, lp_d = _actor_terms(nets, batch, settings, q1_all, q2_all, alpha_c, alpha_d)
    with torch.no_grad():
        entropy = -(lp_c.mean() if lp_c is not None else q1_tm1.new_zeros(()))
        if lp_d is not None:
            entropy = entropy - branch_sums(lp_d.exp() * lp_d, branches).sum(dim=1).mean()
        diagnostics = sac_diagnostics(
            q1_tm1.detach(), q2_tm1.detach(), y, q1_all.detach(), q2_all.detach(), lp_d, branches
        )
    return SACLosses(q1_loss, q2_loss, pi_loss, ent_loss, td_abs, q1_tm1.detach().mean(), entropy, diagnostics)


def sac_diagnostics(
    q1_tm1: torch.Tensor,
    q2_tm1: torch.Tensor,
    y: torch.Tensor,
    q1_all: torch.Tensor,
    q2_all: torch.Tensor,
    lp_d: Optional[torch.Tensor],
    branches: Sequence[int],
) -> torch.Tensor:
    """Signs of a critic drifting away from what the policy earns (issue #14), as one tensor (one device sync):
    ``[|Q1| mean, Q1 std, |Q1 - Q2| mean, target mean, mean(target - Q1), branch min bias, per-branch
    entropies [K]]`` (the temperatures are reported from their module, after the step).

    The branch min bias is how far ``E_pi`` of the critics' entrywise minimum lies below the minimum of their
    expectations (>= 0; 0 without discrete branches).  ``q1_tm1``/``q2_tm1``/``y`` [B, S]; ``q*_all`` [B, S, A].
    """
    zero = q1_tm1.new_zeros(())
    parts = [
        q1_tm1.abs().mean(), q1_tm1.std(unbiased=False), (q1_tm1 - q2_tm1).abs().mean(), y.mean(), (y - q1_tm1).mean()
    ]
    if lp_d is not None:
        p = lp_d.exp().unsqueeze(1)  # [B, 1, A]
        e_q1 = branch_sums(q1_all * p, branches).mean(dim=-1)
        e_q2 = branch_sums(q2_all * p, branches).mean(dim=-1)
        e_min = branch_sums(torch.minimum(q1_all, q2_all) * p, branches).mean(dim=-1)
        parts.append((torch.minimum(e_q1, e_q2) - e_min).mean())
        parts.extend((-branch_sums(lp_d.exp() * lp_d, branches)).mean(dim=0).unbind())
    else:
        parts.append(zero)
    return torch.stack(parts)
