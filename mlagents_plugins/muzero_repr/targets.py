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

ACTIONS_AFTER_END_REPEAT = "repeat"
ACTIONS_AFTER_END_RANDOM = "random"
ACTIONS_AFTER_END_CHOICES = (ACTIONS_AFTER_END_REPEAT, ACTIONS_AFTER_END_RANDOM)


class UnrollTargets(NamedTuple):
    value_bk: torch.Tensor  # [B, K+1] n-step value targets z_k (0 where masked)
    value_mask_bk: torch.Tensor  # [B, K+1] bool, also the policy and (k >= 1) consistency mask
    reward_bk: torch.Tensor  # [B, K] reward target of unroll steps 1..K (0 where masked)
    reward_mask_bk: torch.Tensor  # [B, K] bool
    game_over_bk: torch.Tensor  # [B, K+1] float 0/1
    game_over_mask_bk: torch.Tensor  # [B, K+1] bool
    alive_bw: torch.Tensor  # [B, W] bool: row j is stored and in the start row's episode


def alive_rows(valid_bw: torch.Tensor, episode_end_bw: torch.Tensor) -> torch.Tensor:
    """Row ``j`` is alive when rows 0..j are all stored and no episode ended at rows 0..j-1."""
    if valid_bw.dim() != 2 or valid_bw.shape != episode_end_bw.shape:
        raise ValueError(
            f"valid_bw and episode_end_bw must both be [B, W], got {tuple(valid_bw.shape)} and "
            f"{tuple(episode_end_bw.shape)}"
        )
    stored = torch.cumprod(valid_bw.long(), dim=1).bool()
    ended_before = torch.zeros_like(stored)
    ended_before[:, 1:] = torch.cumsum(episode_end_bw[:, :-1].long(), dim=1) > 0
    return stored & ~ended_before


def compute_unroll_targets(
    r_bw: torch.Tensor,
    terminal_bw: torch.Tensor,
    episode_end_bw: torch.Tensor,
    valid_bw: torch.Tensor,
    v_next_bw: torch.Tensor,
    gamma: float,
    num_unroll_steps: int,
    td_steps: int,
) -> UnrollTargets:
    """All value/reward/game-over targets and masks of one batch of windows (see module docstring)."""
    K, n = num_unroll_steps, td_steps
    if K < 0 or n < 1:
        raise ValueError(f"need num_unroll_steps >= 0 and td_steps >= 1, got {K} and {n}")
    if r_bw.dim() != 2:
        raise ValueError(f"r_bw must be [B, W], got shape {tuple(r_bw.shape)}")
    B, W = r_bw.shape
    if W != K + n:
        raise ValueError(f"window length W must be num_unroll_steps + td_steps = {K + n}, got {W}")
    for name, t in (("terminal_bw", terminal_bw), ("episode_end_bw", episode_end_bw),
                    ("valid_bw", valid_bw), ("v_next_bw", v_next_bw)):
        if tuple(t.shape) != (B, W):
            raise ValueError(f"{name} must be [B, W] = {(B, W)}, got {tuple(t.shape)}")
    if bool((terminal_bw.bool() & ~episode_end_bw.bool()).any()):
        raise ValueError("terminal_bw set on a row whose episode_end_bw is not set")

    terminal = terminal_bw.bool()
    episode_end = episode_end_bw.bool()
    alive = alive_rows(valid_bw.bool(), episode_end)
    # Row j continues into row j+1 of the same episode (no end at j, j+1 stored); the last row never does.
    cont = torch.zeros_like(alive)
    cont[:, :-1] = ~episode_end[:, :-1] & valid_bw.bool()[:, 1:]
    r = r_bw.float()
    v_next = v_next_bw.float()

    steps = torch.arange(K + 1, device=r.device)
    value = torch.zeros(B, K + 1, device=r.device)
    running = torch.ones(B, K + 1, dtype=torch.bool, device=r.device)
    disc = 1.0
    for i in range(n):
        j = steps + i  # [K+1], every index < W
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
        value_bk=value,
        value_mask_bk=value_mask,
        reward_bk=reward,
        reward_mask_bk=reward_mask,
        game_over_bk=game_over.float(),
        game_over_mask_bk=game_over_mask,
        alive_bw=alive,
    )


def actions_for_unroll(
    action_bka: torch.Tensor,
    alive_bk: torch.Tensor,
    mode: str,
    random_actions_bka: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Actions fed to the dynamics at unroll steps 1..K: the taken ones while alive, then filled.

    ``action_bka[B, K, A]`` are the stored actions of rows 0..K-1 (rows past the episode end hold data of
    another episode or nothing).  ``mode == "repeat"`` repeats the last alive action (ALF's default);
    ``"random"`` uses ``random_actions_bka`` there.  Row 0 is always alive (it was sampled).
    """
    if mode not in ACTIONS_AFTER_END_CHOICES:
        raise ValueError(f"mode must be one of {ACTIONS_AFTER_END_CHOICES}, got {mode!r}")
    if action_bka.dim() != 3 or tuple(alive_bk.shape) != tuple(action_bka.shape[:2]):
        raise ValueError(
            f"action_bka must be [B, K, A] and alive_bk [B, K], got {tuple(action_bka.shape)} and "
            f"{tuple(alive_bk.shape)}"
        )
    if action_bka.shape[1] == 0:
        return action_bka
    alive = alive_bk.bool()
    if mode == ACTIONS_AFTER_END_RANDOM:
        if random_actions_bka is None or random_actions_bka.shape != action_bka.shape:
            raise ValueError(
                f"mode 'random' needs random_actions_bka of shape {tuple(action_bka.shape)}, got "
                f"{None if random_actions_bka is None else tuple(random_actions_bka.shape)}"
            )
        return torch.where(alive.unsqueeze(-1), action_bka, random_actions_bka.to(action_bka.dtype))
    K = action_bka.shape[1]
    idx = torch.arange(K, device=action_bka.device).expand_as(alive)
    last_alive = torch.cummax(torch.where(alive, idx, torch.zeros_like(idx)), dim=1).values
    return action_bka.gather(1, last_alive.unsqueeze(-1).expand_as(action_bka))


def bootstrap_rows(
    terminal_bw: torch.Tensor, episode_end_bw: torch.Tensor, valid_bw: torch.Tensor, num_unroll_steps: int, td_steps: int
) -> torch.Tensor:
    """Window row whose ``next_obs`` value bootstraps the target of each unroll step, ``[B, K+1]`` (long).

    Row ``k + m - 1`` of the module docstring: the last row summed for step ``k``.  Only these ``B (K+1)``
    observations need the target network (instead of all ``B W``); scatter their values into a ``[B, W]``
    ``v_next_bw`` for ``compute_unroll_targets``.  For steps that are not alive the row is arbitrary.
    """
    K, n = num_unroll_steps, td_steps
    if valid_bw.dim() != 2 or valid_bw.shape[1] != K + n:
        raise ValueError(f"valid_bw must be [B, {K + n}], got {tuple(valid_bw.shape)}")
    episode_end = episode_end_bw.bool()
    cont = torch.zeros_like(valid_bw, dtype=torch.bool)
    cont[:, :-1] = ~episode_end[:, :-1] & valid_bw.bool()[:, 1:]
    steps = torch.arange(K + 1, device=valid_bw.device)
    last = steps.expand(valid_bw.shape[0], K + 1).clone()
    running = torch.ones_like(last, dtype=torch.bool)
    for i in range(n - 1):
        running = running & cont[:, steps + i]
        last = last + running.long()
    return last
