"""Batch renormalization in critics' hidden layers (fast_sac's ``critic_batch_renorm``, CrossQ's critic).

Batch renormalization (Ioffe 2017, "Batch Renormalization", arXiv 1702.03275, Algorithm 1) normalizes each feature
of a layer's input with the statistics of the minibatch, corrected towards running averages:

```
mu_B, var_B   = mean and (biased) variance of x over the batch;  sigma_B = sqrt(var_B + eps)
sigma         = sqrt(running_var + eps)
r             = stop_gradient(clip(sigma_B / sigma, 1 / r_max, r_max))
d             = stop_gradient(clip((mu_B - running_mean) / sigma, -d_max, d_max))
x_hat         = (x - mu_B) / sigma_B * r + d            (r = 1, d = 0 during the warm-up: plain batch norm)
y             = scale * x_hat + bias                    (learned, per feature)
running_mean += momentum * (mu_B - running_mean);  running_var += momentum * (var_B - running_var)
```

With running statistics (``batch_stats=False``) ``x_hat = (x - running_mean) / sigma`` and nothing is updated.
CrossQ (Bhatt, Palenicek et al., ICLR 2024) puts such a layer before every linear layer of its critics (on the
input too) and runs the critics without target networks, the current and the next state-actions in one batch so
the statistics are those of both: ``sac.losses.sac_losses`` with ``joint_critic``.  r_max 3 and d_max 5 are the
values CrossQ's public code uses; the warm-up (plain batch norm for the first ``warmup_steps`` training passes)
replaces the paper's gradual relaxation of the clips, as CrossQ's code does.

The running statistics and the step counter are buffers, so they travel in ``state_dict`` and checkpoints and
``--resume`` continues from them exactly.  No branch depends on a tensor's value (the warm-up is a ``torch.where``),
so a whole compiled step traces it as one graph.
"""
from typing import Iterable, List, Tuple

from mlagents.torch_utils import nn, torch
from mlagents.trainers.torch_entities.layers import LinearEncoder

from mlagents_plugins.common.critic_norm import NormedSequential

#: CrossQ's clips of the renormalization factors (Ioffe 2017's r_max and d_max).
R_MAX = 3.0
D_MAX = 5.0
#: added to the variances (CrossQ's value; PyTorch's BatchNorm uses 1e-5).
EPS = 1.0e-3


class BatchRenorm(nn.Module):
    """One batch renormalization layer over the last dimension of a [B, F] input (module docstring).

    :param num_features: ``F``.  :param momentum: rate of the running averages (CrossQ: 0.01).
    :param warmup_steps: training passes with plain batch norm (r = 1, d = 0) before the running averages
        correct the batch statistics.
    """

    def __init__(self, num_features: int, momentum: float, warmup_steps: int):
        super().__init__()
        self.num_features = int(num_features)
        self.momentum = float(momentum)
        self.warmup_steps = int(warmup_steps)
        self.scale = nn.Parameter(torch.ones(self.num_features))
        self.bias = nn.Parameter(torch.zeros(self.num_features))
        self.register_buffer("running_mean", torch.zeros(self.num_features))
        self.register_buffer("running_var", torch.ones(self.num_features))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor, batch_stats: bool = False) -> torch.Tensor:
        """``x`` [B, F] normalized with the batch's statistics corrected towards the running ones, which are then
        updated (``batch_stats``), or with the running statistics alone (nothing updated)."""
        if x.dim() != 2 or x.shape[1] != self.num_features:
            raise ValueError(f"BatchRenorm expects [B, {self.num_features}], got {list(x.shape)}")
        sigma = torch.sqrt(self.running_var + EPS)
        if not batch_stats:
            x_hat = (x - self.running_mean) / sigma
        else:
            mu_b = x.mean(dim=0)
            var_b = (x - mu_b).square().mean(dim=0)
            sigma_b = torch.sqrt(var_b + EPS)
            with torch.no_grad():
                warm = self.steps >= self.warmup_steps
                r = torch.where(warm, (sigma_b / sigma).clamp(1.0 / R_MAX, R_MAX), torch.ones_like(sigma))
                d = torch.where(warm, ((mu_b - self.running_mean) / sigma).clamp(-D_MAX, D_MAX),
                                torch.zeros_like(sigma))
                self.running_mean.lerp_(mu_b.detach(), self.momentum)
                self.running_var.lerp_(var_b.detach(), self.momentum)
                self.steps.add_(1)
            x_hat = (x - mu_b) / sigma_b * r + d
        return x_hat * self.scale + self.bias

    def extra_repr(self) -> str:
        return f"{self.num_features}, momentum={self.momentum}, warmup_steps={self.warmup_steps}"


class RenormedSequential(NormedSequential):
    """A critic body's hidden layers (ML-Agents' ``LinearEncoder.seq_layers``: Linear, activation, ...) with a
    ``BatchRenorm`` before every linear layer and one after the last activation (before the value heads), CrossQ's
    placement.  The wrapped layers keep their names (``0``, ``1``, ...); the renormalization layers are the child
    ``renorm``.  ``layer_norm`` (``NormedSequential``) still applies after each linear layer when set."""

    def __init__(self, seq: nn.Sequential, momentum: float, warmup_steps: int):
        layers = [m for name, m in seq.named_children() if name != "renorm"]
        super().__init__(nn.Sequential(*layers), getattr(seq, "layer_norm", False))
        self._layers: List[nn.Module] = layers
        widths = [m.in_features for m in layers if isinstance(m, nn.Linear)]
        last = [m.out_features for m in layers if isinstance(m, nn.Linear)][-1]
        self.renorm = nn.ModuleList([BatchRenorm(w, momentum, warmup_steps) for w in widths + [last]])

    def forward(self, x: torch.Tensor, batch_stats: bool = False) -> torch.Tensor:
        norms = iter(self.renorm)
        for layer in self._layers:
            if isinstance(layer, nn.Linear):
                x = layer(next(norms)(x, batch_stats))
                if self.layer_norm:
                    x = nn.functional.layer_norm(x, (layer.out_features,))
            else:
                x = layer(x)
        return next(norms)(x, batch_stats)


def renorm_bodies(value_networks: Iterable[nn.Module], momentum: float, warmup_steps: int) -> List[RenormedSequential]:
    """Wrap each ML-Agents ``ValueNetwork``'s hidden layers in ``RenormedSequential``, in place; returns them.  A
    body with hypernetwork goal conditioning (no ``LinearEncoder``) is refused: its layers are generated per goal."""
    wrapped = []
    for q in value_networks:
        encoder = q.network_body._body_endoder
        if not isinstance(encoder, LinearEncoder):
            raise ValueError(
                "critic_batch_renorm needs the critics' plain hidden layers; it is not supported with hypernetwork "
                "goal conditioning (conditioning_type: hyper): use conditioning_type: none or critic_batch_renorm: false"
            )
        encoder.seq_layers = RenormedSequential(encoder.seq_layers, momentum, warmup_steps)
        wrapped.append(encoder.seq_layers)
    return wrapped


def renormed_forward(encoder: nn.Module, x: torch.Tensor, batch_stats: bool) -> Tuple[bool, torch.Tensor]:
    """``(True, encoder's hidden layers on x)`` with the renormalization mode ``batch_stats`` when ``encoder`` is a
    ``LinearEncoder`` over ``RenormedSequential``; ``(False, x)`` otherwise (the caller runs the encoder itself)."""
    seq = getattr(encoder, "seq_layers", None)
    if isinstance(encoder, LinearEncoder) and isinstance(seq, RenormedSequential):
        return True, seq(x, batch_stats)
    return False, x
