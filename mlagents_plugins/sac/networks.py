"""Networks of the SAC head: twin Q networks from ML-Agents' ``ValueNetwork`` bodies, temperatures, Polyak.

The Q networks reuse ML-Agents' ``NetworkBody`` so every observation kind (vector, visual with any
``vis_encode_type``, variable-length/attention, goal-conditioning) and ``normalize`` works exactly as in the
built-in trainers.  Continuous actions are concatenated to the encoded observation; discrete branches are
heads with one output per action (``A = sum(branches)``).  Unlike ML-Agents' SAC there is no separate V
network: the target is computed from Polyak-averaged copies of both Q networks (SAC-2, Haarnoja et al. 2018b).
With ``layer_norm`` each hidden linear layer of the critics' bodies is followed by a layer normalization
without learned scale or shift (``critic_layer_norm``; the parameters and ``state_dict`` keys are ML-Agents'
own, so checkpoints of either kind load into the same module).  With ``small_output_init`` the critics' output
layers start small (``critic_norm.init_outputs_small_``, fast_sac's ``critic_small_init``).  With ``batch_renorm``
(fast_sac's ``critic_batch_renorm``, CrossQ) each critic body has a batch renormalization layer before every linear
layer and before its value heads (``common/batch_renorm.py``); ``forward`` then normalizes with the batch's statistics
(and updates the running ones) and ``frozen`` with the running statistics.
"""
from typing import Dict, List, Optional, Tuple

from mlagents.torch_utils import nn, torch
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.distributions import EPSILON as DIST_EPSILON
from mlagents.trainers.torch_entities.conditioning import ConditionalEncoder
from mlagents.trainers.torch_entities.networks import ValueNetwork
from mlagents_envs import logging_util
from mlagents_envs.base_env import ActionSpec, ObservationSpec

from mlagents_plugins.common.batch_renorm import renorm_bodies, renormed_forward
from mlagents_plugins.common.critic_norm import LayerNormedCritics, init_action_neutral_, init_outputs_small_
from mlagents_plugins.common.network_recipe import NetworkRecipe
from mlagents_plugins.common.tensor_utils import call_frozen, target_copy
from mlagents_plugins.sac import losses

logger = logging_util.get_logger(__name__)


#: each critic's observation encoding [B, E] (``TwinQ.encode``); Q2's None where only Q1 is evaluated.
Encodings = Tuple[torch.Tensor, Optional[torch.Tensor]]


class TwinQ(LayerNormedCritics):
    """Two independent Q networks; ``forward`` returns both as [B, S, A] tensors (streams in name order).

    ``layer_norm``: layer normalization in the critics' hidden layers (``critic_norm``).  ``small_output_init``: the
    weights and biases of both critics' output layers drawn from U(-3e-3, 3e-3) (``critic_norm.init_outputs_small_``)
    instead of ML-Agents' initialization, so every Q value, and its slope in the continuous actions, starts near 0
    (the hidden layers keep ML-Agents' initialization).  ``action_neutral_init``: both critics start indifferent
    between actions (``critic_norm.init_action_neutral_``, fast_sac's ``critic_neutral_init``).  ``recipe``: both
    critics' activation and initialization (``common/network_recipe.py``; None: ML-Agents').  ``value_bins``: each Q
    output is that many logits (binned critics, ``losses.critic_values``); 0: one scalar."""

    def __init__(
        self,
        stream_names: List[str],
        observation_specs: List[ObservationSpec],
        network_settings: NetworkSettings,
        action_spec: ActionSpec,
        layer_norm: bool = False,
        small_output_init: bool = False,
        action_neutral_init: bool = False,
        batch_renorm: Optional[Tuple[float, int]] = None,
        recipe: Optional[NetworkRecipe] = None,
        value_bins: int = 0,
    ):
        super().__init__()
        self.stream_names = list(stream_names)
        # Raw outputs per stream: one Q value per discrete action (1 for continuous-only), times ``value_bins``
        # logits for binned critics (``losses.critic_values`` reads them).
        self.num_outputs = max(int(sum(action_spec.discrete_branches)), 1) * max(int(value_bins), 1)
        cont = int(action_spec.continuous_size)
        self.q1 = ValueNetwork(self.stream_names, observation_specs, network_settings, cont, self.num_outputs)
        self.q2 = ValueNetwork(self.stream_names, observation_specs, network_settings, cont, self.num_outputs)
        if recipe is not None:
            # before anything below reads the layers or sets an initialization of its own
            recipe.apply_(self.q1)
            recipe.apply_(self.q2)
        self._normalize_bodies((self.q1, self.q2), layer_norm)
        if small_output_init:
            init_outputs_small_((self.q1, self.q2))
        if action_neutral_init:
            init_action_neutral_((self.q1, self.q2), cont, list(action_spec.discrete_branches))
        # (momentum, warm-up steps) of the critics' batch renormalization (CrossQ), or None.
        self.batch_renorm = batch_renorm
        if batch_renorm is not None:
            momentum, warmup_steps = batch_renorm
            # The renormalized bodies take the place of the layer-normed ones (same layers, same layer_norm flag).
            self._normed = renorm_bodies((self.q1, self.q2), momentum, warmup_steps)

    def _stack(self, out: dict, batch: int) -> torch.Tensor:
        return torch.stack([out[n] for n in self.stream_names], dim=1).reshape(batch, len(self.stream_names), -1)

    def encode(self, obs: List[torch.Tensor], first_only: bool = False) -> Encodings:
        """Each critic's encoding of ``obs`` before the actions join it (ML-Agents' ``ObservationEncoder``: the
        image encoders, the normalizer, the concatenation), [B, E]; Q2's is None with ``first_only``."""
        e1 = self.q1.network_body.observation_encoder(obs)
        return e1, None if first_only else self.q2.network_body.observation_encoder(obs)

    def forward(
        self,
        obs: List[torch.Tensor],
        cont_actions: torch.Tensor = None,
        first_only: bool = False,
        encoded: Optional[Encodings] = None,
        batch_stats: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(Q1, Q2) as [B, S, A]; Q2 is None with ``first_only`` (Q1 alone: the actor's objective, as in TD3 and
        ML-Agents' SAC).  ``encoded``: ``encode(obs)`` already computed (the observation encoders are not run).
        ``batch_stats`` (only with ``batch_renorm``): normalize with this batch's statistics and update the running
        ones (the critics' training pass), else with the running statistics."""
        b = obs[0].shape[0]
        e1, e2 = self.encode(obs, first_only) if encoded is None else encoded
        q1 = self._stack(_value_from_encoding(self.q1, obs, e1, cont_actions, batch_stats), b)
        if first_only:
            return q1, None
        return q1, self._stack(_value_from_encoding(self.q2, obs, e2, cont_actions, batch_stats), b)

    def frozen(
        self,
        obs: List[torch.Tensor],
        cont_actions: torch.Tensor,
        first_only: bool = False,
        encoded: Optional[Encodings] = None,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """``forward`` with no gradient reaching any critic weight, only the inputs (the actor's actions), so
        the actor loss can share one backward pass with the critic loss (``tensor_utils.call_frozen``: eager
        and compiled alike).  With ``batch_renorm`` it normalizes with the running statistics and updates none
        (CrossQ's actor loss)."""
        return call_frozen(self, obs, cont_actions, first_only=first_only, encoded=encoded, batch_stats=False)

    def encoding_shared(self) -> Tuple[losses.CriticFn, losses.FrozenCriticFn]:
        """``(critic, frozen_critic)`` for one evaluation of ``losses.sac_losses`` whose frozen pass (the actor
        loss) sees the observations of the critic pass before it (``policy_s_tm1`` is ``s_tm1``): the frozen pass
        takes that pass's encodings, detached, instead of encoding the batch again.  Same values, and no gradient
        reached the critics' weights through the frozen pass before either; with cameras each critic's image
        encoder then runs once per batch instead of twice."""
        seen: List[Encodings] = []

        def critic(obs: List[torch.Tensor], cont_actions: Optional[torch.Tensor]):
            encoded = self.encode(obs)
            seen.append(encoded)
            return self(obs, cont_actions, encoded=encoded)

        def frozen_critic(obs: List[torch.Tensor], cont_actions: Optional[torch.Tensor], first_only: bool):
            if not seen:
                raise RuntimeError("encoding_shared: the frozen critic ran before the critic pass it shares")
            e1, e2 = seen[-1]
            detached = (e1.detach(), None if first_only else e2.detach())
            return self.frozen(obs, cont_actions, first_only, encoded=detached)

        return critic, frozen_critic

    def copy_normalization_from(self, body) -> None:
        self.q1.network_body.copy_normalization(body)
        self.q2.network_body.copy_normalization(body)

    def make_target(self) -> "TwinQ":
        """A frozen deep copy (no gradients) used for the bootstrap targets."""
        return target_copy(self)


def _value_from_encoding(
    critic: ValueNetwork,
    obs: List[torch.Tensor],
    encoded: torch.Tensor,
    actions: Optional[torch.Tensor],
    batch_stats: bool = True,
) -> Dict[str, torch.Tensor]:
    """``critic(obs, actions)`` (ML-Agents' ``ValueNetwork.forward``, no memory) from the observation encoding
    ``encoded`` = ``critic.network_body.observation_encoder(obs)``: the actions joined, the body's hidden layers
    (with hypernetwork goal conditioning, the goal encoded from ``obs``; with batch renormalization, in the mode
    ``batch_stats``), the value heads."""
    body = critic.network_body
    x = encoded if actions is None else torch.cat([encoded, actions], dim=1)
    renormed, hidden = renormed_forward(body._body_endoder, x, batch_stats)
    if not renormed:
        if isinstance(body._body_endoder, ConditionalEncoder):
            hidden = body._body_endoder(x, body.observation_encoder.get_goal_encoding(obs))
        else:
            hidden = body._body_endoder(x)
    return critic.value_heads(hidden)


def sample_for_training(
    action_model, encoding: torch.Tensor, mask: Optional[torch.Tensor]
) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor]]:
    """What the SAC losses need from ML-Agents' ``ActionModel`` at ``encoding``: (continuous action [B, C] | None,
    log pi_cont [B] | None, log p_disc [B, A] | None) - the ``ActorFn`` contract of ``losses.sac_losses``.

    Same distributions as the policy's ``ActionModel`` (which acts in the environment and is exported), read
    from its own layers, but without what training does not use: the continuous part goes through
    ``losses.tanh_gaussian_sample`` instead of transform objects and entropies, and discrete actions are not
    sampled at all (the losses take the exact expectation over ``log p_disc``).
    """
    cont = lp_c = lp_d = None
    if action_model.action_spec.continuous_size > 0:
        gauss = action_model._continuous_distribution
        mu = gauss.mu(encoding)
        if gauss.conditional_sigma:
            log_sigma = torch.clamp(gauss.log_sigma(encoding), min=-20, max=2)
        else:
            log_sigma = gauss.log_sigma.expand_as(mu)
        cont, lp_c = losses.tanh_gaussian_sample(mu, log_sigma, torch.randn_like(mu))
    if action_model.action_spec.discrete_size > 0:
        lp_d = discrete_log_probs(action_model._discrete_distribution, encoding, mask)
    return cont, lp_c, lp_d


def discrete_log_probs(dist, encoding: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``log p`` of every action of every branch [B, A] from ML-Agents' ``MultiCategoricalDistribution``
    ``dist``: what ``torch.cat([d.all_log_prob() for d in dist(encoding, mask)], 1)`` gives (its masking,
    ``log(softmax + 1e-7)``), written out so ``torch.compile`` traces it as one graph (``dist`` finds each
    branch's mask slice with numpy sums, which Dynamo turns into a tensor read back to Python)."""
    parts = []
    start = 0
    for size, branch in zip(dist.act_sizes, dist.branches):
        allow = mask[:, start:start + int(size)]
        logits = branch(encoding) * allow - 1e8 * (-1.0 * allow + 1.0)
        parts.append(torch.log(torch.softmax(logits, dim=-1) + DIST_EPSILON))
        start += int(size)
    return torch.cat(parts, dim=1)


class Temperatures(nn.Module):
    """Log entropy temperatures: one shared by the continuous dimensions, one per discrete branch."""

    def __init__(self, init_entcoef: float, num_branches: int):
        super().__init__()
        init = float(torch.log(torch.tensor(init_entcoef)))
        self.log_alpha_cont = nn.Parameter(torch.full((1,), init))
        self.log_alpha_disc = nn.Parameter(torch.full((num_branches,), init))
