"""Standard transition rows: replay layout, trajectory -> rows, sampled rows -> tensors / AgentBuffer.

One row per agent step ``t``: ``obs_i`` (observation ``i`` at ``t``), ``next_obs_i`` (at ``t + 1``; for a
chunk's last step the trajectory's ``next_obs``, i.e. the true final observation after a time-out),
the actions taken, the action mask at ``t`` and ``t + 1``, the environment reward and ``terminal`` (episode
ended by the environment, *not* by a time-out: only then is there no bootstrap).  Each trajectory chunk is
added as one replay segment, so n-step windows stop at the chunk's end and bootstrap from its ``next_obs``.

``next_obs_i`` and the next action mask are the next row's ``obs_i`` and action mask within a chunk, so the
replay stores them once (``FieldSpec.next_of``): each frame once per transition, plus the chunk's final
observation once per chunk.

Visual observations (rank-3) are stored as uint8 (ML-Agents decodes PNG frames to ``k / 255`` exactly, so
rounding back is lossless) and turned back into float on the training device.

Rows are read straight from the chunk's steps, one array per field (``trajectory_to_rows``), with the values
``Trajectory.to_agentbuffer()`` would give, but without building that buffer: it appends some twenty fields per
step, most of which an off-policy row never reads.
"""
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from mlagents.torch_utils import torch
from mlagents.trainers.buffer import AgentBuffer, BufferKey
from mlagents.trainers.trajectory import ObsUtil, Trajectory
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.replay.specs import FieldSpec

CONT_ACTION = "cont_action"
DISC_ACTION = "disc_action"
ACTION_MASK = "action_mask"
NEXT_ACTION_MASK = "next_action_mask"
REWARD = "reward"
TERMINAL = "terminal"


def obs_field(i: int) -> str:
    return f"obs_{i}"


def next_obs_field(i: int) -> str:
    return f"next_obs_{i}"


def is_compact_obs(shape) -> bool:
    """Rank-3 observations are camera frames in [0, 1]: stored as uint8."""
    return len(shape) == 3


def has_visual(observation_specs: Sequence[Any]) -> bool:
    """Whether any observation is an image (rank 3, as the replay stores camera frames)."""
    return any(is_compact_obs(spec.shape) for spec in observation_specs)


def transition_fields(spec: BehaviorSpec) -> Dict[str, FieldSpec]:
    """Replay fields of the standard transition row for ``spec``."""
    fields: Dict[str, FieldSpec] = {}
    for i, o in enumerate(spec.observation_specs):
        dtype = "uint8" if is_compact_obs(o.shape) else "float32"
        fields[obs_field(i)] = FieldSpec(tuple(o.shape), dtype)
        fields[next_obs_field(i)] = FieldSpec(tuple(o.shape), dtype, next_of=obs_field(i))
    a = spec.action_spec
    if a.continuous_size > 0:
        fields[CONT_ACTION] = FieldSpec((a.continuous_size,), "float32")
    if a.discrete_size > 0:
        fields[DISC_ACTION] = FieldSpec((a.discrete_size,), "int32")
        fields[ACTION_MASK] = FieldSpec((int(sum(a.discrete_branches)),), "bool")
        fields[NEXT_ACTION_MASK] = FieldSpec((int(sum(a.discrete_branches)),), "bool", next_of=ACTION_MASK)
    fields[REWARD] = FieldSpec((), "float32")
    fields[TERMINAL] = FieldSpec((), "bool")
    return fields


def _to_storage(x: np.ndarray, compact: bool) -> np.ndarray:
    if compact:
        return np.clip(np.rint(x * 255.0), 0, 255).astype(np.uint8)
    return x.astype(np.float32, copy=False)


def stacked_observations(trajectory: Trajectory) -> List[np.ndarray]:
    """Observation ``i`` of every step of a chunk as one float32 ``[n, *shape]`` array (one stack per observation,
    straight from the steps: what ``to_agentbuffer()`` would hold under ``ObsUtil.get_name_at(i)``)."""
    steps = trajectory.steps
    return [np.asarray(np.stack([e.obs[i] for e in steps]), dtype=np.float32) for i in range(len(steps[0].obs))]


def observation_buffer(obs: Sequence[np.ndarray]) -> AgentBuffer:
    """An ``AgentBuffer`` holding only the observations (what an actor's ``update_normalization`` reads)."""
    buf = AgentBuffer()
    for i, x in enumerate(obs):
        buf[ObsUtil.get_name_at(i)].set(list(x))
    return buf


def _action_masks(steps, n: int, discrete_size: int, width: int) -> np.ndarray:
    """[n, width] bool, True = allowed: ``to_agentbuffer``'s masks (1 - the environment's blocked flags; ones of
    the branch count where a step has none), all allowed when they do not form an [n, width] array."""
    masks = [np.ones(discrete_size, np.float32) if e.action_mask is None else 1 - np.concatenate(e.action_mask)
             for e in steps]
    try:
        mask = np.asarray(masks, dtype=np.float32)
    except ValueError:  # steps with and without masks: ragged
        mask = None
    if mask is None or mask.ndim != 2 or mask.shape[1] != width:  # environment sent no mask: everything allowed
        mask = np.ones((n, width), np.float32)
    return mask > 0.5


def trajectory_to_rows(spec: BehaviorSpec, trajectory: Trajectory,
                       obs: Optional[Sequence[np.ndarray]] = None) -> Dict[str, np.ndarray]:
    """Standard rows of one trajectory chunk, one array per field read straight from its steps (no
    ``AgentBuffer``); ``obs`` is ``stacked_observations(trajectory)`` when the caller has it already."""
    steps = trajectory.steps
    n = len(steps)
    obs = stacked_observations(trajectory) if obs is None else obs
    rows: Dict[str, np.ndarray] = {}
    for i, o in enumerate(spec.observation_specs):
        compact = is_compact_obs(o.shape)
        stored = _to_storage(obs[i], compact)
        final = _to_storage(np.asarray(trajectory.next_obs[i], dtype=np.float32)[None], compact)
        rows[obs_field(i)] = stored
        rows[next_obs_field(i)] = np.concatenate([stored[1:], final])
    a = spec.action_spec
    if a.continuous_size > 0:
        rows[CONT_ACTION] = np.asarray([e.action.continuous for e in steps], dtype=np.float32).reshape(n, -1)
    if a.discrete_size > 0:
        rows[DISC_ACTION] = np.asarray([e.action.discrete for e in steps]).reshape(n, -1).astype(np.int32)
        mask = _action_masks(steps, n, a.discrete_size, int(sum(a.discrete_branches)))
        rows[ACTION_MASK] = mask
        # Mask at t+1; unknown after the chunk's last step (no decision there yet): everything allowed.
        nxt = np.ones_like(mask)
        nxt[:-1] = mask[1:]
        rows[NEXT_ACTION_MASK] = nxt
    rows[REWARD] = np.asarray([e.reward for e in steps], dtype=np.float32)
    terminal = np.zeros(n, dtype=bool)
    # Only the last step can end an episode; a time-out (interrupted) is not terminal: it bootstraps.
    terminal[-1] = bool(trajectory.done_reached and not trajectory.interrupted)
    rows[TERMINAL] = terminal
    return rows


def obs_to_tensor(x: np.ndarray, device: torch.device) -> torch.Tensor:
    """Stored observation rows -> float tensor on ``device`` (uint8 frames are moved first, then scaled)."""
    t = torch.from_numpy(np.ascontiguousarray(x)).to(device, non_blocking=True)
    if t.dtype == torch.uint8:
        return t.float().mul_(1.0 / 255.0)
    return t


def rows_to_agent_buffer(spec: BehaviorSpec, rows: Mapping[str, np.ndarray]) -> AgentBuffer:
    """An ``AgentBuffer`` with the keys ML-Agents' reward providers read, built from flat sampled rows.

    Only used when an intrinsic reward provider (GAIL, curiosity, RND) must be evaluated or updated on a
    sampled minibatch; pure-extrinsic training never builds one.
    """
    buf = AgentBuffer()
    n = len(rows[REWARD])
    for i, o in enumerate(spec.observation_specs):
        for key, name in ((ObsUtil.get_name_at(i), obs_field(i)), (ObsUtil.get_name_at_next(i), next_obs_field(i))):
            x = rows[name]
            x = x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else x
            buf[key].set(list(x))
    a = spec.action_spec
    if a.continuous_size > 0:
        buf[BufferKey.CONTINUOUS_ACTION].set(list(rows[CONT_ACTION]))
    if a.discrete_size > 0:
        buf[BufferKey.DISCRETE_ACTION].set(list(rows[DISC_ACTION].astype(np.int64)))
        buf[BufferKey.ACTION_MASK].set(list(rows[ACTION_MASK].astype(np.float32)))
    buf[BufferKey.ENVIRONMENT_REWARDS].set(list(rows[REWARD]))
    buf[BufferKey.DONE].set(list(rows[TERMINAL].astype(np.float32)))
    buf[BufferKey.MASKS].set(list(np.ones(n, np.float32)))
    return buf


def gather_obs(rows: Mapping[str, np.ndarray], n_obs: int, next_: bool, device: torch.device) -> List[torch.Tensor]:
    """The ``obs_i`` (or ``next_obs_i``) fields of gathered rows as ML-Agents' observation list on ``device``."""
    name = next_obs_field if next_ else obs_field
    return [obs_to_tensor(rows[name(i)], device) for i in range(n_obs)]
