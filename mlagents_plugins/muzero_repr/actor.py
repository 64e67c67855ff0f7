"""The exported actor of muzero_repr: representation h and the RL head's policy as one module.

``MuZeroActor`` is ML-Agents' ``SimpleActor`` with its ``network_body`` replaced by ``LatentBody`` (h, then
an MLP on the latent), so ``TorchPolicy``, checkpoints and ONNX export (inputs ``obs_i``, ``action_masks``,
``recurrent_in``; outputs ``version_number``, ``memory_size``, ``continuous_actions``... of
``model_serialization.py``) work unchanged and a Unity build runs representation + actor as one graph.
"""
from typing import List, Optional, Tuple

from mlagents.torch_utils import nn, torch
from mlagents.trainers.buffer import AgentBuffer
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.layers import LinearEncoder
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import (
    ActionSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from mlagents_plugins.common.tensor_utils import polyak_update_, target_copy
from mlagents_plugins.muzero_repr.losses import LATENT_SCALING_MIN_MAX, LATENT_SCALINGS
from mlagents_plugins.muzero_repr.networks import Representation


def latent_observation_spec(latent_size: int) -> ObservationSpec:
    """The latent seen as a vector observation, so ML-Agents' networks (e.g. the SAC head's TwinQ) can take it."""
    return ObservationSpec((latent_size,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "muzero_latent")


class LatentBody(nn.Module):
    """Drop-in for ``NetworkBody``: h(obs) (detached unless the RL head may train it), then an MLP.

    With ``target_repr`` it also holds a target copy of h (``target_representation``, no gradient; moved only by
    the optimizer's refresh) and, with ``read_target``, the head reads that copy instead of h.  Two buffers are
    checkpointed with it: ``model_updates`` (the optimizer's count of model updates, so the refresh cadences
    continue on resume) and ``target_synced`` (0 until the copy was written from h once, so a checkpoint saved
    before the copy existed gets it from the loaded h: ``sync_target_after_load``); ``critic_gradient`` and
    ``latent_scaling_code`` record ``rl_gradient_to_repr`` and h's ``latent_scaling`` for resumed runs.
    """

    def __init__(
        self,
        representation: Representation,
        hidden_units: int,
        num_layers: int,
        rl_gradient_to_repr: bool,
        target_repr: bool = False,
        read_target: bool = False,
    ):
        super().__init__()
        if read_target and (rl_gradient_to_repr or not target_repr):
            raise ValueError("read_target needs target_repr and no RL gradient into h")
        self.representation = representation
        self.head = LinearEncoder(representation.latent_size, num_layers, hidden_units)
        self.rl_gradient_to_repr = rl_gradient_to_repr
        self.read_target = read_target
        self.h_size = hidden_units
        self.register_buffer("model_updates", torch.zeros((), dtype=torch.long))
        # Whether the critic's gradient trains h in this run (1) or not (0), checkpointed so that a resumed run keeps
        # it (MuZeroReprSettings.repr_gets_rl_gradient reads it from the checkpoint before the optimizer is built).
        self.register_buffer("critic_gradient", torch.tensor(int(rl_gradient_to_repr), dtype=torch.long))
        # h's latent scaling (LATENT_SCALINGS' index: 0 min_max, 1 tanh), checkpointed for the same reason.
        self.register_buffer("latent_scaling_code",
                             torch.tensor(LATENT_SCALINGS.index(representation.scaling), dtype=torch.long))
        self.target_representation: Optional[Representation] = None
        if target_repr:
            self.target_representation = target_copy(representation)
            self.register_buffer("target_synced", torch.zeros((), dtype=torch.long))

    def refresh_target(self, tau: float) -> None:
        """Target copy of h <- (1 - tau) copy + tau h (weights); its buffers (the observation normaliser's
        statistics) copied.  A no-op without a target copy."""
        if self.target_representation is None:
            return
        polyak_update_(list(self.representation.parameters()), list(self.target_representation.parameters()), tau)
        with torch.no_grad():
            for b_target, b in zip(self.target_representation.buffers(), self.representation.buffers()):
                b_target.copy_(b)
            self.target_synced.fill_(1)

    def sync_target_after_load(self) -> bool:
        """After a checkpoint load: a target copy never written from h (``target_synced`` 0: a fresh start, or a
        checkpoint saved before the copy existed) becomes an exact copy of h.  Returns whether it copied."""
        if self.target_representation is None or int(self.target_synced) != 0:
            return False
        self.refresh_target(1.0)
        return True

    def head_latent(self, inputs: List[torch.Tensor]) -> torch.Tensor:
        """The latent the head reads, without gradient: the target copy's with ``read_target``, else h's."""
        with torch.no_grad():
            source = self.target_representation if self.read_target else self.representation
            return source(inputs)

    @property
    def memory_size(self) -> int:
        return 0

    def update_normalization(self, buffer: AgentBuffer) -> None:
        self.representation.update_normalization(buffer)

    def latent(self, inputs: List[torch.Tensor]) -> torch.Tensor:
        if self.read_target:
            return self.head_latent(inputs)
        z = self.representation(inputs)
        return z if self.rl_gradient_to_repr else z.detach()

    def forward(
        self,
        inputs: List[torch.Tensor],
        actions: Optional[torch.Tensor] = None,
        memories: Optional[torch.Tensor] = None,
        sequence_length: int = 1,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        return self.head(self.latent(inputs)), memories


class MuZeroActor(SimpleActor):
    """``SimpleActor`` (tanh-squashed, state-dependent sigma, as SAC) whose body is ``LatentBody``."""

    def __init__(
        self,
        observation_specs: List[ObservationSpec],
        network_settings: NetworkSettings,
        action_spec: ActionSpec,
        latent_size: int = 64,
        head_hidden_units: int = 128,
        head_num_layers: int = 2,
        rl_gradient_to_repr: bool = False,
        conditional_sigma: bool = True,
        tanh_squash: bool = True,
        target_repr: bool = False,
        read_target: bool = False,
        latent_scaling: str = LATENT_SCALING_MIN_MAX,
    ):
        head_settings = NetworkSettings(
            hidden_units=head_hidden_units, num_layers=head_num_layers, deterministic=network_settings.deterministic
        )
        # SimpleActor builds its body from the specs it is given: pass the small latent spec so that no
        # throw-away visual encoder is built, then install the real body.
        super().__init__(
            [latent_observation_spec(latent_size)], head_settings, action_spec, conditional_sigma, tanh_squash
        )
        representation = Representation(observation_specs, network_settings, latent_size, latent_scaling)
        self.network_body = LatentBody(
            representation, head_hidden_units, head_num_layers, rl_gradient_to_repr, target_repr, read_target
        )

    @property
    def representation(self) -> Representation:
        return self.network_body.representation

    def head_parameters(self) -> List[nn.Parameter]:
        """Parameters of the RL policy on top of the latent (not of h)."""
        return list(self.network_body.head.parameters()) + list(self.action_model.parameters())
