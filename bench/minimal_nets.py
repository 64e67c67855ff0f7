"""Plain-PyTorch building blocks of the minimal update loops (``bench/minimal_*.py``).

Layer for layer what ML-Agents builds for our trainers: ``LinearEncoder`` = ``num_layers`` x (Linear, Swish),
Swish being ``x * sigmoid(x)`` (``nn.SiLU``); a Gaussian head = a mean layer plus a log-sigma layer (state
dependent) or a log-sigma parameter.  Nothing else: no observation encoder objects, no normalisers, no
dictionaries of reward streams.
"""
import math
from typing import List, Tuple

import numpy as np
import torch
from torch import nn

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)

#: How a minimal loop treats each hyperparameter of the shared off-policy settings.  Every minimal module
#: has a ``SETTINGS`` dict like this over its trainer's whole settings class, so a setting added later that
#: the loop does not know fails ``tests/bench/test_bench_update_speed.py`` instead of silently diverging.
FAST_CPU_MATMUL = "not applied: ours' optional oneDNN matmul kernels; the minimal loop is plain PyTorch"
OFFPOLICY_BASE_SETTINGS = {
    "batch_size": "rows/windows per update",
    "buffer_size": "no per-update work (the minimal store holds --rows rows)",
    "learning_rate": "Adam step size",
    "learning_rate_schedule": "no per-update work (constant in the minimal loop)",
    "buffer_init_steps": "no per-update work (update cadence)",
    "steps_per_update": "no per-update work (update cadence)",
    "reward_signal_steps_per_update": "no per-update work (extrinsic reward only)",
    "save_replay_buffer": "no per-update work (checkpointing)",
    "replay_storage": "no update work: where the replay rows live (the minimal store keeps them in memory)",
    "init_replay_from": "no per-update work (start-up)",
    "fast_cpu_matmul": FAST_CPU_MATMUL,
    "compile_update": "no work: how the same losses are executed (torch.compile); the minimal loop runs eagerly",
}


def swish_mlp(input_size: int, hidden: int, num_layers: int, output_size: int = 0, layer_norm: bool = False,
              relu: bool = False) -> nn.Sequential:
    """``num_layers`` (Linear, SiLU) blocks, then a Linear to ``output_size`` when it is > 0; with ``layer_norm``
    each block is (Linear, LayerNorm without scale and shift, SiLU), as fast_sac's ``critic_layer_norm``; with
    ``relu`` ReLU takes SiLU's place (fast_sac's ``network_activation: relu``)."""
    layers: List[nn.Module] = []
    size = input_size
    for _ in range(num_layers):
        layers.append(nn.Linear(size, hidden))
        if layer_norm:
            layers.append(nn.LayerNorm(hidden, elementwise_affine=False))
        layers.append(nn.ReLU() if relu else nn.SiLU())
        size = hidden
    if output_size > 0:
        layers.append(nn.Linear(size, output_size))
    return nn.Sequential(*layers)


def tanh_gaussian_sample(mu: torch.Tensor, log_sigma: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised ``a = tanh(mu + sigma * eps)`` and ``log pi(a)`` summed over action dimensions,
    with ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``."""
    std = log_sigma.clamp(-20.0, 2.0).exp()
    eps = torch.randn_like(mu)
    u = mu + std * eps
    log_normal = -0.5 * eps * eps - std.log() - LOG_SQRT_2PI
    log_det = 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))
    return torch.tanh(u), (log_normal - log_det).sum(-1)


def polyak_(online: nn.Module, target: nn.Module, tau: float) -> None:
    """``target <- target + tau (online - target)``, one multi-tensor op."""
    with torch.no_grad():
        torch._foreach_lerp_(list(target.parameters()), list(online.parameters()), tau)


def frozen_copy(net: nn.Module) -> nn.Module:
    import copy

    target = copy.deepcopy(net)
    target.requires_grad_(False)
    return target


class RowStore:
    """Random transition rows in numpy arrays, cut into episodes of ``episode_length`` rows (the minimal
    loops' replay buffer: sampling = numpy fancy indexing + ``torch.from_numpy``)."""

    def __init__(self, rows: int, obs_size: int, act_size: int, rng: np.random.Generator, episode_length: int = 64,
                 extra: Tuple[Tuple[str, int], ...] = ()):
        self.rows = rows
        self.rng = rng
        self.obs = rng.normal(size=(rows, obs_size)).astype(np.float32)
        self.next_obs = rng.normal(size=(rows, obs_size)).astype(np.float32)
        self.action = rng.uniform(-1, 1, (rows, act_size)).astype(np.float32)
        self.reward = rng.normal(size=rows).astype(np.float32)
        self.episode = np.arange(rows) // episode_length
        self.terminal = np.zeros(rows, np.float32)
        self.terminal[episode_length - 1::episode_length] = 1.0
        for name, width in extra:
            setattr(self, name, rng.uniform(-1, 1, (rows, width)).astype(np.float32))

    def windows(self, n: int, length: int) -> Tuple[np.ndarray, np.ndarray]:
        """``n`` uniform start rows and ``length`` consecutive rows each: (indices [n, L], valid [n, L]) where
        valid marks the leading rows of the start row's episode."""
        start = self.rng.integers(0, self.rows, n)
        idx = np.minimum(start[:, None] + np.arange(length), self.rows - 1)
        valid = np.cumprod(self.episode[idx] == self.episode[start][:, None], axis=1).astype(bool)
        return idx, valid


def t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x))
