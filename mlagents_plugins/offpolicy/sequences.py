"""Recurrent policies in a replay buffer: each step's memory stored as a column, and windows of consecutive rows
sampled for training on sequences (R2D2's stored state with burn-in, Kapturowski et al. 2019).

Columns (added to the replay layout only when ``network_settings.memory`` is set, so a layout without memory is
unchanged):

* ``memory`` ``[memory_size]`` float32: the policy's memory *before* it acted at that step (ML-Agents'
  ``AgentExperience.memory``, the input of the step; zeros at an episode's first step);
* ``sequence_pos`` int32: the row's position in its trajectory chunk (0 at the chunk's first step).

Windows.  A sampled row belongs to the sequence of ``sequence_length`` rows that starts at its chunk's first row
plus a multiple of ``sequence_length`` (the sequences built-in sac cuts each chunk into); the window starts up to
``burn_in`` rows earlier in the same chunk (fewer when the chunk starts sooner) and holds ``burn_in +
sequence_length`` rows.  A row of the window is ``valid`` while it belongs to the same stored chunk (a chunk ends
at an episode end or at ``time_horizon``) and ``train`` when it is valid and in the sampled sequence; the rows
before it (the burn-in) only bring the networks' memories up to date.  The memory the policy starts from is the one
stored at the window's first row.  Rows of the oldest chunk that the ring has already overwritten are left out:
the sequence then starts at the chunk's oldest live row.
"""
from typing import NamedTuple

import numpy as np
from mlagents.trainers.trajectory import Trajectory

from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.specs import FieldSpec

MEMORY = "memory"
SEQUENCE_POS = "sequence_pos"


def memory_fields(memory_size: int):
    """The replay columns a recurrent policy adds (see the module docstring)."""
    return {MEMORY: FieldSpec((int(memory_size),), "float32"), SEQUENCE_POS: FieldSpec((), "int32")}


def memory_rows(trajectory: Trajectory, memory_size: int) -> dict:
    """The ``memory`` and ``sequence_pos`` columns of one trajectory chunk.  A step without a memory (a policy
    without one acted) is refused: its rows would train a recurrent policy from a made-up state."""
    steps = trajectory.steps
    if any(step.memory is None for step in steps):
        raise ValueError("a recurrent trainer got a trajectory without memories: was it acted by its own policy?")
    memory = np.asarray([step.memory for step in steps], dtype=np.float32).reshape(len(steps), -1)
    if memory.shape[1] != memory_size:
        raise ValueError(f"trajectory memories have {memory.shape[1]} values per step, expected {memory_size}")
    return {MEMORY: memory, SEQUENCE_POS: np.arange(len(steps), dtype=np.int32)}


class SequenceWindows(NamedTuple):
    """Sampled windows of ``W = burn_in + sequence_length`` ring rows (``B`` windows)."""

    idx: np.ndarray  # [B, W] ring indices (in range also where not valid)
    valid: np.ndarray  # [B, W] bool: the row belongs to the window's first row's chunk (a leading run)
    train: np.ndarray  # [B, W] bool: valid and in the sampled sequence (the loss's rows)


def _age(replay: ReplayBuffer, idx: np.ndarray) -> np.ndarray:
    """Position of ring indices in time order (0 = the oldest filled row)."""
    return (np.asarray(idx, dtype=np.int64) - replay.oldest_pos) % replay.capacity


def sequence_windows(replay: ReplayBuffer, rows: np.ndarray, sequence_length: int, burn_in: int) -> SequenceWindows:
    """The windows of sampled ring rows ``rows`` [B] (see the module docstring)."""
    rows = np.asarray(rows, dtype=np.int64)
    cap = replay.capacity
    seg = replay.segment_ids(rows)
    pos = replay.gather(rows, [SEQUENCE_POS])[SEQUENCE_POS].astype(np.int64)
    age = _age(replay, rows)
    # Rows back from the sampled one: the sequence start is (pos mod L) rows back, the window start up to burn_in
    # more, each limited to the leading run of live rows of the same chunk.
    back_max = pos % sequence_length + burn_in
    k = np.arange(int(sequence_length) + int(burn_in), dtype=np.int64)
    back_idx = (rows[:, None] - k) % cap
    live = (k <= back_max[:, None]) & (k <= age[:, None]) & (replay.segment_ids(back_idx) == seg[:, None])
    reach = np.cumprod(live, axis=1).sum(axis=1) - 1  # rows back that are live, >= 0 (k = 0 is the row itself)
    to_seq_start = np.minimum(pos % sequence_length, reach)
    back = np.minimum(to_seq_start + burn_in, reach)
    start = (rows - back) % cap
    width = int(sequence_length) + int(burn_in)
    idx, valid = replay.sequence_indices(start, width)
    valid = np.cumprod(valid, axis=1).astype(bool)
    offset = (back - to_seq_start)[:, None]  # where the sampled sequence starts in the window
    j = np.arange(width, dtype=np.int64)[None, :]
    train = valid & (j >= offset) & (j < offset + sequence_length)
    return SequenceWindows(idx, valid, train)
