"""Pure tensor math of MuZero-style representation learning (no modules, no state).

References: Schrittwieser et al. 2020, "Mastering Atari, Go, Chess and Shogi by Planning with a Learned
Model" (arXiv 1911.08265, "MuZero"), Appendix F (value/reward transform and categorical support), Appendix
G (latent min-max scaling, gradient scaling); Ye et al. 2021, "EfficientZero" (arXiv 2111.00210), Sec. 3.1
(self-supervised temporal consistency).

Every function checks the shapes it is given and raises ``ValueError`` naming the argument on mismatch.
"""
from typing import List, NamedTuple, Optional, Sequence

from mlagents.torch_utils import torch

from mlagents_plugins.common.tensor_utils import check_same_shape, check_shape
from mlagents_plugins.muzero_repr.targets import UnrollTargets

# MuZero Appendix F uses eps = 0.001 for h(x).
DEFAULT_VALUE_TRANSFORM_EPS = 0.001


def scale_gradient(x: torch.Tensor, factor: float) -> torch.Tensor:
    """Identity in the forward pass; multiplies the gradient flowing back through ``x`` by ``factor``.

    MuZero Appendix G scales the gradient entering the dynamics function by 1/2 at every unroll step so
    that the total gradient the dynamics receives stays roughly constant in the number of unroll steps.
    """
    if factor == 1.0:
        return x
    return x * factor + x.detach() * (1.0 - factor)


def value_transform(x: torch.Tensor, eps: float = DEFAULT_VALUE_TRANSFORM_EPS) -> torch.Tensor:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x  (MuZero Appendix F, after Pohlen et al. 2018)."""
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    return torch.sign(x) * (torch.sqrt(torch.abs(x) + 1.0) - 1.0) + eps * x


def inverse_value_transform(y: torch.Tensor, eps: float = DEFAULT_VALUE_TRANSFORM_EPS) -> torch.Tensor:
    """Exact inverse of ``value_transform``, in a form without cancellation.

    With u = sqrt(|x| + 1), h gives |y| = (u - 1) + eps (u^2 - 1) = (u - 1)(1 + eps (u + 1)), so
    eps u^2 + u - c = 0 with c = |y| + 1 + eps.  The textbook root (sqrt(1 + 4 eps c) - 1) / (2 eps)
    subtracts two nearly equal numbers (lost about 1e-4 absolute in float32); multiplying by the
    conjugate gives u = 2 c / (sqrt(1 + 4 eps c) + 1), a sum of positives.  |x| = u^2 - 1 would cancel
    again near y = 0, so |x| = (u - 1)(u + 1) = |y| (u + 1) / (1 + eps (u + 1)), using the identity
    above.  Every operation adds or multiplies positives, so the float32 result is within a few ulp
    of the true inverse.  For eps = 0 this is |x| = |y| (|y| + 2) = (|y| + 1)^2 - 1.
    """
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    abs_y = torch.abs(y)
    c = abs_y + (1.0 + eps)
    u_plus_1 = 2.0 * c / (torch.sqrt(1.0 + 4.0 * eps * c) + 1.0) + 1.0
    return torch.sign(y) * (abs_y * u_plus_1 / (1.0 + eps * u_plus_1))


def support_values(support_size: int, device=None) -> torch.Tensor:
    """The integer atoms -S..S of a categorical support with ``2 S + 1`` bins."""
    if support_size < 1:
        raise ValueError(f"support_size must be >= 1, got {support_size}")
    return torch.arange(-support_size, support_size + 1, dtype=torch.float32, device=device)


def scalar_to_support(x: torch.Tensor, support_size: int) -> torch.Tensor:
    """Two-hot projection of ``x[...]`` onto the integer atoms -S..S, returning ``[..., 2S + 1]``.

    A value between atoms k and k+1 puts weight (k+1 - x) on k and (x - k) on k+1, so the expectation
    over the atoms gives back ``x`` exactly (MuZero Appendix F).  Values outside [-S, S] are clipped.
    """
    if support_size < 1:
        raise ValueError(f"support_size must be >= 1, got {support_size}")
    x = torch.clamp(x.float(), -float(support_size), float(support_size))
    low = torch.floor(x)
    frac_high = x - low
    # Index of the lower atom; at x == S the upper weight is 0 so clamping the upper index is harmless.
    low_idx = (low + support_size).long()
    high_idx = torch.clamp(low_idx + 1, max=2 * support_size)
    probs = torch.zeros(*x.shape, 2 * support_size + 1, device=x.device)
    probs.scatter_add_(-1, low_idx.unsqueeze(-1), (1.0 - frac_high).unsqueeze(-1))
    probs.scatter_add_(-1, high_idx.unsqueeze(-1), frac_high.unsqueeze(-1))
    return probs


def support_to_scalar(probs: torch.Tensor, support_size: int) -> torch.Tensor:
    """Expectation of the atoms -S..S under ``probs[..., 2S + 1]`` (the inverse of ``scalar_to_support``)."""
    if probs.shape[-1] != 2 * support_size + 1:
        raise ValueError(
            f"probs last dimension must be 2 * support_size + 1 = {2 * support_size + 1}, "
            f"got shape {tuple(probs.shape)}"
        )
    return (probs * support_values(support_size, probs.device)).sum(-1)


def prediction_to_scalar(pred: torch.Tensor, support_size: int, transform_eps: float) -> torch.Tensor:
    """Network output for a value/reward -> the scalar in the environment's units.

    ``support_size == 0``: ``pred[...]`` is h(x) directly; otherwise ``pred[..., 2S+1]`` are logits over
    the support of h(x).  ``transform_eps < 0`` disables the transform (the prediction space is raw x).
    """
    if support_size > 0:
        y = support_to_scalar(torch.softmax(pred, dim=-1), support_size)
    else:
        y = pred
    if transform_eps < 0:
        return y
    return inverse_value_transform(y, transform_eps)


def scalar_prediction_loss(
    pred: torch.Tensor, target: torch.Tensor, support_size: int, transform_eps: float
) -> torch.Tensor:
    """Element-wise loss of a value or reward prediction against a scalar target (no reduction).

    Categorical (``support_size > 0``, ``pred[..., 2S+1]`` logits): cross-entropy against the two-hot
    projection of h(target) (MuZero Appendix F).  Scalar (``support_size == 0``, ``pred[...]``): squared
    error in h-space, 0.5 (pred - h(target))^2.  ``transform_eps < 0`` uses the raw target instead of h.
    """
    y = target if transform_eps < 0 else value_transform(target, transform_eps)
    if support_size > 0:
        if tuple(pred.shape) != tuple(target.shape) + (2 * support_size + 1,):
            raise ValueError(
                f"categorical pred must have shape target.shape + (2S+1,) = "
                f"{tuple(target.shape) + (2 * support_size + 1,)}, got {tuple(pred.shape)}"
            )
        y_probs = scalar_to_support(y, support_size)
        return -(y_probs * torch.log_softmax(pred, dim=-1)).sum(-1)
    check_same_shape("scalar_prediction_loss", pred=pred, target=target)
    return 0.5 * (pred - y) ** 2


#: ``latent_scaling`` values: how h's output and every dynamics output are bounded (``scale_latent``)
LATENT_SCALING_MIN_MAX = "min_max"
LATENT_SCALING_TANH = "tanh"
LATENT_SCALINGS = (LATENT_SCALING_MIN_MAX, LATENT_SCALING_TANH)


def scale_latent(latent: torch.Tensor, scaling: str) -> torch.Tensor:
    """``latent[B, ...]`` bounded by ``scaling``: ``"min_max"``, each sample's values scaled to [0, 1]
    (``min_max_scale``, MuZero App. G: the sample's scale and offset are lost); ``"tanh"``, each value squashed to
    (-1, 1) (sign and magnitude kept)."""
    if scaling == LATENT_SCALING_MIN_MAX:
        return min_max_scale(latent)
    if scaling == LATENT_SCALING_TANH:
        return torch.tanh(latent)
    raise ValueError(f"latent scaling {scaling!r} is unknown; allowed: {list(LATENT_SCALINGS)}")


def min_max_scale(latent: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Per-sample min-max scaling of ``latent[B, ...]`` to [0, 1] (MuZero Appendix G).

    The denominator gets ``eps`` added so a constant latent maps to 0 instead of dividing by zero.
    """
    if latent.dim() < 2:
        raise ValueError(f"latent must be [B, ...], got shape {tuple(latent.shape)}")
    flat = latent.reshape(latent.shape[0], -1)
    lo = flat.min(dim=1, keepdim=True).values
    hi = flat.max(dim=1, keepdim=True).values
    return ((flat - lo) / (hi - lo + eps)).reshape(latent.shape)


def negative_cosine_similarity(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """-cos(pred, stopgrad(target)) over the last dimension, [B, ..., D] -> [B, ...].

    EfficientZero Sec. 3.1 (SimSiam-style consistency): the target branch carries no gradient.
    """
    check_same_shape("negative_cosine_similarity", pred=pred, target=target)
    p = torch.nn.functional.normalize(pred, dim=-1)
    z = torch.nn.functional.normalize(target.detach(), dim=-1)
    return -(p * z).sum(-1)


def latent_mse(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over the last dimension of ``(pred - stopgrad(target))^2``, [B, ..., D] -> [B, ...] (MR.Q's latent
    dynamics loss; the target branch carries no gradient)."""
    check_same_shape("latent_mse", pred=pred, target=target)
    return (pred - target.detach()).pow(2).mean(-1)


CONSISTENCY_LOSSES = {"cosine": negative_cosine_similarity, "mse": latent_mse}


def masked_mean_over_batch(loss_k: torch.Tensor, mask_k: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of ``loss_k[B, K]`` where ``mask_k`` is set, per step k -> ``[K]``.

    A step with no valid sample gives 0 (not NaN) so it neither contributes a gradient nor poisons stats.
    """
    check_shape("loss_k", loss_k, (None,) * 2)
    check_same_shape("masked_mean_over_batch", loss_k=loss_k, mask_k=mask_k)
    m = mask_k.to(loss_k.dtype)
    return (loss_k * m).sum(0) / m.sum(0).clamp(min=1.0)


def continuous_policy_loss(mean_k: torch.Tensor, action_k: torch.Tensor) -> torch.Tensor:
    """Squared error of the predicted (tanh-squashed) action against the action taken, [B, K, A] -> [B, K].

    Deviation from MuZero: without MCTS there is no visit-count policy, so the policy target is the
    behaviour action actually taken at that step (what the data says the actor did).
    """
    check_shape("mean_k", mean_k, (None,) * 3)
    check_same_shape("continuous_policy_loss", mean_k=mean_k, action_k=action_k)
    return 0.5 * ((mean_k - action_k) ** 2).sum(-1)


def discrete_policy_loss(
    logits_per_branch: Sequence[torch.Tensor], disc_action_k: torch.Tensor
) -> torch.Tensor:
    """Cross-entropy of each branch's ``logits[B, K, n_b]`` against the taken ``disc_action_k[B, K, nb]``.

    Summed over branches, giving ``[B, K]``.
    """
    check_shape("disc_action_k", disc_action_k, (None,) * 3)
    if disc_action_k.shape[-1] != len(logits_per_branch):
        raise ValueError(
            f"disc_action_k has {disc_action_k.shape[-1]} branches but {len(logits_per_branch)} logits were given"
        )
    total: List[torch.Tensor] = []
    for b, logits in enumerate(logits_per_branch):
        check_shape(f"logits_per_branch[{b}]", logits, (None,) * 3)
        if logits.shape[:2] != disc_action_k.shape[:2]:
            raise ValueError(
                f"logits_per_branch[{b}] shape {tuple(logits.shape)} does not match action [B, K] "
                f"{tuple(disc_action_k.shape[:2])}"
            )
        logp = torch.log_softmax(logits, dim=-1)
        total.append(-logp.gather(-1, disc_action_k[..., b : b + 1].long()).squeeze(-1))
    return torch.stack(total, 0).sum(0)


class ModelLossWeights(NamedTuple):
    """Weights of the model's loss terms (the ``*_loss_weight`` settings)."""

    value: float
    reward: float
    policy: float
    game_over: float
    consistency: float


class ModelLosses(NamedTuple):
    """The learned model's loss and its parts per unroll step (a part is None when not trained)."""

    total: torch.Tensor  # scalar: weighted sum of the parts, recurrent steps scaled by 1/K
    value_k: torch.Tensor  # [K+1] masked batch mean per step
    reward_k: Optional[torch.Tensor]  # [K] (steps 1..K)
    policy_k: Optional[torch.Tensor]  # [K] (steps 0..K-1)
    game_over_k: Optional[torch.Tensor]  # [K+1]
    consistency_k: Optional[torch.Tensor]  # [K] (steps 1..K)
    value_0: torch.Tensor  # [B] the model's value prediction v_0 as a scalar (no gradient)
    value_err: torch.Tensor  # [B] |v_0 - z_0| (no gradient): the PER priority before exponent and epsilon


def model_losses(
    value_pred_k: torch.Tensor,
    reward_pred_k: Optional[torch.Tensor],
    policy_out_k: Optional[torch.Tensor],
    game_over_logit_k: Optional[torch.Tensor],
    consistency_online_bkd: Optional[torch.Tensor],
    consistency_target_bkd: Optional[torch.Tensor],
    targets: UnrollTargets,
    is_weights: torch.Tensor,
    cont_action_k: Optional[torch.Tensor],
    disc_action_k: Optional[torch.Tensor],
    branches: Sequence[int],
    *,
    support_size: int,
    transform_eps: float,
    loss_weights: ModelLossWeights,
    consistency_loss: str = "cosine",
) -> ModelLosses:
    """MuZero's training loss (MuZero eq. 1; pseudocode ``update_weights``) from the unroll's predictions.

    ``value_pred_k[B, K+1(, 2S+1)]`` and ``reward_pred_k[B, K(, 2S+1)]`` (None when K = 0) are the value and
    reward heads' outputs of unroll steps 0..K and 1..K; ``policy_out_k[B, K, Ac + sum(branches)]`` the policy
    head's of steps 0..K-1 (tanh means, then branch logits; None: no policy loss); ``game_over_logit_k[B, K+1]``
    (None: no game-over loss); ``consistency_online_bkd`` and ``consistency_target_bkd[B, K, D]`` the
    projections of steps 1..K and of h(o_{t+k}) (None: no consistency loss).  Each per-sample loss is
    multiplied by the importance weight ``is_weights[B]``, averaged over the batch where its mask is set, and
    steps 1..K weigh 1/K.  ``consistency_loss`` names the per-sample consistency loss (``CONSISTENCY_LOSSES``:
    "cosine" or "mse").
    """
    K = targets.reward_target_k.shape[1]
    B = targets.value_target_k.shape[0]
    device = targets.value_target_k.device
    w = is_weights.unsqueeze(1)
    step_scale = torch.tensor([1.0] + [1.0 / max(K, 1)] * K, device=device)
    value_l = scalar_prediction_loss(value_pred_k, targets.value_target_k, support_size, transform_eps)
    value_k = masked_mean_over_batch(value_l * w, targets.value_mask_k)
    total = loss_weights.value * (value_k * step_scale).sum()
    reward_k = policy_k = game_over_k = consistency_k = None
    if reward_pred_k is not None:
        reward_l = scalar_prediction_loss(reward_pred_k, targets.reward_target_k, support_size, transform_eps)
        reward_k = masked_mean_over_batch(reward_l * w, targets.reward_mask_k)
        total = total + loss_weights.reward * (reward_k * step_scale[1:]).sum()
    if policy_out_k is not None:
        # Policy target of step k is the action taken at row k (k < K, where the row is stored).
        policy_l = torch.zeros(B, K, device=device)
        c = 0 if cont_action_k is None else cont_action_k.shape[-1]
        if c > 0:
            policy_l = policy_l + continuous_policy_loss(policy_out_k[..., :c], cont_action_k.clamp(-1, 1))
        if branches:
            logits = torch.split(policy_out_k[..., c:], list(branches), dim=-1)
            policy_l = policy_l + discrete_policy_loss(list(logits), disc_action_k)
        policy_k = masked_mean_over_batch(policy_l * w, targets.value_mask_k[:, :K])
        total = total + loss_weights.policy * (policy_k * step_scale[:K]).sum()
    if game_over_logit_k is not None:
        go_l = torch.nn.functional.binary_cross_entropy_with_logits(
            game_over_logit_k, targets.game_over_target_k, reduction="none"
        )
        game_over_k = masked_mean_over_batch(go_l * w, targets.game_over_mask_k)
        total = total + loss_weights.game_over * (game_over_k * step_scale).sum()
    if consistency_online_bkd is not None and consistency_target_bkd is not None:
        cons_l = CONSISTENCY_LOSSES[consistency_loss](consistency_online_bkd, consistency_target_bkd)
        consistency_k = masked_mean_over_batch(cons_l * w, targets.value_mask_k[:, 1:])
        total = total + loss_weights.consistency * (consistency_k * step_scale[1:]).sum()
    with torch.no_grad():
        v0 = prediction_to_scalar(value_pred_k[:, 0], support_size, transform_eps)
        value_err = (v0 - targets.value_target_k[:, 0]).abs()
    return ModelLosses(total, value_k, reward_k, policy_k, game_over_k, consistency_k, v0, value_err)
