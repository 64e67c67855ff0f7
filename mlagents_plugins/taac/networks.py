"""TAAC networks: the critic ensemble ``Q(s, tau)`` and the two-stage actor that Unity runs.

The exported "actor" must contain the critics too: stage two of the policy compares ``Q(s, tau^-)`` with
``Q(s, tau_hat)``.  Per-agent rollout state (previous trajectory, last switch, repeat count) is carried in
ML-Agents' recurrent memory (``recurrent_in`` / ``recurrent_out``), the contract Unity already drives for
recurrent policies: it feeds each agent's last ``recurrent_out`` back and starts every episode from zeros.

Memory layout (``memory_size = D + 2`` with ``D = num_params(kind) * A``):
``[tau (D) | switch b (1) | repeats (1)]`` - the trajectory executed at this step, whether it was a new
one, and for how many steps it has been executed.
"""
import math
from typing import List, NamedTuple, Optional, Tuple

from mlagents.torch_utils import nn, torch
from mlagents.trainers.buffer import AgentBuffer
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.distributions import GaussianDistribution
from mlagents.trainers.torch_entities.networks import Actor, NetworkBody, ValueNetwork
from mlagents_envs.base_env import ActionSpec, ObservationSpec

from mlagents_plugins.common.critic_norm import LayerNormedCritics, init_action_neutral_, init_outputs_small_
from mlagents_plugins.common.tensor_utils import call_frozen, tanh_gaussian_log_prob
from mlagents_plugins.taac import losses, trajectories
from mlagents_plugins.taac.trajectories import TrajectoryKind


class TaacCritic(LayerNormedCritics):
    """``num_critic_replicas`` independent ``Q_i(s, tau)`` networks, one head per reward stream; ``layer_norm``:
    layer normalization in their hidden layers (``critic_norm``); ``small_output_init``: their output layers start
    in [-3e-3, 3e-3] (``critic_norm.init_outputs_small_``); ``action_neutral_init``: their first layers' weights on
    ``tau`` start at 0 (``critic_norm.init_action_neutral_``)."""

    def __init__(
        self,
        stream_names: List[str],
        observation_specs: List[ObservationSpec],
        network_settings: NetworkSettings,
        tau_size: int,
        num_replicas: int,
        layer_norm: bool = False,
        small_output_init: bool = False,
        action_neutral_init: bool = False,
    ):
        super().__init__()
        self.stream_names = list(stream_names)
        self.replicas = nn.ModuleList(
            [
                ValueNetwork(self.stream_names, observation_specs, network_settings, encoded_act_size=tau_size)
                for _ in range(num_replicas)
            ]
        )
        self._normalize_bodies(self.replicas, layer_norm)
        if small_output_init:
            init_outputs_small_(self.replicas)
        if action_neutral_init:
            init_action_neutral_(self.replicas, tau_size)

    def forward(self, obs: List[torch.Tensor], tau: torch.Tensor) -> torch.Tensor:
        """``[R, N, K]``: replica x row x reward stream (streams in ``stream_names`` order)."""
        outs = []
        for q in self.replicas:
            encoding, _ = q.network_body(obs, tau)
            heads = q.value_heads.value_heads
            # Heads kept [N, 1] and concatenated (no squeeze/stack: ranks stay known for the ONNX exporter).
            outs.append(torch.cat([heads[name](encoding) for name in self.stream_names], dim=1).unsqueeze(0))
        return torch.cat(outs, dim=0)

    @staticmethod
    def pessimistic(q: torch.Tensor) -> torch.Tensor:
        """``[N, K]`` minimum over replicas, per stream."""
        return q.min(dim=0)[0]

    def total(self, obs: List[torch.Tensor], tau: torch.Tensor) -> torch.Tensor:
        """``[N]``: sum over streams of the replica minimum (the value the switch and the actor compare)."""
        return self.pessimistic(self(obs, tau)).sum(dim=-1)

    def totals_frozen(self, obs: List[torch.Tensor], tau: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """``([N] minimum over replicas, [N] first replica)``, each summed over streams, from one pass with no
        gradient reaching the critics' weights, only ``tau`` (the actor's proposal), so the actor loss shares one
        backward pass with the critic loss (``tensor_utils.call_frozen``)."""
        q = call_frozen(self, obs, tau)
        return self.pessimistic(q).sum(dim=-1), q[0].sum(dim=-1)

    def update_normalization(self, buffer: AgentBuffer) -> None:
        for q in self.replicas:
            q.update_normalization(buffer)


class Proposal(NamedTuple):
    x: torch.Tensor  # [N, A] proposed value in (-1, 1) (tanh-squashed Gaussian)
    log_pi: torch.Tensor  # [N] log density of x (0 for deterministic proposals)


class ActStep(NamedTuple):
    """One acting step of the two-stage policy for a batch of agents."""

    tau_prev: torch.Tensor  # [N, D] tau^- the step started from
    tau: torch.Tensor  # [N, D] trajectory executed now
    switch: torch.Tensor  # [N] bool, 1 = took the proposal (including forced switches)
    repeats: torch.Tensor  # [N] steps tau has been executed, this one included
    action: torch.Tensor  # [N, A] action sent to the environment
    p_switch: torch.Tensor  # [N] beta(b=1)
    memory_out: torch.Tensor  # [N, D + 2]


class TaacActor(nn.Module, Actor):
    """Stage one (proposal network) + stage two (switch over the critics), exportable to ONNX."""

    MODEL_EXPORT_VERSION = 3  # ModelApiVersion.MLAgents2_0, as SimpleActor

    def __init__(
        self,
        observation_specs: List[ObservationSpec],
        network_settings: NetworkSettings,
        action_spec: ActionSpec,
        stream_names: List[str],
        kind: TrajectoryKind = TrajectoryKind.CONSTANT,
        inverse_mode: bool = True,
        num_critic_replicas: int = 2,
        max_repeat_steps: int = 0,
        advantage_clipping: Optional[Tuple[float, float]] = None,
        init_action_temperature: float = 0.1,
        init_switch_temperature: float = 0.1,
        critic_layer_norm: bool = False,
        critic_small_init: bool = False,
        critic_neutral_init: bool = False,
    ):
        super().__init__()
        self.action_spec = action_spec
        self.action_size = action_spec.continuous_size
        self.kind = kind
        self.inverse_mode = inverse_mode
        self.max_repeat_steps = int(max_repeat_steps)
        self.advantage_clipping = advantage_clipping
        self.tau_size = trajectories.trajectory_size(kind, self.action_size)
        self._memory_size = self.tau_size + 2
        self.version_number = nn.Parameter(torch.Tensor([self.MODEL_EXPORT_VERSION]), requires_grad=False)
        self.memory_size_vector = nn.Parameter(torch.Tensor([int(self._memory_size)]), requires_grad=False)
        self.continuous_act_size_vector = nn.Parameter(torch.Tensor([int(self.action_size)]), requires_grad=False)
        self.network_body = NetworkBody(observation_specs, network_settings, encoded_act_size=self.tau_size)
        self.distribution = GaussianDistribution(
            network_settings.hidden_units, self.action_size, conditional_sigma=True, tanh_squash=False
        )
        self.critic = TaacCritic(
            stream_names, observation_specs, network_settings, self.tau_size, num_critic_replicas, critic_layer_norm,
            critic_small_init, critic_neutral_init,
        )
        self.log_alpha_action = nn.Parameter(torch.tensor(math.log(init_action_temperature)))
        self.log_alpha_switch = nn.Parameter(torch.tensor(math.log(init_switch_temperature)))

    # ------------------------------------------------------------------ pieces
    @property
    def memory_size(self) -> int:
        return self._memory_size

    def actor_parameters(self) -> List[nn.Parameter]:
        """Parameters trained by the actor loss (stage one)."""
        return list(self.network_body.parameters()) + list(self.distribution.parameters())

    def update_normalization(self, buffer: AgentBuffer) -> None:
        self.network_body.update_normalization(buffer)
        self.critic.update_normalization(buffer)

    def split_memory(self, memories: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(tau^-, repeats)`` from ``[N, D + 2]`` memories."""
        tau_prev = torch.narrow(memories, 1, 0, self.tau_size)
        repeats = torch.narrow(memories, 1, self.tau_size + 1, 1)
        return tau_prev, repeats.reshape(-1)

    def propose(self, obs: List[torch.Tensor], tau_prev: torch.Tensor, deterministic: bool) -> Proposal:
        """Stage one: ``x ~ pi(. | s, tau^-)``, a tanh-squashed Gaussian (reparameterised sample)."""
        encoding, _ = self.network_body(obs, tau_prev)
        dist = self.distribution(encoding)
        mean, std = dist.mean, dist.std
        if deterministic:
            return Proposal(torch.tanh(mean), torch.zeros_like(mean[:, 0]))
        noise = torch.randn_like(mean)
        u = mean + noise * std
        x = torch.tanh(u)
        return Proposal(x, tanh_gaussian_log_prob(u, noise, torch.log(std)))

    def switch_candidates(
        self, x: torch.Tensor, tau_prev: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(tau_keep, tau_new)``: advance ``tau^-`` one step (b=0) or start from the proposal (b=1)."""
        return (
            trajectories.advance(tau_prev, self.kind, self.action_size),
            trajectories.from_proposal(x, tau_prev, self.kind, self.inverse_mode),
        )

    def switch_temperature(self) -> torch.Tensor:
        return self.log_alpha_switch.exp()

    # ------------------------------------------------------------------ acting
    def act(self, obs: List[torch.Tensor], memories: torch.Tensor, deterministic: bool) -> ActStep:
        """One step of the two-stage policy from ``[N, D + 2]`` memories (zeros at episode start).

        Deterministic: the proposal is ``tanh(mean)`` and the switch takes the proposal only when its
        (clipped) advantage is positive (ties keep ``tau^-``).  ``max_repeat_steps`` forces a switch.
        """
        tau_prev, repeats_prev = self.split_memory(memories)
        x, _ = self.propose(obs, tau_prev, deterministic)
        tau_keep, tau_new = self.switch_candidates(x, tau_prev)
        q_keep = self.critic.total(obs, tau_keep)
        q_new = self.critic.total(obs, tau_new)
        dist = losses.switch_distribution(q_keep, q_new, self.switch_temperature(), self.advantage_clipping)
        if deterministic:
            b = dist.advantage > 0
        else:
            b = torch.rand_like(dist.p_switch) < dist.p_switch
        b = trajectories.force_switch(b, repeats_prev, self.max_repeat_steps)
        tau = trajectories.select(b, tau_keep, tau_new)
        repeats = trajectories.next_repeats(b, repeats_prev)
        memory_out = torch.cat([tau, b.to(tau.dtype).unsqueeze(1), repeats.unsqueeze(1)], dim=1)
        return ActStep(tau_prev, tau, b, repeats, trajectories.action_of(tau, self.action_size), dist.p_switch, memory_out)

    def forward(
        self,
        inputs: List[torch.Tensor],
        masks: Optional[torch.Tensor] = None,
        memories: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, ...]:
        """ONNX graph (names/order as ``ModelSerializer`` expects for a continuous, recurrent policy).

        The file is the deterministic two-stage policy: ``continuous_actions`` and
        ``deterministic_continuous_actions`` are the same action, so the memory Unity feeds back always
        describes the trajectory actually executed, whichever output the build reads.
        """
        mem = memories.reshape(-1, self._memory_size)
        step = self.act(inputs, mem, deterministic=True)
        return (
            self.version_number,
            self.memory_size_vector,
            step.action,
            self.continuous_act_size_vector,
            step.action,
            step.memory_out.reshape(-1, 1, self._memory_size),
        )
