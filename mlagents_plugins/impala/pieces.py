"""Trajectory -> fixed-length pieces (IMPALA's unrolls), the learner queue, and batching to tensors.

A piece is at most ``unroll_length`` consecutive steps of one agent that never cross an episode end;
it carries the observation after its last step (``bootstrap_obs``) so V-trace can bootstrap from it.
ML-Agents already cuts trajectories at episode ends and at ``time_horizon``, so a terminal or a
time-out can only be the last step of a trajectory and therefore of its last piece.
"""
import random
from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, List, NamedTuple, Optional

import numpy as np
from mlagents.torch_utils import torch, default_device
from mlagents.trainers.buffer import AgentBuffer, BufferKey, RewardSignalUtil
from mlagents.trainers.trajectory import ObsUtil

from mlagents_plugins.impala import recurrent
from mlagents_plugins.impala.recurrent import SequenceInputs, sequence_inputs

UNKNOWN_VERSION = -1  # acting-time policy version that could not be matched


@dataclass
class Piece:
    """One unroll of ``length`` steps (numpy, CPU)."""

    obs: List[np.ndarray]  # per observation spec, [L, *shape]
    bootstrap_obs: List[np.ndarray]  # per observation spec, [*shape]: the observation after the last step
    continuous_action: np.ndarray  # [L, continuous_size], as sampled (unclipped / squashed as the policy did)
    discrete_action: np.ndarray  # [L, num_branches]
    action_mask: np.ndarray  # [L, sum(branches)], 1 = allowed
    behaviour_log_probs: np.ndarray  # [L, K]: log mu per continuous dim then per branch, recorded at acting
    rewards: Dict[str, np.ndarray]  # reward stream -> [L], already multiplied by the signal's strength
    terminal: bool  # last step is a true episode end (not a time-out): no bootstrap
    acting_version: np.ndarray  # [L] policy version that chose each action (UNKNOWN_VERSION if unknown)
    source: Optional[AgentBuffer]  # the steps as an AgentBuffer, kept only for learned reward signals' updates
    uses: int = 0  # how many updates have consumed this piece
    # Recurrent policies (impala/recurrent.py): the learner replays the piece in consecutive sequences of
    # sequence_length steps (the last one shorter), each from the memories stored at its first step.
    memory: Optional[np.ndarray] = None  # [S, M] the actor's memory at steps 0, s, 2s, ... (S = ceil(length / s))
    critic_memory: Optional[np.ndarray] = None  # [S, M] the separate critic's memory at the same steps
    sequence_length: Optional[int] = None  # s: steps per sequence, at most unroll_length (None without memory)

    @property
    def length(self) -> int:
        return len(self.behaviour_log_probs)


def cut_trajectory(
    buffer: AgentBuffer,
    num_obs: int,
    terminal: bool,
    stream_names: List[str],
    acting_version: np.ndarray,
    unroll_length: int,
    keep_source: bool = False,
    critic_memories: Optional[np.ndarray] = None,
    sequence_length: Optional[int] = None,
) -> List[Piece]:
    """Cut one trajectory (``Trajectory.to_agentbuffer()`` with reward streams already filled in) into
    pieces of ``unroll_length`` steps; the last piece may be shorter and is the only one that can be
    ``terminal``.  A recurrent policy's buffer holds each step's memory: every piece keeps the memories of its
    sequence starts (``recurrent.sequence_starts``: its steps 0, s, 2s, ... with s = ``sequence_length`` capped at
    ``unroll_length``), and ``critic_memories`` [sequences, M] (the separate critic's at every sequence start of the
    trajectory, in order) when given."""
    n = buffer.num_experiences
    obs = [np.asarray(buffer[ObsUtil.get_name_at(i)].get_batch(), dtype=np.float32) for i in range(num_obs)]
    next_obs = [np.asarray(buffer[ObsUtil.get_name_at_next(i)].get_batch(), dtype=np.float32) for i in range(num_obs)]
    cont = np.asarray(buffer[BufferKey.CONTINUOUS_ACTION].get_batch(), dtype=np.float32).reshape(n, -1)
    disc = np.asarray(buffer[BufferKey.DISCRETE_ACTION].get_batch(), dtype=np.int64).reshape(n, -1)
    mask = np.asarray(buffer[BufferKey.ACTION_MASK].get_batch(), dtype=np.float32).reshape(n, -1)
    log_mu = np.concatenate(
        [
            np.asarray(buffer[BufferKey.CONTINUOUS_LOG_PROBS].get_batch(), dtype=np.float32).reshape(n, -1),
            np.asarray(buffer[BufferKey.DISCRETE_LOG_PROBS].get_batch(), dtype=np.float32).reshape(n, -1),
        ],
        axis=1,
    )
    rewards = {
        name: np.asarray(buffer[RewardSignalUtil.rewards_key(name)].get_batch(), dtype=np.float32)
        for name in stream_names
    }
    memories = None
    if BufferKey.MEMORY in buffer and len(buffer[BufferKey.MEMORY]) == n:
        memories = np.asarray(buffer[BufferKey.MEMORY].get_batch(), dtype=np.float32).reshape(n, -1)
    seq_len = None if memories is None else recurrent.effective_sequence_length(sequence_length, unroll_length)
    starts = recurrent.sequence_starts(n, unroll_length, seq_len) if memories is not None else None
    pieces = []
    first_sequence = 0  # index in the trajectory's sequence starts of this piece's first sequence
    for k, start in enumerate(range(0, n, unroll_length)):
        end = min(start + unroll_length, n)
        own = None if starts is None else slice(first_sequence, first_sequence + len(starts[k]))
        first_sequence += 0 if starts is None else len(starts[k])
        pieces.append(
            Piece(
                obs=[o[start:end] for o in obs],
                bootstrap_obs=[o[end - 1] for o in next_obs],
                continuous_action=cont[start:end],
                discrete_action=disc[start:end],
                action_mask=mask[start:end],
                behaviour_log_probs=log_mu[start:end],
                rewards={k: v[start:end] for k, v in rewards.items()},
                terminal=terminal and end == n,
                acting_version=np.asarray(acting_version[start:end], dtype=np.int64),
                source=buffer.make_mini_batch(start, end) if keep_source else None,
                memory=None if memories is None else memories[starts[k]],
                critic_memory=None if critic_memories is None else np.asarray(critic_memories[own], np.float32),
                sequence_length=seq_len,
            )
        )
    return pieces


class PieceBatch(NamedTuple):
    """``B`` pieces padded to ``T`` steps, on the torch device.  Per-step tensors are time-major ``[T, B]``.

    Network inputs (observations, actions, masks, behaviour log-probabilities) hold only the ``N`` real steps,
    in time-major order: their row ``i`` is row ``real_rows[i]`` = ``t * B + b`` of the padded ``[T * B]``
    layout.  Pieces end at episode ends, so with short episodes most of ``T * B`` is padding (3-step episodes
    and ``unroll_length`` 32: 9 of 10 rows); the learner's networks see only the real ones, and
    ``time_major`` puts their per-row outputs back into ``[T, B]`` (zero on padding, which every loss masks).
    """

    obs: List[torch.Tensor]  # per spec [N, *shape]
    bootstrap_obs: List[torch.Tensor]  # per spec [B, *shape]
    continuous_action: torch.Tensor  # [N, continuous_size]
    discrete_action: torch.Tensor  # [N, num_branches] (long)
    action_mask: torch.Tensor  # [N, sum(branches)]
    behaviour_log_probs: torch.Tensor  # [N, K]
    rewards: Dict[str, torch.Tensor]  # stream -> [T, B]
    terminal_t: torch.Tensor  # [T, B]: 1 at the last step of a terminal piece
    mask_t: torch.Tensor  # [T, B]: 1 on real steps
    real_rows: torch.Tensor  # [N] (long): row t * B + b of each real step, ascending
    acting_version: np.ndarray  # [number of real steps]
    # Recurrent policies: the pieces as sequences from their stored memories (impala/recurrent.py), else None.
    sequences: Optional[SequenceInputs] = None

    def time_major(self, x_n: torch.Tensor) -> torch.Tensor:
        """``[N]`` per-real-step values -> ``[T, B]``, zero on padding; differentiable in ``x_n``."""
        T, B = self.mask_t.shape
        if x_n.shape != self.real_rows.shape:
            raise ValueError(f"x_n must be [N] = {list(self.real_rows.shape)}, got shape {list(x_n.shape)}")
        return x_n.new_zeros(T * B).index_copy(0, self.real_rows, x_n).reshape(T, B)


def _pad_time_major(arrays: List[np.ndarray], T: int) -> np.ndarray:
    """Stack per-piece ``[L_b, ...]`` arrays into ``[T, B, ...]``, zero-padding each piece at its end."""
    B = len(arrays)
    out = np.zeros((T, B) + arrays[0].shape[1:], dtype=arrays[0].dtype)
    for b, a in enumerate(arrays):
        out[: len(a), b] = a
    return out


def make_batch(pieces: List[Piece], unroll_length: int) -> PieceBatch:
    T, B = unroll_length, len(pieces)
    device = default_device()
    # Real step t of piece b is row t * B + b; stacking the pieces one after another and sorting by that row
    # gives the time-major order of the real steps without building the padded arrays.
    piece_rows = np.concatenate([np.arange(p.length) * B + b for b, p in enumerate(pieces)])
    order = np.argsort(piece_rows, kind="stable")

    def real(arrays: List[np.ndarray], dtype=torch.float32) -> torch.Tensor:
        return torch.as_tensor(np.concatenate(arrays)[order], dtype=dtype, device=device)

    def tm(x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(x, dtype=torch.float32, device=device)

    mask = np.zeros((T, B), dtype=np.float32)
    terminal = np.zeros((T, B), dtype=np.float32)
    for b, p in enumerate(pieces):
        mask[: p.length, b] = 1.0
        terminal[p.length - 1, b] = float(p.terminal)
    num_obs = len(pieces[0].obs)
    return PieceBatch(
        obs=[real([p.obs[i] for p in pieces]) for i in range(num_obs)],
        bootstrap_obs=[
            torch.as_tensor(np.stack([p.bootstrap_obs[i] for p in pieces]), dtype=torch.float32, device=device)
            for i in range(num_obs)
        ],
        continuous_action=real([p.continuous_action for p in pieces]),
        discrete_action=real([p.discrete_action for p in pieces], dtype=torch.long),
        action_mask=real([p.action_mask for p in pieces]),
        behaviour_log_probs=real([p.behaviour_log_probs for p in pieces]),
        rewards={
            name: tm(_pad_time_major([p.rewards[name] for p in pieces], T)) for name in pieces[0].rewards
        },
        terminal_t=tm(terminal),
        mask_t=tm(mask),
        real_rows=torch.as_tensor(piece_rows[order], dtype=torch.long, device=device),
        acting_version=np.concatenate([p.acting_version for p in pieces]),
        sequences=None if pieces[0].memory is None else sequence_inputs(pieces, T, order, piece_rows),
    )


def merge_sources(pieces: List[Piece]) -> AgentBuffer:
    """The pieces' steps as one AgentBuffer (what mlagents' reward providers update from)."""
    merged = AgentBuffer()
    for p in pieces:
        if p.source is None:
            raise ValueError("pieces were cut without keep_source=True")
        p.source.resequence_and_append(merged, training_length=1)
    return merged


class PieceQueue:
    """Learner queue: fresh pieces in arrival order plus recently used ones that may be reused.

    Sizes count **steps**, as ML-Agents' ``batch_size`` and ``buffer_size`` do: a batch is the oldest fresh
    pieces until they hold at least ``batch_steps`` steps, however short the pieces are (pieces end at
    episode ends, so short episodes give short pieces; counting pieces would make such batches tiny).
    ``max_reuse`` bounds how many updates may consume a piece (DI-engine's ``max_use``); ``capacity`` bounds
    the steps held, dropping reusable pieces first, then the oldest fresh ones.
    """

    def __init__(self, capacity: int, max_reuse: int, seed: Optional[int] = None):
        self.capacity = capacity
        self.max_reuse = max_reuse
        self._fresh: Deque[Piece] = deque()
        self._reusable: Deque[Piece] = deque()
        self._rng = random.Random(seed)
        self.fresh_steps = 0  # steps in the fresh pieces
        self.reusable_steps = 0  # steps in the reusable pieces
        self.dropped = 0  # pieces discarded unused because the queue was full

    def __len__(self) -> int:
        return len(self._fresh) + len(self._reusable)

    @property
    def steps(self) -> int:
        return self.fresh_steps + self.reusable_steps

    def add(self, pieces: List[Piece]) -> None:
        self._fresh.extend(pieces)
        self.fresh_steps += sum(p.length for p in pieces)
        while self.steps > self.capacity:
            if self._reusable:
                self.reusable_steps -= self._reusable.popleft().length
            else:
                self.fresh_steps -= self._fresh.popleft().length
                self.dropped += 1

    def _mark_used(self, pieces: List[Piece]) -> None:
        for p in pieces:
            p.uses += 1
            if p.uses < self.max_reuse:
                self._reusable.append(p)
                self.reusable_steps += p.length

    def take_fresh(self, batch_steps: int) -> List[Piece]:
        """The oldest never-used pieces (the smallest policy lag first), until they hold ``batch_steps``
        steps or the fresh pieces run out."""
        batch: List[Piece] = []
        taken = 0
        while self._fresh and taken < batch_steps:
            batch.append(self._fresh.popleft())
            taken += batch[-1].length
        self.fresh_steps -= taken
        self._mark_used(batch)
        return batch

    def sample_reusable(self, batch_steps: int) -> List[Piece]:
        """Pieces drawn uniformly, without replacement, among those used fewer than max_reuse times, until
        they hold ``batch_steps`` steps; none when fewer steps than that are reusable."""
        if self.reusable_steps < batch_steps:
            return []
        order = list(range(len(self._reusable)))
        self._rng.shuffle(order)
        chosen_idx = set()
        taken = 0
        for i in order:
            if taken >= batch_steps:
                break
            chosen_idx.add(i)
            taken += self._reusable[i].length
        chosen = [p for i, p in enumerate(self._reusable) if i in chosen_idx]
        self._reusable = deque(p for i, p in enumerate(self._reusable) if i not in chosen_idx)
        self.reusable_steps -= taken
        self._mark_used(chosen)
        return chosen
