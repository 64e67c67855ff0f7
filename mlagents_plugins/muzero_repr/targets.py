"""Unroll targets for MuZero training from a window of replay rows (pure tensor math).

Row convention (ML-Agents / replay buffer): row ``j`` of a window holds the observation ``o_j``, the action
``a_j`` taken from it, the reward ``r_j`` received for that action, whether the episode ended after it
(``episode_end_j``) and, if so, whether by termination (``terminal_j``; a time-out / max-step interruption
is an episode end that is *not* terminal), and ``v_next_j``: the target network's value of the observation
that followed ``a_j`` (``next_obs``).  ``valid_j`` says the row is stored and follows row ``j-1`` of the
same agent (``False`` past the end of the stored data, i.e. past a segment end).

A training window starts at a sampled row ``t`` (window index 0) and has ``W = K + n`` rows, ``K =
num_unroll_steps``, ``n = td_steps``.  Unroll step ``k = 0..K`` is the latent ``s_k`` = h(o_0) unrolled
``k`` times by g with ``a_0..a_{k-1}``.

Names follow docs/TEAM.md: per-row tensors of a window end in ``_t`` (``r_t[:, j]`` is row ``j``'s reward; the
bootstrap values ``v_next_j`` below are ``v_t``), per-unroll-step ones in ``_k`` (``value_target_k[:, k]`` is
``z_k``); shapes are in the comments.

Targets (MuZero eq. 1 and Appendix G with the deviations written here):

* value of step ``k``: z_k = sum_{i<m} gamma^i r_{k+i} + gamma^m (1 - terminal_{k+m-1}) v_next_{k+m-1},
  ``m = min(n, rows from k up to and including the first episode end or the last stored row)``.  So a
  terminal cuts the bootstrap, a time-out bootstraps from the observation after it, and the end of stored
  data (segment end) bootstraps from the last stored row's ``next_obs``.
* reward of step ``k >= 1``: r_{k-1}.
* game over of step ``k``: 1 if a terminal occurred in rows ``0..k-1``.
* masks: value/policy/consistency of step ``k`` only where row ``k`` belongs to the start row's episode
  and is stored ("alive"); reward of step ``k`` where row ``k-1`` is alive.  Positions beyond an episode
  end are therefore masked out.  Game over is known where row ``k`` is alive or a terminal came before it;
  beyond a time-out or a segment end it is unknown and masked.
"""
from typing import NamedTuple, Optional

from mlagents.torch_utils import torch

from mlagents_plugins.common.tensor_utils import is_compiling

ACTIONS_AFTER_END_REPEAT = "repeat"
ACTIONS_AFTER_END_RANDOM = "random"
ACTIONS_AFTER_END_CHOICES = (ACTIONS_AFTER_END_REPEAT, ACTIONS_AFTER_END_RANDOM)


class UnrollTargets(NamedTuple):
    value_target_k: torch.Tensor  # [B, K+1] n-step value targets z_k (0 where masked)
    value_mask_k: torch.Tensor  # [B, K+1] bool, also the policy and (k >= 1) consistency mask
    reward_target_k: torch.Tensor  # [B, K] reward target of unroll steps 1..K (0 where masked)
    reward_mask_k: torch.Tensor  # [B, K] bool
    game_over_target_k: torch.Tensor  # [B, K+1] float 0/1
    game_over_mask_k: torch.Tensor  # [B, K+1] bool
    alive_t: torch.Tensor  # [B, W] bool: row j is stored and in the start row's episode


def alive_rows(valid_t: torch.Tensor, episode_end_t: torch.Tensor) -> torch.Tensor:
    """Row ``j`` is alive when rows 0..j are all stored and no episode ended at rows 0..j-1."""
    if valid_t.dim() != 2 or valid_t.shape != episode_end_t.shape:
        raise ValueError(
            f"valid_t and episode_end_t must both be [B, W], got {tuple(valid_t.shape)} and "
            f"{tuple(episode_end_t.shape)}"
        )
    stored = torch.cumprod(valid_t.long(), dim=1).bool()
    ended_before = torch.zeros_like(stored)
    ended_before[:, 1:] = torch.cumsum(episode_end_t[:, :-1].long(), dim=1) > 0
    return stored & ~ended_before


def compute_unroll_targets(
    r_t: torch.Tensor,
    terminal_t: torch.Tensor,
    episode_end_t: torch.Tensor,
    valid_t: torch.Tensor,
    v_t: torch.Tensor,
    gamma: float,
    num_unroll_steps: int,
    td_steps: int,
) -> UnrollTargets:
    """All value/reward/game-over targets and masks of one batch of windows (see module docstring)."""
    K, n = num_unroll_steps, td_steps
    if K < 0 or n < 1:
        raise ValueError(f"need num_unroll_steps >= 0 and td_steps >= 1, got {K} and {n}")
    if r_t.dim() != 2:
        raise ValueError(f"r_t must be [B, W], got shape {tuple(r_t.shape)}")
    B, W = r_t.shape
    if W != K + n:
        raise ValueError(f"window length W must be num_unroll_steps + td_steps = {K + n}, got {W}")
    for name, t in (("terminal_t", terminal_t), ("episode_end_t", episode_end_t),
                    ("valid_t", valid_t), ("v_t", v_t)):
        if tuple(t.shape) != (B, W):
            raise ValueError(f"{name} must be [B, W] = {(B, W)}, got {tuple(t.shape)}")
    # A check of values, not shapes: it reads the tensors back, which would split a compiled graph in two, so
    # it runs eagerly only (the compiled update passes one tensor as both, which always passes).
    if not is_compiling() and bool((terminal_t.bool() & ~episode_end_t.bool()).any()):
        raise ValueError("terminal_t set on a row whose episode_end_t is not set")

    terminal = terminal_t.bool()
    episode_end = episode_end_t.bool()
    alive = alive_rows(valid_t.bool(), episode_end)
    # Row j continues into row j+1 of the same episode (no end at j, j+1 stored); the last row never does.
    cont = torch.zeros_like(alive)
    cont[:, :-1] = ~episode_end[:, :-1] & valid_t.bool()[:, 1:]
    r = r_t.float()
    v_next = v_t.float()
    value = torch.zeros(B, K + 1, device=r.device)
    running = torch.ones(B, K + 1, dtype=torch.bool, device=r.device)
    disc = 1.0
    for i in range(n):
        j = slice(i, i + K + 1)  # rows k + i of every step k = 0..K, every index < W
        value = value + torch.where(running, disc * r[:, j], torch.zeros(()))
        stop = running & (~cont[:, j] if i < n - 1 else torch.ones_like(running))
        boot = disc * gamma * (~terminal[:, j]).float() * v_next[:, j]
        value = value + torch.where(stop, boot, torch.zeros(()))
        running = running & ~stop
        disc *= gamma
    value_mask = alive[:, : K + 1]
    value = value * value_mask.float()

    reward_mask = alive[:, :K]
    reward = r[:, :K] * reward_mask.float()

    terminal_alive = (terminal & alive).long()
    game_over = torch.zeros(B, K + 1, dtype=torch.bool, device=r.device)
    game_over[:, 1:] = torch.cumsum(terminal_alive[:, :K], dim=1) > 0
    game_over_mask = value_mask | game_over
    return UnrollTargets(
        value_target_k=value,
        value_mask_k=value_mask,
        reward_target_k=reward,
        reward_mask_k=reward_mask,
        game_over_target_k=game_over.float(),
        game_over_mask_k=game_over_mask,
        alive_t=alive,
    )


def actions_for_unroll(
    action_k: torch.Tensor,
    alive_k: torch.Tensor,
    mode: str,
    random_actions_k: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Actions fed to the dynamics at unroll steps 1..K: the taken ones while alive, then filled.

    ``action_k[B, K, A]`` are the stored actions of rows 0..K-1 (rows past the episode end hold data of
    another episode or nothing).  ``mode == "repeat"`` repeats the last alive action (ALF's default);
    ``"random"`` uses ``random_actions_k`` there.  Row 0 is always alive (it was sampled).
    """
    if mode not in ACTIONS_AFTER_END_CHOICES:
        raise ValueError(f"mode must be one of {ACTIONS_AFTER_END_CHOICES}, got {mode!r}")
    if action_k.dim() != 3 or tuple(alive_k.shape) != tuple(action_k.shape[:2]):
        raise ValueError(
            f"action_k must be [B, K, A] and alive_k [B, K], got {tuple(action_k.shape)} and "
            f"{tuple(alive_k.shape)}"
        )
    if action_k.shape[1] == 0:
        return action_k
    alive = alive_k.bool()
    if mode == ACTIONS_AFTER_END_RANDOM:
        if random_actions_k is None or random_actions_k.shape != action_k.shape:
            raise ValueError(
                f"mode 'random' needs random_actions_k of shape {tuple(action_k.shape)}, got "
                f"{None if random_actions_k is None else tuple(random_actions_k.shape)}"
            )
        return torch.where(alive.unsqueeze(-1), action_k, random_actions_k.to(action_k.dtype))
    K = action_k.shape[1]
    idx = torch.arange(K, device=action_k.device).expand_as(alive)
    last_alive = torch.cummax(torch.where(alive, idx, torch.zeros_like(idx)), dim=1).values
    return action_k.gather(1, last_alive.unsqueeze(-1).expand_as(action_k))


def bootstrap_rows(
    terminal_t: torch.Tensor, episode_end_t: torch.Tensor, valid_t: torch.Tensor, num_unroll_steps: int, td_steps: int
) -> torch.Tensor:
    """Window row whose ``next_obs`` value bootstraps the target of each unroll step, ``[B, K+1]`` (long).

    Row ``k + m - 1`` of the module docstring: the last row summed for step ``k``.  Only these ``B (K+1)``
    observations need the target network (instead of all ``B W``); scatter their values into a ``[B, W]``
    ``v_t`` for ``compute_unroll_targets``.  For steps that are not alive the row is arbitrary.
    """
    K, n = num_unroll_steps, td_steps
    if valid_t.dim() != 2 or valid_t.shape[1] != K + n:
        raise ValueError(f"valid_t must be [B, {K + n}], got {tuple(valid_t.shape)}")
    episode_end = episode_end_t.bool()
    cont = torch.zeros_like(valid_t, dtype=torch.bool)
    cont[:, :-1] = ~episode_end[:, :-1] & valid_t.bool()[:, 1:]
    steps = torch.arange(K + 1, device=valid_t.device)
    if n == 1:
        return steps.expand(valid_t.shape[0], K + 1).clone()
    # Step k sums rows k, k+1, ... while each continues into the next, at most n - 1 times: k plus the length of
    # the run of continuing rows k .. k+n-2 (all windows at once, [B, K+1, n-1], instead of a loop over i).
    continues = cont[:, : K + n - 1].unfold(1, n - 1, 1).long()
    return steps + torch.cumprod(continues, dim=2).sum(dim=2)
