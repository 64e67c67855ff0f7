"""``FastSACOptimizer``: one fused SAC gradient step on a typed, already-on-device ``SACBatch``.

Per update: one actor pass at ``s`` (with gradient) and one at ``s'`` (no gradient), one target-critic pass,
one online twin-Q pass at the taken actions and one at the actor's actions (critic weights frozen there, so
the actor loss moves only the actor; with discrete-only actions Q(s, .) does not depend on the actor and the
first pass's detached values are reused), then a *single* backward of ``critic + actor + temperature`` losses and
a single (fused) Adam step over three parameter groups, and one fused Polyak update.  On CPU the update's
matmuls use oneDNN's fp32 kernel where it is exact and, timed on the first updates, faster
(``fast_cpu_matmul``), the networks use a fused Swish (``mlagents_plugins/common/fast_kernels.py``), and for
vector observations the forward passes and losses run through ``torch.compile`` (``compile_update``,
``mlagents_plugins/common/compiled_step.py``), which fuses their elementwise ops.  Built-in SAC runs three
backward passes and three optimizers and also trains a V network; that and its per-update AgentBuffer
conversions are most of the speed difference.
"""
from typing import Dict, List, NamedTuple, Optional, Tuple, cast

from mlagents.torch_utils import default_device, torch
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.utils import ModelUtils

from mlagents_plugins.common.compiled_step import CompiledStep, compile_wanted
from mlagents_plugins.common.fast_kernels import (
    MatmulKernelChooser,
    fuse_swish_,
    fused_adam_kwargs,
)
from mlagents_plugins.common.tensor_utils import polyak_update_
from mlagents_plugins.fast_sac import losses
from mlagents_plugins.fast_sac.losses import SACLosses
from mlagents_plugins.fast_sac.networks import Temperatures, TwinQ, sample_for_training
from mlagents_plugins.fast_sac.settings import FastSACSettings

STAT_POLICY_LOSS = "Losses/Policy Loss"
STAT_Q1_LOSS = "Losses/Q1 Loss"
STAT_Q2_LOSS = "Losses/Q2 Loss"
STAT_ENTCOEF_LOSS = "Losses/Entropy Coefficient Loss"
STAT_ENTCOEF = "Policy/Entropy Coefficient"
STAT_CONT_ENTCOEF = "Policy/Continuous Entropy Coeff"
STAT_DISC_ENTCOEF = "Policy/Discrete Entropy Coeff"
STAT_LR = "Policy/Learning Rate"
STAT_Q_MEAN = "Policy/Q Mean"
STAT_ENTROPY = "Policy/Entropy"
# Early warnings of a critic that drifts away from what the policy earns (issue #14, docs/fast_sac.md).
STAT_BRANCH_ENTROPY = "Policy/Entropy Branch {}"  # per discrete branch, in nats
STAT_BRANCH_ENTCOEF = "Policy/Discrete Entropy Coeff Branch {}"  # per discrete branch temperature
STAT_Q_ABS = "Q/Q1 Abs Mean"  # mean |Q1| of the taken actions
STAT_Q_STD = "Q/Q1 Std"  # spread of Q1 over the batch
STAT_TWIN_GAP = "Q/Twin Gap"  # mean |Q1 - Q2| of the taken actions
STAT_TARGET_MEAN = "Q/Target Mean"  # mean TD target
STAT_TARGET_DRIFT = "Q/Target Drift"  # mean (target - Q1): where the targets pull the critic, signed
# Discrete only: how far E_pi of the critics' entrywise minimum lies below the minimum of their expectations
# (>= 0); grows when the two critics split Q(s, a) into per-branch heads differently.
STAT_BRANCH_MIN_BIAS = "Q/Branch Min Bias"


class SACBatch(NamedTuple):
    """One minibatch on the training device. ``B`` rows, ``N`` n-step window, ``S`` reward streams."""

    obs: List[torch.Tensor]  # observations at t, each [B, ...]
    next_obs: List[torch.Tensor]  # observations after the window's last valid step, each [B, ...]
    cont_actions: Optional[torch.Tensor]  # [B, C] taken continuous actions (tanh-squashed)
    disc_actions: Optional[torch.Tensor]  # [B, K] taken discrete actions (long)
    action_mask: Optional[torch.Tensor]  # [B, A] 1 = allowed, at t
    next_action_mask: Optional[torch.Tensor]  # [B, A] at the bootstrap observation
    r_t: torch.Tensor  # [B, N, S] rewards per stream (strength applied)
    discount_t: torch.Tensor  # [B, N, S] gamma_s * (1 - terminal) (terminal ignored for ignore_done streams)
    valid_t: torch.Tensor  # [B, N] bool, step belongs to the start row's segment
    weights: Optional[torch.Tensor]  # [B] PER importance weights or None


class FastSACOptimizer(TorchOptimizer):
    def __init__(self, policy: TorchPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        hp = cast(FastSACSettings, trainer_settings.hyperparameters)
        self.hyperparameters = hp
        self.device = default_device()
        self.matmul_kernels = MatmulKernelChooser(self.device, hp.fast_cpu_matmul)
        self.action_spec = policy.behavior_spec.action_spec
        self.branches = list(self.action_spec.discrete_branches)
        self.stream_names = list(self.reward_signals.keys())
        self.gammas = [self.reward_signals[n].gamma for n in self.stream_names]
        self.use_done = [0.0 if self.reward_signals[n].ignore_done else 1.0 for n in self.stream_names]
        self.tau = hp.tau
        self.q = TwinQ(
            self.stream_names,
            policy.behavior_spec.observation_specs,
            policy.network_settings,
            self.action_spec,
            layer_norm=hp.critics_layer_normed(len(self.branches)),
        ).to(self.device)
        fuse_swish_(self.q)
        self.q_target = self.q.make_target().to(self.device)
        self.temperatures = Temperatures(hp.init_entcoef, len(self.branches)).to(self.device)
        self.target_entropy_cont = -hp.continuous_target_entropy_scale * float(self.action_spec.continuous_size)
        self.discrete_entropy_scale = hp.discrete_target_entropy_scale
        self._q_params = [p for p in self.q.parameters() if p.requires_grad]
        self._q_target_params = [p for p, o in zip(self.q_target.parameters(), self.q.parameters()) if o.requires_grad]
        actor_params = [p for p in policy.actor.parameters() if p.requires_grad]
        self.adam = torch.optim.Adam(
            [
                {"params": actor_params},
                {"params": self._q_params},
                {"params": list(self.temperatures.parameters())},
            ],
            lr=hp.learning_rate,
            **fused_adam_kwargs(self.device),
        )
        self.decay_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.learning_rate, 1e-10, trainer_settings.max_steps
        )
        self._normalize = policy.network_settings.normalize
        self.actor_q1_only = not hp.actor_uses_min_q(len(self.branches))
        self.entropy_reward = hp.entropy_in_targets(len(self.branches))
        # Forward passes and losses, compiled when ``compile_update`` (parameters are updated outside it).
        compile_update = compile_wanted(hp.compile_update, policy.behavior_spec.observation_specs)
        self.loss_step = CompiledStep(self._total_loss, compile_update, "fast_sac update")

    @property
    def critic(self):
        return self.q.q1

    def _actor(self, obs: List[torch.Tensor], mask: Optional[torch.Tensor]):
        """Sampled action and log-probs of the policy at ``obs`` (``networks.sample_for_training``)."""
        encoding, _ = self.policy.actor.network_body(obs)
        return sample_for_training(self.policy.actor.action_model, encoding, mask)

    def compute_losses(self, batch: SACBatch) -> SACLosses:
        """Forward passes and the four losses of one step (no parameter changes): ``losses.sac_losses``."""
        if self._normalize:
            self.q.copy_normalization_from(self.policy.actor.network_body)
            self.q_target.copy_normalization_from(self.policy.actor.network_body)
        return losses.sac_losses(
            self._actor, self.q, self.q.frozen, self.q_target,
            s_tm1=batch.obs, a_tm1_cont=batch.cont_actions, a_tm1_disc=batch.disc_actions, mask_tm1=batch.action_mask,
            r_t=batch.r_t, discount_t=batch.discount_t, valid_t=batch.valid_t,
            s_t=batch.next_obs, mask_t=batch.next_action_mask,
            log_alpha_cont=self.temperatures.log_alpha_cont, log_alpha_disc=self.temperatures.log_alpha_disc,
            target_entropy_cont=self.target_entropy_cont, discrete_entropy_scale=self.discrete_entropy_scale,
            branches=self.branches, cont_size=self.action_spec.continuous_size, actor_min_q=not self.actor_q1_only,
            weights=batch.weights, entropy_reward=self.entropy_reward,
        )

    def _total_loss(self, batch: SACBatch) -> Tuple[torch.Tensor, SACLosses]:
        out = self.compute_losses(batch)
        return out.total(), out

    def update(self, batch: SACBatch) -> Tuple[Dict[str, float], torch.Tensor]:
        """One fused SAC step. Returns (stats, |TD error| [B] for replay priorities)."""
        with self.matmul_kernels.scope():
            lr = self.decay_learning_rate.get_value(self.policy.get_current_step())
            _, out = self.loss_step.gradient_step([self.adam], lr, batch, ready=self.matmul_kernels.decided)
            polyak_update_(self._q_params, self._q_target_params, self.tau)

        stats = sac_stats(out, self.temperatures, self.action_spec.continuous_size > 0, self.branches)
        stats[STAT_LR] = lr
        return stats, out.td_abs

    def get_modules(self):
        modules = {
            "Optimizer:q_network": self.q,
            "Optimizer:target_q_network": self.q_target,
            "Optimizer:temperatures": self.temperatures,
            "Optimizer:adam": self.adam,
        }
        for provider in self.reward_signals.values():
            modules.update(provider.get_modules())
        return modules


def _diagnostic_keys(num_branches: int) -> List[str]:
    """The stat key of each entry of ``SACLosses.diagnostics`` (``losses.sac_diagnostics``), in its order; the
    branch min bias entry is a placeholder 0 without discrete branches and is not reported then."""
    keys = [STAT_Q_ABS, STAT_Q_STD, STAT_TWIN_GAP, STAT_TARGET_MEAN, STAT_TARGET_DRIFT]
    if num_branches:
        keys.append(STAT_BRANCH_MIN_BIAS)
        keys += [STAT_BRANCH_ENTROPY.format(i) for i in range(num_branches)]
    return keys


def sac_stats(out: SACLosses, temperatures: Temperatures, has_cont: bool, branches: List[int]) -> Dict[str, float]:
    """The SAC head's stats (keys above) from one step's ``SACLosses`` and the temperatures after the step;
    fast_sac and muzero_repr report the same keys.  One device sync for the scalars, one for the diagnostics."""
    with torch.no_grad():
        alpha_c = temperatures.log_alpha_cont.exp()
        alpha_d = temperatures.log_alpha_disc.exp()
        a_all = torch.cat([alpha_c, alpha_d]) if has_cont else alpha_d
        scalars = {
            STAT_POLICY_LOSS: out.policy_loss.detach(),
            STAT_Q1_LOSS: out.q1_loss.detach(),
            STAT_Q2_LOSS: out.q2_loss.detach(),
            STAT_ENTCOEF_LOSS: out.temperature_loss.detach(),
            STAT_ENTCOEF: a_all.mean(),
            STAT_Q_MEAN: out.q_mean,
            STAT_ENTROPY: out.entropy,
        }
        if has_cont:
            scalars[STAT_CONT_ENTCOEF] = alpha_c[0]
        if branches:
            scalars[STAT_DISC_ENTCOEF] = alpha_d.mean()
            scalars.update({STAT_BRANCH_ENTCOEF.format(i): alpha for i, alpha in enumerate(alpha_d.unbind())})
        stats = dict(zip(scalars, torch.stack(list(scalars.values())).tolist()))
    stats.update(zip(_diagnostic_keys(len(branches)), out.diagnostics.tolist()))
    return stats
