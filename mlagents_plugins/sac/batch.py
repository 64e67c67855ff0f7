"""Replay rows -> ``SACBatch`` (``losses.SACBatch``, the SAC head's typed batch): start rows (uniform or prioritized) and n-step windows,
shared by fast_sac and muzero_repr's SAC head so both feed ``losses.sac_losses`` the same tensors from the same rows.

A window starts at a sampled row and takes the next ``n - 1`` rows of the same stored segment
(``ReplayBuffer.sequence_indices``); its bootstrap observation is the ``next_obs`` of its last valid row, so
a time-out bootstraps from the real final observation and a chunk end from the chunk's ``next_obs``.
"""
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np
from mlagents.torch_utils import torch
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.common.tensor_utils import stream_discounts
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.prioritized import importance_weights
from mlagents_plugins.sac.losses import SACBatch

#: ``stream_rewards(idx [B, N], window rows) -> [B, N, S]`` float32 rewards per stream, strength applied.
StreamRewards = Callable[[np.ndarray, Dict[str, np.ndarray]], np.ndarray]


def annealed_per_beta(per_beta: float, step: int, max_steps: int) -> float:
    """PER importance-sampling exponent at ``step``: linear from ``per_beta`` to 1 at ``max_steps`` (Schaul et
    al. 2016, sec. 3.4), constant after."""
    frac = min(1.0, step / max(1, max_steps))
    return per_beta + (1.0 - per_beta) * frac


def sample_starts(
    replay: ReplayBuffer,
    rng: np.random.Generator,
    batch_size: int,
    prioritized: bool,
    beta: float,
    device: torch.device,
) -> Tuple[np.ndarray, Optional[torch.Tensor]]:
    """``batch_size`` start rows and, with ``prioritized``, their importance weights ``(N P)^-beta / max`` [B]
    (Schaul et al. 2016, Sec. 3.4); without it the rows are uniform and the weights None."""
    if not prioritized:
        return replay.sample_indices(batch_size, rng), None
    start, probs = replay.sample_prioritized(batch_size, rng)
    w = importance_weights(probs, replay.size, beta)
    return start, torch.from_numpy(np.asarray(w, dtype=np.float32)).to(device)


def window_batch(
    replay: ReplayBuffer,
    start: np.ndarray,
    weights: Optional[torch.Tensor],
    n_step: int,
    spec: BehaviorSpec,
    stream_rewards: StreamRewards,
    gammas: Sequence[float],
    use_done: Sequence[float],
    device: torch.device,
) -> SACBatch:
    """The ``SACBatch`` of the n-step windows starting at ``start``.

    ``discount_t = gamma_s * (1 - terminal * use_done_s)``: a stream whose provider ignores ``done`` keeps
    bootstrapping at a terminal.
    """
    n_obs = len(spec.observation_specs)
    if n_step == 1:
        idx = start[:, None]
        valid = np.ones((len(start), 1), dtype=bool)
    else:
        idx, valid = replay.sequence_indices(start, n_step)
        valid = np.cumprod(valid, axis=1).astype(bool)
    last = idx[np.arange(len(start)), valid.sum(axis=1) - 1]

    head_fields = [offpolicy_rows.obs_field(i) for i in range(n_obs)]
    tail_fields = [offpolicy_rows.next_obs_field(i) for i in range(n_obs)]
    if spec.action_spec.continuous_size > 0:
        head_fields.append(offpolicy_rows.CONT_ACTION)
    if spec.action_spec.discrete_size > 0:
        head_fields += [offpolicy_rows.DISC_ACTION, offpolicy_rows.ACTION_MASK]
        tail_fields.append(offpolicy_rows.NEXT_ACTION_MASK)
    head = replay.gather(start, head_fields)
    tail = replay.gather(last, tail_fields)
    window = replay.gather(idx, [offpolicy_rows.REWARD, offpolicy_rows.TERMINAL])  # [B, N]

    rewards = stream_rewards(idx, window)  # [B, N, S]
    terminal = window[offpolicy_rows.TERMINAL].astype(np.float32)
    discount = stream_discounts(np.asarray(gammas, np.float32), terminal, np.asarray(use_done, np.float32))

    def t(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(x)).to(device, non_blocking=True)

    return SACBatch(
        s_tm1=[offpolicy_rows.obs_to_tensor(head[offpolicy_rows.obs_field(i)], device) for i in range(n_obs)],
        a_tm1_cont=t(head[offpolicy_rows.CONT_ACTION]) if offpolicy_rows.CONT_ACTION in head else None,
        a_tm1_disc=t(head[offpolicy_rows.DISC_ACTION].astype(np.int64)) if offpolicy_rows.DISC_ACTION in head else None,
        mask_tm1=t(head[offpolicy_rows.ACTION_MASK].astype(np.float32)) if offpolicy_rows.ACTION_MASK in head else None,
        r_t=t(rewards),
        discount_t=t(discount.astype(np.float32)),
        valid_t=t(valid),
        s_t=[offpolicy_rows.obs_to_tensor(tail[offpolicy_rows.next_obs_field(i)], device) for i in range(n_obs)],
        mask_t=t(tail[offpolicy_rows.NEXT_ACTION_MASK].astype(np.float32)) if offpolicy_rows.NEXT_ACTION_MASK in tail else None,
        weights=weights,
    )
