"""impala with ``network_settings.memory``: the recurrent actor-learner of the IMPALA paper (Espeholt et al. 2018).

* **Actor**: ML-Agents' ``TorchPolicy`` with the LSTM acts; each trajectory step carries the memory it acted from.
* **Sequences**: ML-Agents' ``sequence_length`` keeps its meaning, the length of the sequences trained with
  backpropagation through time.  Each piece (unroll) is replayed as consecutive sequences of ``s`` steps from its
  first step (``s`` = ``sequence_length`` capped at ``unroll_length``; the piece's last sequence may be shorter), and
  a piece keeps the memories stored at its sequence starts (``Piece.memory`` [S, M]): the actor's as it acted, and
  the separate critic's (``Piece.critic_memory``).  A sequence never crosses a piece boundary, and so never an
  episode end: an episode end is the last step of its piece, its bootstrap position right after it in the same
  sequence.  ``sequence_length >= unroll_length`` gives one sequence per piece.
* **Critic**: a separate critic (``shared_critic: false``) has its own LSTM; like built-in ppo, the trainer runs it
  over each agent's trajectory chunks as they arrive (its memory carried from chunk to chunk, zeros at an episode's
  start) and stores its memory at each sequence start.  With ``shared_critic: true`` the value heads share the
  policy's LSTM and its memory.
* **Learner**: replays every sequence from its stored memories (so the gradient stops at each sequence start): the
  policy over its ``s`` padded steps, the critic over ``s + 1`` positions, the last of which is used only in a
  piece's last sequence, for the bootstrap observation after the piece's last step (at position ``L - k s`` of
  sequence ``k``), so the bootstrap value carries that sequence's memory.  V-trace runs over the whole piece's values
  and bootstrap as without sequences.  Padding rows come after a sequence's steps, so they change nothing before
  them, and no loss reads them.
"""
from typing import List, NamedTuple, Optional, Tuple

import numpy as np
from mlagents.torch_utils import default_device, torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import TrainerSettings

from mlagents_plugins.common.tensor_utils import check_shape


class SequenceInputs(NamedTuple):
    """The learner's sequence view of a ``PieceBatch``: ``B`` pieces of at most ``T`` = ``unroll_length`` steps, each
    as ``K`` = ceil(T / s) sequences of ``s`` steps (``Q`` = B * K sequences), ``N`` real steps."""

    obs: List[torch.Tensor]  # per spec [Q * (s + 1), ...] sequence-major: its steps, padding, a piece's bootstrap obs
    continuous_action: torch.Tensor  # [Q * s, C]
    discrete_action: torch.Tensor  # [Q * s, K] (long)
    action_mask: torch.Tensor  # [Q * s, A] (padding rows: everything allowed)
    memory: torch.Tensor  # [1, Q, M] the actor's memory at each sequence's first step (zeros for empty sequences)
    critic_memory: torch.Tensor  # [1, Q, M] the critic's (the actor's with a shared critic)
    rows: torch.Tensor  # [N] long: b * T + t of each real step (step t of piece b), in the batch's real-row order
    actor_rows: torch.Tensor  # [N] long: q * s + t % s (q = b * K + t // s), the policy's output row, same order
    value_rows: torch.Tensor  # [N] long: q * (s + 1) + t % s, the critic's output row, same order
    bootstrap_rows: torch.Tensor  # [B] long: the critic's output row of each piece's bootstrap observation
    sequence_length: int  # s
    sequences: int  # Q


def effective_sequence_length(sequence_length: Optional[int], unroll_length: int) -> int:
    """Steps per learner sequence: ``sequence_length`` capped at ``unroll_length`` (a piece is at most that long);
    None (no memory settings given) = one sequence per piece."""
    return unroll_length if sequence_length is None else min(int(sequence_length), int(unroll_length))


def sequence_starts(n: int, unroll_length: int, sequence_length: int) -> List[List[int]]:
    """Per piece of a trajectory chunk of ``n`` steps, the chunk steps at which its sequences start: pieces start every
    ``unroll_length`` steps, and within a piece a sequence starts every ``sequence_length`` (<= unroll_length)."""
    return [list(range(p, min(p + unroll_length, n), sequence_length)) for p in range(0, n, unroll_length)]


def check_memory_settings(behavior_name: str, trainer_settings: TrainerSettings) -> None:
    """Refuse what a recurrent impala cannot honour, naming the field (``TrainerConfigError``); ML-Agents refuses an
    odd ``memory_size`` and a ``sequence_length`` above ``batch_size`` itself when it reads the YAML."""
    memory = trainer_settings.network_settings.memory
    if memory is None:
        return
    length = memory.sequence_length
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise TrainerConfigError(
            f"network_settings.memory.sequence_length = {length!r} for behavior '{behavior_name}': allowed: an integer "
            ">= 1 (the steps of each sequence the learner replays from a stored memory; one at or above "
            "hyperparameters.unroll_length replays every piece as one sequence)."
        )


def sequence_start_memories(critic, obs: List[np.ndarray], starts: List[int],
                            memory: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The critic's memory at each sequence start of one trajectory chunk and after its last step: the critic (an
    ML-Agents ``ValueNetwork`` with memory) run from ``memory`` [M] over the chunk's observations, start to start.

    :param obs: per spec ``[n, ...]``; ``starts``: the sequences' first steps, ascending, the first 0.
    :return: ``(memories [len(starts), M], memory after the chunk [M])``.
    """
    device = default_device()
    n = len(obs[0])
    m = torch.as_tensor(np.asarray(memory, np.float32), device=device).reshape(1, 1, -1)
    out = []
    with torch.no_grad():
        for start, end in zip(starts, list(starts[1:]) + [n]):
            out.append(m.reshape(-1).cpu().numpy().copy())
            inputs = [torch.as_tensor(o[start:end], device=device) for o in obs]
            _, m = critic.critic_pass(inputs, memories=m, sequence_length=end - start)
    return np.stack(out), m.reshape(-1).cpu().numpy()


def sequence_inputs(pieces, unroll_length: int, order: np.ndarray, piece_rows: np.ndarray) -> SequenceInputs:
    """``SequenceInputs`` of ``pieces`` (``make_batch``'s ``order``/``piece_rows``: the time-major real-row order)."""
    device = default_device()
    t_len, b_len = unroll_length, len(pieces)
    s_len = pieces[0].sequence_length or t_len
    if any((p.sequence_length or t_len) != s_len for p in pieces):
        raise ValueError(f"pieces cut with different sequence lengths: {sorted({p.sequence_length for p in pieces})}")
    k_len = -(-t_len // s_len)  # sequences per piece, ceil(T / s)
    q_len = b_len * k_len
    num_obs = len(pieces[0].obs)
    obs = []
    for i in range(num_obs):
        shape = pieces[0].obs[i].shape[1:]
        arr = np.zeros((b_len, k_len, s_len + 1) + shape, dtype=np.float32)
        for b, p in enumerate(pieces):
            t = np.arange(p.length)
            arr[b, t // s_len, t % s_len] = p.obs[i]
            last = (p.length - 1) // s_len  # the piece's last sequence holds its bootstrap observation
            arr[b, last, p.length - last * s_len] = p.bootstrap_obs[i]
        obs.append(torch.as_tensor(arr.reshape((q_len * (s_len + 1),) + shape), device=device))

    def padded(name: str, dtype, fill: float = 0.0) -> torch.Tensor:
        width = getattr(pieces[0], name).shape[1]
        arr = np.full((b_len, k_len * s_len, width), fill, dtype=np.float32)
        for b, p in enumerate(pieces):
            arr[b, : p.length] = getattr(p, name)
        return torch.as_tensor(arr.reshape(q_len * s_len, width), dtype=dtype, device=device)

    def stacked(name: str) -> np.ndarray:
        arr = np.zeros((b_len, k_len, pieces[0].memory.shape[-1]), dtype=np.float32)
        for b, p in enumerate(pieces):
            stored = np.asarray(getattr(p, name), np.float32).reshape(-1, arr.shape[-1])
            if len(stored) != -(-p.length // s_len):
                raise ValueError(f"a piece of {p.length} steps holds {len(stored)} {name} rows for sequences of "
                                 f"{s_len} steps")
            arr[b, : len(stored)] = stored
        return arr.reshape(1, q_len, -1)

    # real step t of piece b, in the batch's real-row order (time-major: row t * B + b sorted)
    b_of = (piece_rows[order] % b_len).astype(np.int64)
    t_of = (piece_rows[order] // b_len).astype(np.int64)
    q_of = b_of * k_len + t_of // s_len
    lengths = np.asarray([p.length for p in pieces], dtype=np.int64)
    last = (lengths - 1) // s_len
    memory = stacked("memory")
    critic = memory if pieces[0].critic_memory is None else stacked("critic_memory")
    return SequenceInputs(
        obs=obs,
        continuous_action=padded("continuous_action", torch.float32),
        discrete_action=padded("discrete_action", torch.long),
        action_mask=padded("action_mask", torch.float32, fill=1.0),
        memory=torch.as_tensor(memory, device=device),
        critic_memory=torch.as_tensor(critic, device=device),
        rows=torch.as_tensor(b_of * t_len + t_of, device=device),
        actor_rows=torch.as_tensor(q_of * s_len + t_of % s_len, device=device),
        value_rows=torch.as_tensor(q_of * (s_len + 1) + t_of % s_len, device=device),
        bootstrap_rows=torch.as_tensor((np.arange(b_len) * k_len + last) * (s_len + 1) + lengths - last * s_len,
                                       device=device),
        sequence_length=s_len,
        sequences=q_len,
    )


def actor_sequence_obs(seq: SequenceInputs) -> List[torch.Tensor]:
    """The policy's input: each sequence's ``s`` steps (the critic's ``s + 1`` positions without the last)."""
    out = []
    q_len, s_len = seq.sequences, seq.sequence_length
    for o in seq.obs:
        shaped = o.reshape((q_len, s_len + 1) + tuple(o.shape[1:]))
        out.append(shaped[:, :s_len].reshape((q_len * s_len,) + tuple(o.shape[1:])))
    return out


def check_memories(seq: SequenceInputs, memory_size: int) -> None:
    check_shape("memory", seq.memory, (1, seq.sequences, memory_size))
    check_shape("critic_memory", seq.critic_memory, (1, seq.sequences, memory_size))


def to_dict_rows(values, rows: torch.Tensor):
    """Per-stream outputs ``{name: [B * (T + 1)]}`` picked at ``rows``."""
    return {name: v.reshape(-1)[rows] for name, v in values.items()}
