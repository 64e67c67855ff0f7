"""The activation of a trainer's hidden layers and the initialization of its linear layers (fast_sac's
``network_activation`` and ``network_init``).

ML-Agents builds every network with Swish (``x * sigmoid(x)``) after each hidden linear layer and draws those
layers' weights from a normal distribution of standard deviation ``1 / sqrt(fan_in)`` (its
``Initialization.KaimingHeNormal`` with a linear gain), biases 0, the action heads scaled by 0.2.  The SAC of the
papers and of Stable-Baselines3 uses ReLU and PyTorch's default initialization of ``nn.Linear`` (weights and biases
uniform in ``+-1 / sqrt(fan_in)``: a standard deviation ``sqrt(3)`` times smaller for the weights, and biases that
are not 0).  ``NetworkRecipe`` switches a module, in place,
to either: the layers, their names and the ``state_dict`` keys stay ML-Agents' own, so checkpoints of either kind
load into the same module, and the exported actor stays a plain MLP (``Relu`` nodes instead of ``Mul(x,
Sigmoid(x))``).

The activation is not saved with the weights: resume a run with the setting it was trained with.
"""
from typing import ClassVar, Tuple

import attr

from mlagents.torch_utils import nn

from mlagents_plugins.common.fast_kernels import replace_swish_

SWISH = "swish"
RELU = "relu"
MLAGENTS = "mlagents"
TORCH = "torch"


@attr.s(frozen=True, auto_attribs=True)
class NetworkRecipe:
    """``activation``: ``"swish"`` (ML-Agents') or ``"relu"``; ``init``: ``"mlagents"`` (ML-Agents' scaled normal) or
    ``"torch"`` (PyTorch's default of every ``nn.Linear``)."""

    ACTIVATIONS: ClassVar[Tuple[str, ...]] = (SWISH, RELU)
    INITS: ClassVar[Tuple[str, ...]] = (MLAGENTS, TORCH)

    activation: str = SWISH
    init: str = MLAGENTS

    def __attrs_post_init__(self) -> None:
        if self.activation not in self.ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r}: one of {', '.join(self.ACTIVATIONS)}")
        if self.init not in self.INITS:
            raise ValueError(f"init {self.init!r}: one of {', '.join(self.INITS)}")

    def apply_(self, module: nn.Module) -> nn.Module:
        """Switch ``module`` to this recipe, in place, and return it.  Call it on a freshly built network, before any
        initialization of its own that it should keep (a critic's small or action-neutral output layers) and before
        ``fast_kernels.fuse_swish_`` (which then finds no Swish to fuse under ``relu``)."""
        if self.init == TORCH:
            for layer in module.modules():
                if isinstance(layer, nn.Linear):
                    layer.reset_parameters()
        if self.activation == RELU:
            replace_swish_(module, nn.ReLU)
        return module

