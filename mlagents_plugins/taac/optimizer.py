"""``TaacOptimizer``: one TAAC gradient update on a batch of replayed windows.

Per update (all on ``[B, L]`` windows flattened to ``N = B * L`` rows):

1. Current rows ``(s_t, tau^-_t)``: sample a proposal, build ``tau_keep``/``tau_new``, the switch
   distribution from the online critics, a fresh switch ``b~_t``, the actor loss and both entropies.
2. Next states ``(s_{t+1}, tau^- = tau_t)``: the bootstrap value ``E_beta[Q_target]`` per reward stream.
3. Compare-through targets per stream (``losses.compare_through_returns``) with the rollout switch OR the
   fresh switch, the critic loss of every replica on ``Q(s_t, tau_t)``.
4. Temperature losses; then one backward pass, all three Adam steps; Polyak update of the target critics
   every ``target_update_period`` updates.

Steps 1-4 are ``compute_losses``, a function of the batch alone; on CPU with vector observations it runs
through ``torch.compile`` (``compile_update``) once the fp32 matmul kernel is chosen (``fast_cpu_matmul``),
the same machinery as fast_sac's (``compiled_step.py``, ``fast_kernels.py``).

Resume: the update counter that times the target updates and the policy's ``randomize_first_state_tau``
generator are saved in the model checkpoint (module ``Optimizer:taac_state``, an
``offpolicy.checkpoint_state.CheckpointState``), so ``--resume`` continues both exactly.
"""
from typing import Dict, List, NamedTuple, Tuple

from mlagents.torch_utils import default_device, torch
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.utils import ModelUtils

from mlagents_plugins.common.compiled_step import CompiledStep, compile_wanted
from mlagents_plugins.common.fast_kernels import (
    MatmulKernelChooser,
    fuse_swish_,
    fused_adam_kwargs,
)
from mlagents_plugins.common.tensor_utils import polyak_update_, stream_discounts, target_copy
from mlagents_plugins.offpolicy.checkpoint_state import CheckpointState
from mlagents_plugins.taac import losses, stats
from mlagents_plugins.taac.networks import TaacActor, TaacCritic
from mlagents_plugins.taac.policy import TaacPolicy
from mlagents_plugins.taac.settings import TaacSettings


class TaacBatch(NamedTuple):
    """Replayed windows, tensors ``[B, L, ...]``."""

    obs: List[torch.Tensor]
    next_obs: List[torch.Tensor]
    tau_prev: torch.Tensor  # [B, L, D] tau^- the rollout started the step from
    tau: torch.Tensor  # [B, L, D] trajectory the rollout executed
    switch: torch.Tensor  # [B, L] bool rollout switch
    rewards: torch.Tensor  # [B, L, K] per reward stream (already scaled by strength)
    terminal: torch.Tensor  # [B, L] bool, episode ended without time-out
    valid: torch.Tensor  # [B, L] bool, row belongs to the window


class TaacLosses(NamedTuple):
    """One update's losses (scalars; the first three carry gradients) and two switch diagnostics."""

    critic_loss: torch.Tensor  # sum over reward streams of every replica's TD loss
    actor_loss: torch.Tensor  # switch-scaled proposal loss (critic weights frozen)
    temperature_loss: torch.Tensor  # action + switch temperature losses
    keep_probability: torch.Tensor  # mean beta(b=0) of the fresh switch on valid rows (no gradient)
    proposal_advantage: torch.Tensor  # mean Q(s, tau_hat) - Q(s, tau^-) on valid rows (no gradient)


# Keys of the non-tensor training state saved with the checkpoint.
STATE_MODULE = "Optimizer:taac_state"
STATE_NUM_UPDATES = "num_updates"
STATE_FIRST_TAU_RNG = "first_tau_rng"


def _flat(x: torch.Tensor, n: int) -> torch.Tensor:
    return x.reshape((n,) + tuple(x.shape[2:]))


class TaacOptimizer(TorchOptimizer):
    def __init__(self, policy: TaacPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        self.hyperparameters: TaacSettings = trainer_settings.hyperparameters  # type: ignore[assignment]
        hp = self.hyperparameters
        self.actor: TaacActor = policy.actor
        fuse_swish_(self.actor)  # same function, one kernel (mlagents_plugins/common/fast_kernels.py); before the target copy
        self.q_net: TaacCritic = self.actor.critic
        self.stream_names = list(self.critic.stream_names)
        if self.stream_names != list(self.reward_signals.keys()):
            raise ValueError(f"critic streams {self.stream_names} != reward signals {list(self.reward_signals)}")
        self.q_target: TaacCritic = target_copy(self.q_net)
        self.gammas = torch.tensor([self.reward_signals[n].gamma for n in self.stream_names], dtype=torch.float32)
        # 0 for providers that ignore episode ends (curiosity, RND): their return bootstraps through a terminal.
        self.use_done = torch.tensor(
            [0.0 if self.reward_signals[n].ignore_done else 1.0 for n in self.stream_names], dtype=torch.float32
        )
        # The actor's objective: the replicas' minimum Q, or the first replica's (``actor_min_q``; null: the first's
        # with an image observation, the minimum otherwise).
        self.actor_min_q = hp.actor_reads_min(policy.behavior_spec.observation_specs)
        self.action_target_entropy = -hp.action_target_entropy_scale * self.actor.action_size
        self.switch_target_entropy = float(hp.switch_target_entropy)
        self.decay_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.learning_rate, 1e-10, trainer_settings.max_steps
        )
        adam = fused_adam_kwargs(default_device())
        self.actor_optimizer = torch.optim.Adam(self.actor.actor_parameters(), lr=hp.learning_rate, **adam)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=hp.learning_rate, **adam)
        self.temperature_optimizer = torch.optim.Adam(
            [self.actor.log_alpha_action, self.actor.log_alpha_switch], lr=hp.learning_rate, **adam
        )
        self._optimizers = (self.critic_optimizer, self.actor_optimizer, self.temperature_optimizer)
        # Gradient updates taken (times the target updates: every ``target_update_period``-th one).
        self.num_updates = 0
        self.q_target.to(default_device())
        self.q_params = list(self.critic.parameters())
        self.q_target_params = list(self.q_target.parameters())
        # fp32 matmul kernel timed on the first updates (fast_cpu_matmul), then the compiled loss step
        # (compile_update), as in fast_sac: mlagents_plugins/common/fast_kernels.py and compiled_step.py.
        self.matmul_kernels = MatmulKernelChooser(default_device(), hp.fast_cpu_matmul)
        compile_update = compile_wanted(hp.compile_update, policy.behavior_spec.observation_specs)
        self.loss_step = CompiledStep(self._total_loss, compile_update, "taac update")
        # The first ``critic_warmup_updates`` updates: the critic loss alone, eagerly, through the critics' optimizer
        # only (the actor and the temperatures get no gradient, and their Adam states no step).
        self.critic_only_step = CompiledStep(self._critic_loss_only, False, "taac update (critic warm-up)")
        self.resume_state = CheckpointState()
        self.resume_state.register(STATE_NUM_UPDATES, lambda: int(self.num_updates), self._set_num_updates)
        self.resume_state.register_rng(STATE_FIRST_TAU_RNG, policy.first_tau_rng)

    def _set_num_updates(self, value: object) -> None:
        self.num_updates = int(value)  # type: ignore[arg-type]

    @property
    def critic(self) -> TaacCritic:  # TorchOptimizer's read-only property
        return self.q_net

    def _sync_target_normalization(self) -> None:
        for online, target in zip(self.critic.replicas, self.q_target.replicas):
            target.network_body.copy_normalization(online.network_body)

    def stream_targets(self, batch: TaacBatch, v_t: torch.Tensor, fresh_switch: torch.Tensor) -> torch.Tensor:
        """``[B, L, K]`` compare-through targets, per stream with its own gamma (and done handling).

        :param v_t: ``[B, L, K]`` bootstrap values at ``s_{t+1}``; :param fresh_switch: ``[B, L]`` bool.
        """
        switch_t = batch.switch.bool() | fresh_switch.bool()
        discount_t = stream_discounts(self.gammas, batch.terminal.float(), self.use_done)  # [B, L, K]
        return torch.stack(
            [
                losses.compare_through_returns(
                    batch.rewards[..., k],
                    discount_t[..., k],
                    v_t[..., k],
                    switch_t,
                    batch.terminal,
                    batch.valid,
                )
                for k in range(len(self.stream_names))
            ],
            dim=-1,
        )

    def compute_losses(self, batch: TaacBatch) -> TaacLosses:
        """Forward passes and the three losses of one update (no parameter changes); steps 1-4 above."""
        actor, critic = self.actor, self.critic
        B, L = batch.valid.shape
        n = B * L
        obs = [_flat(o, n) for o in batch.obs]
        next_obs = [_flat(o, n) for o in batch.next_obs]
        tau_prev, tau = _flat(batch.tau_prev, n), _flat(batch.tau, n)
        valid = batch.valid.reshape(n)
        alpha_action = actor.log_alpha_action.exp().detach()
        switch_temp = actor.log_alpha_switch.exp().detach()
        clip = actor.advantage_clipping

        # 1. Current rows: proposal, switch, actor loss (critic weights frozen: the gradient reaches x only).
        prop = actor.propose(obs, tau_prev, deterministic=False)
        tau_keep, tau_new = actor.switch_candidates(prop.x, tau_prev)
        q_new, q1_new = critic.totals_frozen(obs, tau_new)
        with torch.no_grad():
            q_keep = critic.total(obs, tau_keep)
            dist = losses.switch_distribution(q_keep, q_new.detach(), switch_temp, clip)
            fresh_switch = torch.rand_like(dist.p_switch) < dist.p_switch
        q_actor = q_new if self.actor_min_q else q1_new
        actor_loss = losses.actor_loss(prop.log_pi, q_actor, dist.p_switch, alpha_action, valid)

        # 2. Bootstrap values at s_{t+1} with tau^- = tau_t.
        with torch.no_grad():
            prop_t = actor.propose(next_obs, tau, deterministic=False)
            keep_t, new_t = actor.switch_candidates(prop_t.x, tau)
            dist_t = losses.switch_distribution(
                critic.total(next_obs, keep_t), critic.total(next_obs, new_t), switch_temp, clip
            )
            v_t = losses.expected_switch_value(
                dist_t.p_switch,
                TaacCritic.pessimistic(self.q_target(next_obs, keep_t)),
                TaacCritic.pessimistic(self.q_target(next_obs, new_t)),
            ).reshape(B, L, -1)

            # 3. Compare-through targets per reward stream.
            returns = self.stream_targets(batch, v_t, fresh_switch.reshape(B, L)).reshape(n, -1)
        q_tm1 = critic(obs, tau)  # [R, N, K]
        critic_loss = sum(
            losses.critic_loss(q_tm1[..., k], returns[:, k], valid) for k in range(len(self.stream_names))
        )

        # 4. Temperatures (switch entropy is exact; the action entropy is estimated by -log pi).
        temperature_loss = losses.temperature_loss(
            actor.log_alpha_action, -prop.log_pi, self.action_target_entropy, valid
        ) + losses.temperature_loss(actor.log_alpha_switch, dist.entropy, self.switch_target_entropy, valid)
        with torch.no_grad():
            keep_probability = losses.masked_mean(1.0 - dist.p_switch, valid)
            proposal_advantage = losses.masked_mean(dist.advantage, valid)
        return TaacLosses(critic_loss, actor_loss, temperature_loss, keep_probability, proposal_advantage)

    def _total_loss(self, batch: TaacBatch) -> Tuple[torch.Tensor, TaacLosses]:
        out = self.compute_losses(batch)
        return out.critic_loss + out.actor_loss + out.temperature_loss, out

    def _critic_loss_only(self, batch: TaacBatch) -> Tuple[torch.Tensor, TaacLosses]:
        out = self.compute_losses(batch)
        return out.critic_loss, out

    @property
    def warming_up(self) -> bool:
        """Whether the next update trains the critics alone (``critic_warmup_updates``; ``num_updates`` is saved with
        the checkpoint, so ``--resume`` continues the count)."""
        return self.num_updates < self.hyperparameters.critic_warmup_updates

    def update(self, batch: TaacBatch, num_sequences: int = 0) -> Dict[str, float]:  # type: ignore[override]
        """One gradient update: one backward of ``critic + actor + temperature`` losses, three Adam steps, the
        target critics' Polyak update every ``target_update_period`` updates.  During the critic warm-up
        (``warming_up``) the critic loss alone and the critics' Adam step."""
        hp = self.hyperparameters
        warming_up = self.warming_up
        with self.matmul_kernels.scope():
            lr = self.decay_learning_rate.get_value(self.policy.get_current_step())
            if warming_up:
                _, out = self.critic_only_step.gradient_step([self.critic_optimizer], lr, batch)
            else:
                _, out = self.loss_step.gradient_step(self._optimizers, lr, batch, ready=self.matmul_kernels.decided)

            self.num_updates += 1
            self._sync_target_normalization()
            if self.num_updates % hp.target_update_period == 0:
                polyak_update_(self.q_params, self.q_target_params, hp.target_update_tau)

        actor = self.actor
        with torch.no_grad():
            return {
                stats.CRITIC_LOSS: float(out.critic_loss),
                stats.ACTOR_LOSS: float(out.actor_loss),
                stats.TEMPERATURE_LOSS: float(out.temperature_loss),
                stats.ACTION_TEMPERATURE: float(actor.log_alpha_action.exp()),
                stats.SWITCH_TEMPERATURE: float(actor.log_alpha_switch.exp()),
                stats.KEEP_PROBABILITY: float(out.keep_probability),
                stats.PROPOSAL_ADVANTAGE: float(out.proposal_advantage),
                stats.LEARNING_RATE: lr,
                **({stats.CRITIC_WARMUP: float(warming_up)} if hp.critic_warmup_updates else {}),
            }

    def get_modules(self):
        modules = {
            "Optimizer:target_critic": self.q_target,
            "Optimizer:actor_optimizer": self.actor_optimizer,
            "Optimizer:critic_optimizer": self.critic_optimizer,
            "Optimizer:temperature_optimizer": self.temperature_optimizer,
            STATE_MODULE: self.resume_state,
        }
        for provider in self.reward_signals.values():
            modules.update(provider.get_modules())
        return modules
