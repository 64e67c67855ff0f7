"""impala with ``network_settings.memory``: the recurrent actor-learner of the IMPALA paper (Espeholt et al. 2018).

* **Actor**: ML-Agents' ``TorchPolicy`` with the LSTM acts; each trajectory step carries the memory it acted from.
  A piece (unroll) keeps the memory of its first step (``Piece.memory``): that is what travels with the unroll.
* **Critic**: a separate critic (``shared_critic: false``) has its own LSTM; like built-in ppo, the trainer runs it
  over each agent's trajectory chunks as they arrive (its memory carried from chunk to chunk, zeros at an episode's
  start) and stores its memory at each piece's start (``Piece.critic_memory``).  With ``shared_critic: true`` the
  value heads share the policy's LSTM and its memory.
* **Learner**: replays every piece from its stored memories as one sequence: the policy over the piece's ``T``
  padded steps, the critic over ``T + 1`` positions whose position ``L`` (after the piece's last real step) holds the
  bootstrap observation, so the bootstrap value carries the memory of the whole piece.  Padding rows come after a
  piece's steps, so they change nothing before them, and every loss masks them; V-trace is unchanged.
"""
from typing import List, NamedTuple, Tuple

import numpy as np
from mlagents.torch_utils import default_device, torch

from mlagents_plugins.common.tensor_utils import check_shape


class SequenceInputs(NamedTuple):
    """The learner's sequence view of a ``PieceBatch`` (``B`` pieces, ``T`` = ``unroll_length``, ``N`` real steps)."""

    obs: List[torch.Tensor]  # per spec [B * (T + 1), ...] batch-major: each piece's steps, its bootstrap obs, zeros
    continuous_action: torch.Tensor  # [B * T, C]
    discrete_action: torch.Tensor  # [B * T, K] (long)
    action_mask: torch.Tensor  # [B * T, A] (padding rows: everything allowed)
    memory: torch.Tensor  # [1, B, M] the actor's memory at each piece's first step
    critic_memory: torch.Tensor  # [1, B, M] the critic's (the actor's with a shared critic)
    rows: torch.Tensor  # [N] long: b * T + t of each real step, in the batch's real-row order
    value_rows: torch.Tensor  # [N] long: b * (T + 1) + t of each real step, in the same order
    bootstrap_rows: torch.Tensor  # [B] long: b * (T + 1) + L_b, the bootstrap position of each piece


def piece_start_memories(critic, obs: List[np.ndarray], starts: List[int], lengths: List[int],
                         memory: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The critic's memory at each piece start of one trajectory chunk and after its last step: the critic (an
    ML-Agents ``ValueNetwork`` with memory) run from ``memory`` [M] over the chunk's observations, piece by piece.

    :param obs: per spec ``[n, ...]``; ``starts``/``lengths``: the pieces' first steps and lengths.
    :return: ``(memories [P, M], memory after the chunk [M])``.
    """
    device = default_device()
    m = torch.as_tensor(np.asarray(memory, np.float32), device=device).reshape(1, 1, -1)
    out = []
    with torch.no_grad():
        for start, length in zip(starts, lengths):
            out.append(m.reshape(-1).cpu().numpy().copy())
            inputs = [torch.as_tensor(o[start:start + length], device=device) for o in obs]
            _, m = critic.critic_pass(inputs, memories=m, sequence_length=length)
    return np.stack(out), m.reshape(-1).cpu().numpy()


def sequence_inputs(pieces, unroll_length: int, order: np.ndarray, piece_rows: np.ndarray) -> SequenceInputs:
    """``SequenceInputs`` of ``pieces`` (``make_batch``'s ``order``/``piece_rows``: the time-major real-row order)."""
    device = default_device()
    t_len, b_len = unroll_length, len(pieces)
    lengths = np.asarray([p.length for p in pieces], dtype=np.int64)
    num_obs = len(pieces[0].obs)
    obs = []
    for i in range(num_obs):
        shape = pieces[0].obs[i].shape[1:]
        arr = np.zeros((b_len, t_len + 1) + shape, dtype=np.float32)
        for b, p in enumerate(pieces):
            arr[b, : p.length] = p.obs[i]
            arr[b, p.length] = p.bootstrap_obs[i]
        obs.append(torch.as_tensor(arr.reshape((b_len * (t_len + 1),) + shape), device=device))

    def padded(name: str, dtype, fill: float = 0.0) -> torch.Tensor:
        width = getattr(pieces[0], name).shape[1]
        arr = np.full((b_len, t_len, width), fill, dtype=np.float32)
        for b, p in enumerate(pieces):
            arr[b, : p.length] = getattr(p, name)
        return torch.as_tensor(arr.reshape(b_len * t_len, width), dtype=dtype, device=device)

    # real step t of piece b, in the batch's real-row order (time-major: row t * B + b sorted)
    b_of = (piece_rows[order] % b_len).astype(np.int64)
    t_of = (piece_rows[order] // b_len).astype(np.int64)
    memory = np.stack([p.memory for p in pieces]).astype(np.float32)
    critic = memory if pieces[0].critic_memory is None else np.stack([p.critic_memory for p in pieces])
    return SequenceInputs(
        obs=obs,
        continuous_action=padded("continuous_action", torch.float32),
        discrete_action=padded("discrete_action", torch.long),
        action_mask=padded("action_mask", torch.float32, fill=1.0),
        memory=torch.as_tensor(memory[None], device=device),
        critic_memory=torch.as_tensor(np.asarray(critic, np.float32)[None], device=device),
        rows=torch.as_tensor(b_of * t_len + t_of, device=device),
        value_rows=torch.as_tensor(b_of * (t_len + 1) + t_of, device=device),
        bootstrap_rows=torch.as_tensor(np.arange(b_len) * (t_len + 1) + lengths, device=device),
    )


def actor_sequence_obs(seq: SequenceInputs, pieces: int, unroll_length: int) -> List[torch.Tensor]:
    """The policy's input: each piece's ``T`` steps (the critic's ``T + 1`` positions without the last)."""
    out = []
    for o in seq.obs:
        shaped = o.reshape((pieces, unroll_length + 1) + tuple(o.shape[1:]))
        out.append(shaped[:, :unroll_length].reshape((pieces * unroll_length,) + tuple(o.shape[1:])))
    return out


def check_memories(seq: SequenceInputs, pieces: int, memory_size: int) -> None:
    check_shape("memory", seq.memory, (1, pieces, memory_size))
    check_shape("critic_memory", seq.critic_memory, (1, pieces, memory_size))


def to_dict_rows(values, rows: torch.Tensor):
    """Per-stream outputs ``{name: [B * (T + 1)]}`` picked at ``rows``."""
    return {name: v.reshape(-1)[rows] for name, v in values.items()}
