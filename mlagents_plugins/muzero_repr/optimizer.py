"""Optimizer of muzero_repr: the learned model's MuZero update and the SAC head's update, each on a typed batch.

The trainer samples the replay buffer and builds the batches (``muzero_repr/batch.py``: ``ModelBatch`` for the
model, the SAC head's ``SACBatch``) and writes the PER priorities; this class runs the networks, calls
the pure loss functions and steps the optimizers.

Model update (MuZero Sec. 3 eq. 1, Appendix G; deviations noted): unroll ``num_unroll_steps`` with the actions
taken, targets from ``targets.compute_unroll_targets`` with bootstrap values from a periodically/Polyak-updated
target model, losses from ``losses.model_losses`` (recurrent steps scaled by 1/K, MuZero pseudocode
``update_weights``), gradient entering the dynamics scaled by ``recurrent_gradient_scaling_factor``.

RL head: the SAC head fast_sac runs (``mlagents_plugins/sac/``, the same code): ``SACHead`` computes its losses
(``sac.losses.sac_losses``: soft n-step targets, twin Q, actor, temperatures) with the latent h(o) as the state.
The critic's latent is detached unless ``rl_gradient_to_repr`` (ALF's default: the RL loss does not shape the
representation); the actor's always is.
Reward: the environment reward times the extrinsic signal's strength, discount its gamma.
"""
from typing import Dict, List, NamedTuple, Optional, Tuple

from mlagents.torch_utils import default_device, nn, torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import (
    NetworkSettings,
    RewardSignalType,
    TrainerSettings,
)
from mlagents.trainers.torch_entities.utils import ModelUtils

from mlagents_plugins.common.compiled_step import CompiledStep, compile_wanted
from mlagents_plugins.common.fast_kernels import (
    MatmulKernelChooser,
    fuse_swish_,
    fused_adam_kwargs,
)
from mlagents_plugins.common.tensor_utils import polyak_update_, target_copy
from mlagents_plugins.muzero_repr import losses as muzero_losses
from mlagents_plugins.muzero_repr.actor import MuZeroActor, latent_observation_spec
from mlagents_plugins.muzero_repr.batch import ModelBatch
from mlagents_plugins.muzero_repr.networks import MuZeroModel
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.muzero_repr.targets import UnrollTargets, compute_unroll_targets
from mlagents_plugins.sac.head import SACHead
from mlagents_plugins.sac.losses import SACBatch, SACLosses
from mlagents_plugins.sac.networks import sample_for_training

# ---- stats keys -------------------------------------------------------------------------------------
STAT_MODEL_LOSS = "Losses/MuZero Model Loss"
STAT_VALUE_LOSS = "MuZero/Value Loss step {k}"
STAT_REWARD_LOSS = "MuZero/Reward Loss step {k}"
STAT_POLICY_LOSS = "MuZero/Policy Loss step {k}"
STAT_CONSISTENCY_LOSS = "MuZero/Consistency Loss step {k}"
STAT_GAME_OVER_LOSS = "MuZero/Game Over Loss"
STAT_LATENT_NORM = "MuZero/Latent Norm step {k}"
# Mean over latent dimensions of the batch's standard deviation of s_0 = h(o): near 0 when h maps every
# observation to nearly the same latent (a collapsed representation), whatever the norm.
STAT_LATENT_STD = "MuZero/Latent Batch Std"
# Value targets z_0 of the start rows: mean and range (what the value head, and through the priorities the
# sampling, are pulled towards), and the model's own value prediction v_0 read as a scalar.
STAT_VALUE_TARGET = "MuZero/Value Target"
STAT_VALUE_TARGET_MIN = "MuZero/Value Target Min"
STAT_VALUE_TARGET_MAX = "MuZero/Value Target Max"
STAT_VALUE_PREDICTION = "MuZero/Value Prediction"
STAT_PRIORITY_MEAN = "MuZero/Priority Mean"
STAT_PRIORITY_MAX = "MuZero/Priority Max"
STAT_MODEL_UPDATES = "MuZero/Model Updates"
STAT_PER_BETA = "MuZero/PER Beta"
STAT_MODEL_LR = "MuZero/Learning Rate"
# The SAC head reports fast_sac's keys (mlagents_plugins/sac/head.py: Losses/Q1 Loss, Policy/Entropy
# Coefficient, Q/Q1 Abs Mean, ...), computed by the same code.

EXTRINSIC = RewardSignalType.EXTRINSIC.value


def check_reward_signals(names: List[str]) -> None:
    """Only the extrinsic reward: the learned model predicts the environment reward and the RL head uses the
    same reward, so an intrinsic signal (curiosity, RND, GAIL) would be trained by nothing and used by no one."""
    if list(names) != [EXTRINSIC]:
        raise TrainerConfigError(
            f"reward_signals = {sorted(names)} is not supported by muzero_repr: allowed is exactly one "
            f"'{EXTRINSIC}' signal (the learned model predicts the environment reward)."
        )


class ModelForward(NamedTuple):
    """The model update's forward pass: its losses, the targets they were computed against, latent diagnostics."""

    losses: muzero_losses.ModelLosses
    targets: UnrollTargets
    latent_norm_k: torch.Tensor  # [K+1] mean norm of s_k (no gradient)
    latent_std: torch.Tensor  # mean over dimensions of the batch's standard deviation of s_0 (no gradient)


class MuZeroReprOptimizer(TorchOptimizer):
    def __init__(self, policy: TorchPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        hp: MuZeroReprSettings = trainer_settings.hyperparameters  # type: ignore
        self.hyperparameters = hp
        check_reward_signals(list(self.reward_signals.keys()))
        self.device = default_device()
        self.actor: MuZeroActor = policy.actor  # type: ignore
        self.spec = policy.behavior_spec
        self.action_spec = self.spec.action_spec
        self.branches = list(self.action_spec.discrete_branches)
        self.n_obs = len(self.spec.observation_specs)
        signal = self.reward_signals[EXTRINSIC]
        self.gamma = float(signal.gamma)
        self.reward_scale = float(signal.strength)
        self.stream_names = [EXTRINSIC]

        # ---- learned model (shares h with the actor) ----
        self.transform_eps = hp.value_transform_eps if hp.value_transform else -1.0
        self.model = MuZeroModel(
            self.spec.observation_specs,
            self.action_spec,
            trainer_settings.network_settings,
            latent_size=hp.latent_size,
            hidden_units=hp.model_hidden_units,
            num_layers=hp.model_num_layers,
            support_size=hp.support_size,
            game_over_head=hp.train_game_over,
            consistency_head=hp.train_repr_prediction,
            representation=self.actor.representation,
        ).to(self.device)
        # Same function, one kernel (mlagents_plugins/common/fast_kernels.py); before the target copies are made.
        fuse_swish_(self.actor)
        fuse_swish_(self.model)
        self.target_model = target_copy(self.model)
        adam = fused_adam_kwargs(self.device)
        self.model_opt = torch.optim.Adam(self.model.parameters(), lr=hp.model_learning_rate, **adam)

        # ---- SAC head on the latent (mlagents_plugins/sac/head.py, as fast_sac): one backward, one Adam ----
        # learning_rate_schedule anneals both step sizes (the RL head's and the model's) the same way.
        self.decay_model_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.model_learning_rate, 1e-10, trainer_settings.max_steps
        )
        # compile_update: each update's forward passes and losses through torch.compile once its kernel is chosen
        # (compiled_step.py; fast_sac and taac do the same); fast_cpu_matmul: one kernel chooser per update kind,
        # so each times one kind of work.
        compile_update = compile_wanted(hp.compile_update, self.spec.observation_specs)
        head_units, head_layers = hp.head_size(trainer_settings.network_settings)  # as the actor's (trainer.py)
        self.head = SACHead(
            hp,
            self.action_spec,
            self.stream_names,
            [latent_observation_spec(hp.latent_size)],
            NetworkSettings(hidden_units=head_units, num_layers=head_layers),
            actor_params=self.actor.head_parameters(),
            loss_fn=self._rl_total,
            compile_update=compile_update,
            name="muzero_repr SAC head update",
            max_steps=trainer_settings.max_steps,
            device=self.device,
            extra_params=(
                list(self.actor.representation.parameters()) if self.actor.network_body.rl_gradient_to_repr else None
            ),
            small_critic_init=hp.critics_start_small(self.action_spec.continuous_size, len(self.branches)),
        )
        self.model_matmul = MatmulKernelChooser(self.device, hp.fast_cpu_matmul)
        self.model_step = CompiledStep(self._model_total, compile_update, "muzero_repr model update")
        self.loss_weights = muzero_losses.ModelLossWeights(
            value=hp.value_loss_weight,
            reward=hp.reward_loss_weight,
            policy=hp.policy_loss_weight,
            game_over=hp.game_over_loss_weight,
            consistency=hp.repr_prediction_loss_weight,
        )

    @property
    def num_model_updates(self) -> int:
        """Model updates made so far (checkpointed with the actor, so both refresh cadences continue on resume)."""
        return int(self.actor.network_body.model_updates)

    @property
    def critic(self):
        return self.head.q_net

    def get_modules(self) -> Dict[str, nn.Module]:
        modules = {
            "Optimizer:muzero_model": self.model,
            "Optimizer:muzero_target_model": self.target_model,
            "Optimizer:q_net": self.head.q_net,
            "Optimizer:target_q": self.head.q_target,
            "Optimizer:temperatures": self.head.temperatures,
            "Optimizer:model_opt": self.model_opt,
            "Optimizer:rl_opt": self.head.adam,
        }
        for name, signal in self.reward_signals.items():
            modules.update(signal.get_modules())
        return modules

    # ------------------------------------------------------------------ model update
    def update_target_model(self, tau: float) -> None:
        """Move the target model's weights by ``tau``; copy its buffers (observation normaliser statistics)."""
        polyak_update_(list(self.model.parameters()), list(self.target_model.parameters()), tau)
        with torch.no_grad():
            for b_target, b in zip(self.target_model.buffers(), self.model.buffers()):
                b_target.copy_(b)

    def model_loss(self, batch: ModelBatch) -> ModelForward:
        """The learned model's forward pass on ``batch`` (target model for the bootstrap values, unroll, consistency
        targets) and its losses (``losses.model_losses``)."""
        hp = self.hyperparameters
        K, n = hp.num_unroll_steps, hp.td_steps
        B = batch.r_t.shape[0]
        with torch.no_grad():
            v_boot = muzero_losses.prediction_to_scalar(
                self.target_model.initial_inference(batch.boot_obs).value, hp.support_size, self.transform_eps
            ).reshape(B, K + 1)
            v_t = torch.zeros_like(batch.r_t).scatter(1, batch.boot_rows_k, v_boot)
            tg = compute_unroll_targets(batch.r_t, batch.terminal_t, batch.terminal_t, batch.valid_t,
                                        v_t, self.gamma, K, n)
        out = self.model.unroll_stacked(batch.obs_0, batch.actions_enc_k, hp.recurrent_gradient_scaling_factor)
        policy = out.policy_k[:, :K] if hp.policy_loss_weight > 0 and K > 0 else None
        online = target = None
        if hp.train_repr_prediction and K > 0:
            with torch.no_grad():
                flat = [o.reshape(B * K, *o.shape[2:]) for o in batch.obs_future]
                body = self.actor.network_body
                encoder = body.target_representation if hp.repr_prediction_target == "target" else body.representation
                target = self.model.consistency_target(encoder(flat)).reshape(B, K, -1)
            online = self.model.consistency_online(out.latent_k[:, 1:].reshape(B * K, -1)).reshape(B, K, -1)
        losses = muzero_losses.model_losses(
            out.value_k, out.reward_k, policy, out.game_over_logit_k, online, target, tg,
            batch.is_weights, batch.cont_action_k, batch.disc_action_k, self.branches,
            support_size=hp.support_size, transform_eps=self.transform_eps, loss_weights=self.loss_weights,
            consistency_loss=hp.repr_prediction_loss,
        )
        with torch.no_grad():
            latent_norm = out.latent_k.norm(dim=-1).mean(dim=0)
            latent_std = out.latent_k[:, 0].std(dim=0, unbiased=False).mean()
        return ModelForward(losses, tg, latent_norm, latent_std)

    def _model_total(self, batch: ModelBatch) -> Tuple[torch.Tensor, ModelForward]:
        fwd = self.model_loss(batch)
        return fwd.losses.total, fwd

    def update_model(self, batch: ModelBatch) -> Tuple[Dict[str, float], torch.Tensor]:
        """One model update on ``batch``: one backward, gradient clipping, one Adam step, the target model's
        update on its period.  Returns the stats and the start rows' value errors ``|v_0 - z_0|`` ``[B]`` (from
        the weights before the step), from which the trainer writes the PER priorities."""
        hp = self.hyperparameters
        with self.model_matmul.scope():
            model_lr = self.decay_model_learning_rate.get_value(self.policy.get_current_step())
            # model_opt updates exactly self.model's parameters, so its gradients are the ones clipped.
            total, fwd = self.model_step.gradient_step(
                [self.model_opt], model_lr, batch, ready=self.model_matmul.decided,
                max_grad_norm=hp.model_grad_clip if hp.model_grad_clip > 0 else None,
            )
        body = self.actor.network_body
        body.model_updates.add_(1)
        count = self.num_model_updates
        if count % hp.model_target_update_period == 0:
            self.update_target_model(hp.model_target_update_tau)
        if count % hp.head_repr_update_period == 0:
            body.refresh_target(hp.head_repr_update_tau)
        out, z0 = fwd.losses, fwd.targets.value_target_k[:, 0]
        vals = torch.stack(
            [total.detach(), z0.mean(), z0.min(), z0.max(), out.value_0.mean(), fwd.latent_std]
        ).tolist()
        stats = {
            STAT_MODEL_LOSS: vals[0],
            STAT_VALUE_TARGET: vals[1],
            STAT_VALUE_TARGET_MIN: vals[2],
            STAT_VALUE_TARGET_MAX: vals[3],
            STAT_VALUE_PREDICTION: vals[4],
            STAT_LATENT_STD: vals[5],
        }
        for key, per_step, first in ((STAT_VALUE_LOSS, out.value_k, 0), (STAT_REWARD_LOSS, out.reward_k, 1),
                                     (STAT_POLICY_LOSS, out.policy_k, 0), (STAT_CONSISTENCY_LOSS, out.consistency_k, 1)):
            if per_step is not None:
                for j, v in enumerate(per_step.tolist()):
                    stats[key.format(k=j + first)] = float(v)
        if out.game_over_k is not None:
            stats[STAT_GAME_OVER_LOSS] = float(out.game_over_k.mean().item())
        for k, v in enumerate(fwd.latent_norm_k.tolist()):
            stats[STAT_LATENT_NORM.format(k=k)] = v
        stats[STAT_MODEL_UPDATES] = float(self.num_model_updates)
        stats[STAT_MODEL_LR] = float(model_lr)
        return stats, out.value_err

    # ------------------------------------------------------------------ RL head (SAC on the latent)
    def _actor_on_latent(self, z: List[torch.Tensor], mask: Optional[torch.Tensor]):
        """The ``ActorFn`` of ``sac.losses.sac_losses`` on the latent ``[z]``: the policy MLP, then the SAC head's
        sampling path (``sac.networks.sample_for_training``)."""
        return sample_for_training(self.actor.action_model, self.actor.network_body.head(z[0]), mask)

    def rl_losses(self, batch: SACBatch) -> SACLosses:
        """The SAC head's losses (``sac.losses.sac_losses``, as fast_sac) with the latent as the state.

        The critic sees ``h(o)``, attached when ``rl_gradient_to_repr`` (``LatentBody.latent``); the actor loss
        sees it detached always, so only the critic's TD loss shapes h (SAC-AE, Yarats et al. 2019 Sec. 6, and
        DrQ: actor gradients into a shared encoder hurt).  The bootstrap latent carries no gradient.
        """
        body = self.actor.network_body
        if body.read_target or not body.rl_gradient_to_repr:
            # No gradient into any encoder: one encoder pass over start and bootstrap observations together.
            B = batch.s_tm1[0].shape[0]
            z = body.head_latent([torch.cat([a, b], dim=0) for a, b in zip(batch.s_tm1, batch.s_t)])
            z_tm1, z_t = z[:B], z[B:]
        else:
            z_tm1 = body.latent(batch.s_tm1)
            with torch.no_grad():
                z_t = self.actor.representation(batch.s_t)
        latent = batch._replace(s_tm1=[z_tm1], s_t=[z_t], policy_s_tm1=[z_tm1.detach()])
        return self.head.compute_losses(self._actor_on_latent, latent)

    def _rl_total(self, batch: SACBatch) -> Tuple[torch.Tensor, SACLosses]:
        out = self.rl_losses(batch)
        return out.total(), out

    def update_rl(self, batch: SACBatch) -> Dict[str, float]:
        """One SAC update of the RL head on ``batch``: one backward of critic + actor + temperature losses, one
        Adam step, one Polyak update (as fast_sac).  With PER its critic loss is importance-weighted; the
        priorities stay the model's value errors (the RL head does not write them)."""
        stats, _ = self.head.update(batch, self.policy.get_current_step())
        return stats
