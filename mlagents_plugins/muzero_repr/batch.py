"""Replay rows -> muzero_repr's typed batches: ``ModelBatch`` (unroll windows for the learned model) and the SAC head's
``SACBatch`` (n-step windows), both from start rows the trainer samples.

The trainer owns the replay buffer and the sampling generators (``MuZeroReprTrainer.sample_model_batch`` and
``sample_rl_batch``); these functions only gather rows and build tensors.  ``torch_rng`` draws the DrQ shifts
(``random_shift_pad``) and the random actions after an episode's end (``actions_after_end: random``).
"""
from typing import List, NamedTuple, Optional

import numpy as np

from mlagents.torch_utils import nn, torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from mlagents_plugins.common.image_augment import augment
from mlagents_plugins.muzero_repr.networks import encode_actions
from mlagents_plugins.muzero_repr.targets import (
    ACTIONS_AFTER_END_RANDOM,
    actions_for_unroll,
    alive_rows,
    bootstrap_rows,
)
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.sac.batch import window_batch
from mlagents_plugins.sac.losses import SACBatch


class ModelBatch(NamedTuple):
    """One sampled batch of unroll windows, as tensors on the training device."""

    starts: np.ndarray  # [B] ring indices of the start rows
    is_weights: torch.Tensor  # [B] importance weights (ones without PER)
    obs_0: List[torch.Tensor]  # start observations, each [B, ...]
    obs_future: List[torch.Tensor]  # observations of rows 1..K, each [B, K, ...] (empty without consistency)
    actions_enc_k: torch.Tensor  # [B, K, A] encoded actions fed to the dynamics (filled after the end)
    cont_action_k: Optional[torch.Tensor]  # [B, K, Ac] taken continuous actions (policy targets)
    disc_action_k: Optional[torch.Tensor]  # [B, K, nb] taken discrete actions
    r_t: torch.Tensor  # [B, W]
    terminal_t: torch.Tensor  # [B, W] bool
    valid_t: torch.Tensor  # [B, W] bool
    boot_obs: List[torch.Tensor]  # next_obs of the bootstrap rows, each [B * (K+1), ...]
    boot_rows_k: torch.Tensor  # [B, K+1] window row of each bootstrap


def random_actions(action_spec: ActionSpec, b: int, k: int, torch_rng: torch.Generator,
                   device: torch.device) -> torch.Tensor:
    """``[b, k, A]`` encoded uniform actions: continuous in [-1, 1], then each branch one-hot.

    Drawn on ``torch_rng``'s device (the trainer thread's default device may be the GPU), then moved to ``device``.
    """
    parts = []
    rng_device = torch_rng.device
    if action_spec.continuous_size > 0:
        parts.append(torch.rand(b, k, action_spec.continuous_size, generator=torch_rng, device=rng_device) * 2 - 1)
    for n in action_spec.discrete_branches:
        idx = torch.randint(0, n, (b, k), generator=torch_rng, device=rng_device)
        parts.append(nn.functional.one_hot(idx, n).float())
    return torch.cat(parts, dim=-1).to(device)


def model_batch(
    replay: ReplayBuffer,
    starts: np.ndarray,
    weights: Optional[torch.Tensor],
    spec: BehaviorSpec,
    *,
    num_unroll_steps: int,
    td_steps: int,
    reward_scale: float,
    with_future_obs: bool,
    actions_after_end: str,
    shift_pad: int,
    torch_rng: torch.Generator,
    device: torch.device,
) -> ModelBatch:
    """The ``ModelBatch`` of the windows of ``K + td_steps`` rows starting at ``starts``.

    ``weights``: importance weights ``[B]`` or None (uniform: ones).  ``with_future_obs``: gather the
    observations of rows 1..K (the consistency loss's targets).  The start and future observations get the DrQ
    shift, the bootstrap observations (read by the target model) do not.
    """
    K, n, B = num_unroll_steps, td_steps, len(starts)
    W = K + n
    n_obs = len(spec.observation_specs)
    action_spec = spec.action_spec
    if weights is None:
        weights = torch.ones(B, device=device)
    idx, valid = replay.sequence_indices(starts, W)
    small_fields = [offpolicy_rows.REWARD, offpolicy_rows.TERMINAL]
    if action_spec.continuous_size > 0:
        small_fields.append(offpolicy_rows.CONT_ACTION)
    if action_spec.discrete_size > 0:
        small_fields.append(offpolicy_rows.DISC_ACTION)
    small = replay.gather(idx, small_fields)
    valid_t = torch.as_tensor(valid, device=device)
    # Only the last row of a segment can be terminal, and every episode end is a segment end, so
    # "episode end" within a window is the terminal flag; time-outs and chunk ends show as ~valid.
    terminal_t = torch.as_tensor(small[offpolicy_rows.TERMINAL], device=device) & valid_t
    r_t = torch.as_tensor(small[offpolicy_rows.REWARD], device=device) * reward_scale
    boot_rows = bootstrap_rows(terminal_t, terminal_t, valid_t, K, n)
    boot_idx = np.take_along_axis(idx, boot_rows.cpu().numpy(), axis=1).reshape(-1)
    boot_obs = offpolicy_rows.gather_obs(replay.gather(boot_idx, [offpolicy_rows.next_obs_field(i) for i in range(n_obs)]), n_obs, True, device)
    obs_names = [offpolicy_rows.obs_field(i) for i in range(n_obs)]
    obs_0 = augment(offpolicy_rows.gather_obs(replay.gather(idx[:, 0], obs_names), n_obs, False, device), shift_pad, torch_rng)
    obs_future: List[torch.Tensor] = []
    if with_future_obs and K > 0:
        fut = offpolicy_rows.gather_obs(replay.gather(idx[:, 1 : K + 1].reshape(-1), obs_names), n_obs, False, device)
        obs_future = [o.reshape(B, K, *o.shape[1:]) for o in augment(fut, shift_pad, torch_rng)]
    cont = disc = None
    if action_spec.continuous_size > 0:
        cont = torch.as_tensor(small[offpolicy_rows.CONT_ACTION][:, :K], device=device)
    if action_spec.discrete_size > 0:
        disc = torch.as_tensor(small[offpolicy_rows.DISC_ACTION][:, :K].astype(np.int64), device=device)
    enc = encode_actions(action_spec, cont, disc)
    alive_k = alive_rows(valid_t, terminal_t)[:, :K]
    rand = random_actions(action_spec, B, K, torch_rng, device) if actions_after_end == ACTIONS_AFTER_END_RANDOM else None
    enc = actions_for_unroll(enc, alive_k, actions_after_end, rand)
    return ModelBatch(starts, weights, obs_0, obs_future, enc, cont, disc, r_t, terminal_t, valid_t,
                      boot_obs, boot_rows)


def rl_batch(
    replay: ReplayBuffer,
    starts: np.ndarray,
    weights: Optional[torch.Tensor],
    spec: BehaviorSpec,
    *,
    n_step: int,
    reward_scale: float,
    gamma: float,
    shift_pad: int,
    torch_rng: torch.Generator,
    device: torch.device,
) -> SACBatch:
    """The SAC head's n-step windows (``sac.batch.window_batch``, as fast_sac) with the extrinsic reward only (times its
    strength, discount its gamma); visual observations get the DrQ shift when ``shift_pad > 0``."""
    scale = np.float32(reward_scale)
    batch = window_batch(
        replay, starts, weights, n_step, spec,
        lambda idx, window: (window[offpolicy_rows.REWARD] * scale)[..., None], [gamma], [1.0], device,
    )
    return batch._replace(s_tm1=augment(batch.s_tm1, shift_pad, torch_rng),
                          s_t=augment(batch.s_t, shift_pad, torch_rng))
