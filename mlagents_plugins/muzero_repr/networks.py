"""The learned model of muzero_repr: representation h, dynamics g, prediction f (+ optional heads).

MuZero (arXiv 1911.08265) Sec. 3 / Appendix B: s_0 = h(o_t); (r_k, s_k) = g(s_{k-1}, a_{k-1});
(p_k, v_k) = f(s_k).  The representation is built on ML-Agents' ``NetworkBody`` so vector and visual
observations (and observation normalisation) work as for any ML-Agents policy; its output is projected to
``latent_size`` and bounded, as is every dynamics output: min-max scaled to [0, 1] per sample (Appendix G) or
squashed by tanh (``latent_scaling``, ``losses.scale_latent``).
"""
from typing import List, NamedTuple, Optional

from mlagents.torch_utils import nn, torch
from mlagents.trainers.buffer import AgentBuffer
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.layers import LinearEncoder, linear_layer
from mlagents_envs.base_env import ActionSpec, ObservationSpec

from mlagents.trainers.torch_entities.networks import NetworkBody

from mlagents_plugins.muzero_repr.losses import LATENT_SCALING_MIN_MAX, scale_gradient, scale_latent


def mlp(input_size: int, hidden: int, num_layers: int, output_size: int) -> nn.Module:
    """``num_layers`` Swish hidden layers (ML-Agents' LinearEncoder) then a linear output layer."""
    if num_layers < 1:
        return linear_layer(input_size, output_size)
    return nn.Sequential(LinearEncoder(input_size, num_layers, hidden), linear_layer(hidden, output_size))


def encode_actions(action_spec: ActionSpec, continuous: Optional[torch.Tensor], discrete: Optional[torch.Tensor]) -> torch.Tensor:
    """Flat action vector fed to the dynamics: continuous part clipped to [-1, 1], one-hot discrete branches."""
    parts: List[torch.Tensor] = []
    if action_spec.continuous_size > 0:
        parts.append(torch.clamp(continuous, -1.0, 1.0))
    if action_spec.discrete_size > 0:
        for b, n in enumerate(action_spec.discrete_branches):
            parts.append(nn.functional.one_hot(discrete[..., b].long(), n).float())
    return torch.cat(parts, dim=-1)


def encoded_action_size(action_spec: ActionSpec) -> int:
    return action_spec.continuous_size + sum(action_spec.discrete_branches)


def scalar_head_size(support_size: int) -> int:
    """Outputs of a value/reward head: one scalar, or logits over 2S+1 atoms."""
    return 1 if support_size == 0 else 2 * support_size + 1


def squeeze_scalar_head(out: torch.Tensor, support_size: int) -> torch.Tensor:
    return out.squeeze(-1) if support_size == 0 else out


class Representation(nn.Module):
    """h: observations -> latent [B, latent_size], bounded by ``scaling`` (``losses.scale_latent``)."""

    def __init__(self, observation_specs: List[ObservationSpec], network_settings: NetworkSettings, latent_size: int,
                 scaling: str = LATENT_SCALING_MIN_MAX):
        super().__init__()
        self.body = NetworkBody(observation_specs, network_settings)
        self.out = linear_layer(network_settings.hidden_units, latent_size)
        self.latent_size = latent_size
        self.scaling = scaling

    def update_normalization(self, buffer: AgentBuffer) -> None:
        self.body.update_normalization(buffer)

    def forward(self, inputs: List[torch.Tensor]) -> torch.Tensor:
        encoding, _ = self.body(inputs)
        return scale_latent(self.out(encoding), self.scaling)


class ModelOutput(NamedTuple):
    latent: torch.Tensor  # [B, latent_size]
    value: torch.Tensor  # [B] or [B, 2S+1] (h-space scalar or logits)
    policy: torch.Tensor  # [B, continuous_size + sum(discrete_branches)]: tanh means, then branch logits
    reward: Optional[torch.Tensor]  # [B] or [B, 2S+1]; None for the initial inference
    game_over_logit: Optional[torch.Tensor]  # [B] or None when the head is off


class UnrollOutput(NamedTuple):
    """The unroll's predictions stacked over its steps (``MuZeroModel.unroll_stacked``)."""

    latent_k: torch.Tensor  # [B, K+1, latent_size]: s_0 = h(o), s_k = g(s_{k-1}, a_{k-1})
    value_k: torch.Tensor  # [B, K+1] or [B, K+1, 2S+1]
    policy_k: torch.Tensor  # [B, K+1, continuous_size + sum(discrete_branches)]
    reward_k: Optional[torch.Tensor]  # [B, K] or [B, K, 2S+1] (steps 1..K); None when K = 0
    game_over_logit_k: Optional[torch.Tensor]  # [B, K+1] or None when the head is off


class MuZeroModel(nn.Module):
    """h, g, f and the optional game-over / consistency heads of one behaviour."""

    def __init__(
        self,
        observation_specs: List[ObservationSpec],
        action_spec: ActionSpec,
        network_settings: NetworkSettings,
        latent_size: int,
        hidden_units: int,
        num_layers: int,
        support_size: int,
        game_over_head: bool,
        consistency_head: bool,
        representation: Optional[Representation] = None,
        latent_scaling: str = LATENT_SCALING_MIN_MAX,
    ):
        """``representation``: share an existing h (the actor's, so the exported policy contains it); the dynamics
        bound their latents as it does (``Representation.scaling``)."""
        super().__init__()
        self.action_spec = action_spec
        self.support_size = support_size
        self.latent_size = latent_size
        if representation is None:
            representation = Representation(observation_specs, network_settings, latent_size, latent_scaling)
        if representation.latent_size != latent_size:
            raise ValueError(f"representation latent size {representation.latent_size} != {latent_size}")
        self.representation = representation
        self.scaling = representation.scaling
        a_size = encoded_action_size(action_spec)
        self.dynamics_trunk = LinearEncoder(latent_size + a_size, num_layers, hidden_units)
        self.dynamics_latent = linear_layer(hidden_units, latent_size)
        self.dynamics_reward = linear_layer(hidden_units, scalar_head_size(support_size))
        self.prediction_trunk = LinearEncoder(latent_size, num_layers, hidden_units)
        self.prediction_value = linear_layer(hidden_units, scalar_head_size(support_size))
        self.prediction_policy = linear_layer(hidden_units, a_size)
        self.game_over = mlp(latent_size, hidden_units, 1, 1) if game_over_head else None
        # EfficientZero Sec. 3.1: projector on both branches, predictor on the online branch only.
        if consistency_head:
            self.projector = mlp(latent_size, hidden_units, 1, hidden_units)
            self.predictor = mlp(hidden_units, hidden_units, 1, hidden_units)
        else:
            self.projector = None
            self.predictor = None

    def _predict(self, latent: torch.Tensor, reward: Optional[torch.Tensor]) -> ModelOutput:
        h = self.prediction_trunk(latent)
        policy = self.prediction_policy(h)
        if self.action_spec.continuous_size > 0:
            c = self.action_spec.continuous_size
            policy = torch.cat([torch.tanh(policy[:, :c]), policy[:, c:]], dim=1)
        game_over = self.game_over(latent).squeeze(-1) if self.game_over is not None else None
        return ModelOutput(
            latent=latent,
            value=squeeze_scalar_head(self.prediction_value(h), self.support_size),
            policy=policy,
            reward=reward,
            game_over_logit=game_over,
        )

    def initial_inference(self, inputs: List[torch.Tensor]) -> ModelOutput:
        return self._predict(self.representation(inputs), None)

    def recurrent_inference(self, latent: torch.Tensor, action_enc: torch.Tensor) -> ModelOutput:
        h = self.dynamics_trunk(torch.cat([latent, action_enc], dim=-1))
        next_latent = scale_latent(self.dynamics_latent(h), self.scaling)
        reward = squeeze_scalar_head(self.dynamics_reward(h), self.support_size)
        return self._predict(next_latent, reward)

    def unroll(self, inputs: List[torch.Tensor], actions_enc_k: torch.Tensor, gradient_scale: float) -> List[ModelOutput]:
        """Outputs of unroll steps 0..K with the given encoded actions ``[B, K, A]``.

        As in the MuZero pseudocode (``update_weights``), each step's predictions are read from the latent
        before scaling; the latent passed on to the next dynamics call has its gradient scaled by
        ``gradient_scale`` (Appendix G).
        """
        out = [self.initial_inference(inputs)]
        latent = out[0].latent
        for k in range(actions_enc_k.shape[1]):
            latent = scale_gradient(latent, gradient_scale) if k > 0 else latent
            step = self.recurrent_inference(latent, actions_enc_k[:, k])
            out.append(step)
            latent = step.latent
        return out

    def unroll_stacked(self, inputs: List[torch.Tensor], actions_enc_k: torch.Tensor,
                       gradient_scale: float) -> UnrollOutput:
        """``unroll``'s predictions, stacked over the steps, with the same values and gradients: only the dynamics
        runs step by step (each step needs the last), while the prediction f reads all ``K+1`` latents and the
        reward head all ``K`` dynamics features in one call each on ``B (K+1)`` / ``B K`` rows (fewer, larger
        matrix products: the model update's cost, issue #52; bench/results/muzero-cost-2026-11-29)."""
        B, K = actions_enc_k.shape[0], actions_enc_k.shape[1]
        latent = self.representation(inputs)
        latents = [latent]
        features = []
        for k in range(K):
            if k > 0:
                latent = scale_gradient(latent, gradient_scale)
            h = self.dynamics_trunk(torch.cat([latent, actions_enc_k[:, k]], dim=-1))
            features.append(h)
            latent = scale_latent(self.dynamics_latent(h), self.scaling)
            latents.append(latent)
        latent_k = torch.stack(latents, dim=1)
        pred = self._predict(latent_k.reshape(B * (K + 1), -1), None)
        reward_k = None
        if K > 0:
            reward = self.dynamics_reward(torch.stack(features, dim=1).reshape(B * K, -1))
            reward_k = squeeze_scalar_head(reward.reshape(B, K, -1), self.support_size)
        value_k = pred.value.reshape(B, K + 1, *pred.value.shape[1:])
        policy_k = pred.policy.reshape(B, K + 1, -1)
        game_over_k = None if pred.game_over_logit is None else pred.game_over_logit.reshape(B, K + 1)
        return UnrollOutput(latent_k, value_k, policy_k, reward_k, game_over_k)

    def consistency_online(self, latent: torch.Tensor) -> torch.Tensor:
        return self.predictor(self.projector(latent))

    def consistency_target(self, latent: torch.Tensor) -> torch.Tensor:
        return self.projector(latent)

