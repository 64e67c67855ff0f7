"""Layer normalization in critics' hidden layers (``critic_layer_norm`` of fast_sac, muzero_repr's SAC head and taac),
the small initialization of critics' output layers (``critic_small_init``: ``init_outputs_small_``) and the
action-neutral initialization (``critic_neutral_init``: ``init_action_neutral_``).

Layer normalization (Ba et al. 2016) without learned scale or shift after each hidden linear layer of a critic's
``NetworkBody`` (before its activation), as in DroQ (Hiraoka et al. 2022) and RLPD (Ball et al. 2023); the SAC
and TAAC papers have none.  It adds no parameters, so ``state_dict`` keys and Adam's groups are ML-Agents' own and a
checkpoint of either kind loads into the same module.  Whether it is on is saved with the weights (extra state);
a checkpoint written without that entry was trained without it, so loading one switches it off, with a warning.
"""
from typing import Any, Iterable, List, Sequence

from mlagents.torch_utils import nn, torch
from mlagents.trainers.torch_entities.layers import LinearEncoder
from mlagents_envs import logging_util

logger = logging_util.get_logger(__name__)


#: the narrowest critic hidden layer that ``critic_layer_norm: null`` normalizes.  On ML-Agents' tiny learning tasks
#: (one layer of 16 units) the normalization costs fast_sac's camera case and taac's entity case (0-1 of 3 seeds
#: pass, 3 of 3 without it); the studies that made it a default ran 64 to 256 units
#: (bench/results/tiny-grid-2026-11-28, fast-sac-critic-layer-norm-2026-11-26, taac-critic-layer-norm-2026-11-27).
LAYER_NORM_MIN_UNITS = 64


def layer_norm_by_default(hidden_units: int, num_branches: int = 0) -> bool:
    """What ``critic_layer_norm: null`` resolves to: on for critics of at least ``LAYER_NORM_MIN_UNITS`` units a
    hidden layer without discrete branches (with branches it made fast_sac fall), else off."""
    return num_branches == 0 and int(hidden_units) >= LAYER_NORM_MIN_UNITS


#: bound of the uniform initialization of critics' output layers by ``init_outputs_small_`` (DDPG's final-layer
#: initialization, Lillicrap et al. 2016, Sec. 7: initial Q values near zero, so near-zero slopes in the actions)
SMALL_OUTPUT_INIT = 3.0e-3


def init_outputs_small_(value_networks: Iterable[nn.Module]) -> None:
    """Draw the weights and biases of each ML-Agents ``ValueNetwork``'s output layers (``value_heads``) from
    U(-``SMALL_OUTPUT_INIT``, ``SMALL_OUTPUT_INIT``), in place; the hidden layers keep ML-Agents' initialization.
    A fresh critic then has Q values near 0 for every action and no random slope in the actions for an actor to
    follow before the rewards have shaped one (bench/results/tiny-fixes-2026-11-28)."""
    with torch.no_grad():
        for q in value_networks:
            for p in q.value_heads.parameters():
                p.uniform_(-SMALL_OUTPUT_INIT, SMALL_OUTPUT_INIT)


def init_action_neutral_(value_networks: Iterable[nn.Module], act_size: int, branches: Sequence[int] = ()) -> None:
    """Start each ML-Agents ``ValueNetwork`` indifferent between actions, in place (``critic_neutral_init``): the
    weights of the first linear layer of its body on the ``act_size`` action inputs (the last columns: ML-Agents
    appends the actions to the observation encoding) are set to 0, and the output rows of every discrete branch
    (``branches``: sizes, in order, of each value head's outputs) are set equal to the branch's first row.  So a
    fresh critic's Q does not depend on the action, while everything else keeps ML-Agents' initialization (unlike
    ``init_outputs_small_``, the output scale and the observation features are unchanged).  The zeroed weights still
    get gradients (``action x error``), so the slopes are learned from the data."""
    with torch.no_grad():
        for q in value_networks:
            if act_size:
                first = next(m for m in q.network_body._body_endoder.modules() if isinstance(m, nn.Linear))
                first.weight[:, first.in_features - act_size:] = 0.0
            start = 0
            for size in branches:
                for head in q.value_heads.value_heads.values():
                    head.weight[start + 1:start + size] = head.weight[start]
                    head.bias[start + 1:start + size] = head.bias[start]
                start += size


class NormedSequential(nn.Sequential):
    """ML-Agents' ``LinearEncoder.seq_layers`` with, when ``layer_norm`` is set, a layer normalization without
    learned scale or shift after every ``nn.Linear`` (before its activation).  The children and their names are
    those of the wrapped ``Sequential``, so the ``state_dict`` is unchanged."""

    def __init__(self, seq: nn.Sequential, layer_norm: bool):
        super().__init__(*seq)
        self.layer_norm = bool(layer_norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self:
            x = layer(x)
            if self.layer_norm and isinstance(layer, nn.Linear):
                x = nn.functional.layer_norm(x, (layer.out_features,))
        return x


class LayerNormedCritics(nn.Module):
    """Base of a module holding critics (ML-Agents ``ValueNetwork``s): ``_normalize_bodies`` wraps each body's
    hidden layers in ``NormedSequential`` (bodies with hypernetwork goal conditioning have none); ``layer_norm``
    reads and switches it; the setting travels in ``state_dict`` as extra state."""

    def _normalize_bodies(self, value_networks: Iterable[nn.Module], layer_norm: bool) -> None:
        self._normed: List[NormedSequential] = []
        for q in value_networks:
            encoder = q.network_body._body_endoder
            if isinstance(encoder, LinearEncoder):
                encoder.seq_layers = NormedSequential(encoder.seq_layers, layer_norm)
                self._normed.append(encoder.seq_layers)
        self._register_load_state_dict_pre_hook(self._before_load)

    @property
    def layer_norm(self) -> bool:
        return any(seq.layer_norm for seq in self._normed)

    @layer_norm.setter
    def layer_norm(self, on: bool) -> None:
        for seq in self._normed:
            seq.layer_norm = bool(on)

    def normed_linears(self) -> List[nn.Linear]:
        """The hidden linear layers a layer normalization follows (none while ``layer_norm`` is off)."""
        return [layer for seq in self._normed if seq.layer_norm for layer in seq if isinstance(layer, nn.Linear)]

    def get_extra_state(self) -> torch.Tensor:
        # A tensor (1.0 = on) on the critics' device, not a dict: tracing for the ONNX export (taac's exported actor
        # holds its critics) takes every state_dict entry as a tensor, and checkpoints keep each tensor's device.
        device = next(self.parameters()).device
        return torch.tensor(1.0 if self.layer_norm else 0.0, device=device)

    def set_extra_state(self, state: Any) -> None:
        # A dict {"layer_norm": bool} in checkpoints written before the tensor form.
        saved = bool(state.get("layer_norm", False)) if isinstance(state, dict) else bool(float(state) > 0.5)
        if saved != self.layer_norm:
            logger.warning(
                f"The critics' checkpoint was trained with critic_layer_norm={str(saved).lower()}; they go on that "
                f"way (the setting {str(self.layer_norm).lower()} applies to new runs)."
            )
        self.layer_norm = saved

    def _before_load(self, state_dict, prefix, *args) -> None:
        if prefix + "_extra_state" not in state_dict and self.layer_norm and any(k.startswith(prefix) for k in state_dict):
            logger.warning(
                "The critics' checkpoint was written before critic_layer_norm existed (trained without it); "
                "they go on without layer normalization."
            )
            self.layer_norm = False


class WeightProjection:
    """Rescales each of ``layers`` (linear layers a layer normalization follows) so its weights and bias together
    have the norm sqrt(out_features), the expected norm of ML-Agents' initialization (weights of std
    1/sqrt(fan_in), bias 0): NaP's projection (Lyle et al. 2024), XQC's weight normalization (Palenicek et al.
    2025).  The normalization after each layer makes the network's function blind to the scale, so a projection
    changes no output; it stops the weights' norm from growing, which would shrink Adam's relative steps."""

    def __init__(self, layers: Sequence[nn.Linear]):
        # per layer: its parameters (weight, and bias where it has one) and its target norm
        self.groups: List[List[torch.Tensor]] = [
            [p for p in (layer.weight, layer.bias) if p is not None] for layer in layers
        ]
        self.targets: List[float] = [float(layer.out_features) ** 0.5 for layer in layers]
        self.params: List[torch.Tensor] = [p for group in self.groups for p in group]

    def __len__(self) -> int:
        return len(self.targets)

    @torch.no_grad()
    def project_(self) -> None:
        if not self.params:
            return
        norms = iter(torch._foreach_norm(self.params))
        scales: List[torch.Tensor] = []
        for group, target in zip(self.groups, self.targets):
            layer_norm = torch.stack([next(norms) for _ in group]).norm()  # of weight and bias together
            scales.extend([target / layer_norm.clamp_min(1e-12)] * len(group))
        torch._foreach_mul_(self.params, scales)
