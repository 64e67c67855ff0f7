"""``FastSACOptimizer``: the SAC head (``mlagents_plugins/sac/head.py``) on the policy's observations.

Per update the head runs one fused SAC gradient step on a typed, already-on-device ``SACBatch`` (one backward of
``critic + actor + temperature`` losses, one fused Adam step over three parameter groups, one Polyak update); this
class gives it the actor (the policy's body and ``ActionModel`` at an observation), keeps the critics' observation
normalizers equal to the policy's and names the checkpoint modules.  Built-in SAC runs three backward passes and
three optimizers and also trains a V network; that and its per-update AgentBuffer conversions are most of the
speed difference.
"""
from typing import Dict, List, Optional, Tuple, cast

import attr
from mlagents.torch_utils import default_device, torch
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import TrainerSettings

from mlagents_plugins.common.compiled_step import compile_wanted
from mlagents_plugins.sac.head import SACHead
from mlagents_plugins.sac.losses import SACBatch, SACLosses
from mlagents_plugins.sac.networks import sample_for_training
from mlagents_plugins.fast_sac.settings import FastSACSettings


class FastSACOptimizer(TorchOptimizer):
    def __init__(self, policy: TorchPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        hp = cast(FastSACSettings, trainer_settings.hyperparameters)
        self.hyperparameters = hp
        self.device = default_device()
        self.action_spec = policy.behavior_spec.action_spec
        self.branches = list(self.action_spec.discrete_branches)
        self.stream_names = list(self.reward_signals.keys())
        self.gammas = [self.reward_signals[n].gamma for n in self.stream_names]
        self.use_done = [0.0 if self.reward_signals[n].ignore_done else 1.0 for n in self.stream_names]
        critic_settings = policy.network_settings
        actor_update_every = hp.resolved_actor_update_every()
        if hp.critic_hidden_units is not None:
            critic_settings = attr.evolve(critic_settings, hidden_units=int(hp.critic_hidden_units))
        self.head = SACHead(
            hp,
            self.action_spec,
            self.stream_names,
            policy.behavior_spec.observation_specs,
            critic_settings,
            actor_params=[p for p in policy.actor.parameters() if p.requires_grad],
            # Forward passes and losses, compiled when ``compile_update`` (parameters are updated outside it).
            loss_fn=self._total_loss,
            compile_update=compile_wanted(hp.compile_update, policy.behavior_spec.observation_specs),
            name="fast_sac update",
            max_steps=trainer_settings.max_steps,
            device=self.device,
            small_critic_init=hp.critics_start_small(self.action_spec.continuous_size, len(self.branches)),
            critic_warmup_updates=hp.critic_warmup_updates,
            neutral_critic_init=bool(hp.critic_neutral_init),
            batch_renorm=hp.batch_renorm_spec(),
            adam_beta1=hp.resolved_adam_beta1(),
            actor_update_every=actor_update_every,
            critic_loss_fn=self._critic_loss if actor_update_every > 1 else None,
            recipe=hp.network_recipe(),
            bf16_update=hp.update_bf16(self.device),
            value_bins=hp.critic_value_bins,
            weight_norm=bool(hp.critic_weight_norm),
        )
        self._normalize = policy.network_settings.normalize

    @property
    def critic(self):
        return self.head.q_net.q1

    def _actor(self, obs: List[torch.Tensor], mask: Optional[torch.Tensor]):
        """Sampled action and log-probs of the policy at ``obs`` (``networks.sample_for_training``)."""
        encoding, _ = self.policy.actor.network_body(obs)
        return sample_for_training(self.policy.actor.action_model, encoding, mask)

    def compute_losses(self, batch: SACBatch, update_actor: bool = True) -> SACLosses:
        """Forward passes and the four losses of one step (no parameter changes): ``losses.sac_losses``."""
        if self._normalize:
            self.head.q_net.copy_normalization_from(self.policy.actor.network_body)
            if self.head.q_target is not None:
                self.head.q_target.copy_normalization_from(self.policy.actor.network_body)
        return self.head.compute_losses(self._actor, batch, update_actor)

    def _total_loss(self, batch: SACBatch) -> Tuple[torch.Tensor, SACLosses]:
        out = self.compute_losses(batch)
        return out.total(), out

    def _critic_loss(self, batch: SACBatch) -> Tuple[torch.Tensor, SACLosses]:
        """The critic-only updates' loss (``actor_update_every`` > 1): no actor pass at ``s_tm1``."""
        out = self.compute_losses(batch, update_actor=False)
        return out.total(), out

    def update(self, batch: SACBatch) -> Tuple[Dict[str, float], torch.Tensor]:
        """One fused SAC step. Returns (stats, |TD error| [B] for replay priorities)."""
        stats, out = self.head.update(batch, self.policy.get_current_step())
        return stats, out.td_abs

    def get_modules(self):
        modules = {
            "Optimizer:q_network": self.head.q_net,
            "Optimizer:target_q_network": self.head.q_target,
            "Optimizer:temperatures": self.head.temperatures,
            "Optimizer:adam": self.head.adam,
        }
        if self.head.q_target is None:  # critic_batch_renorm: no target critics
            del modules["Optimizer:target_q_network"]
        for provider in self.reward_signals.values():
            modules.update(provider.get_modules())
        return modules
