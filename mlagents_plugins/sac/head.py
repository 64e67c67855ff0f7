"""``SACHead``: the optimizer core fast_sac and muzero_repr share - one fused SAC gradient step on a typed,
already-on-device ``SACBatch``.

The head owns the twin Q networks (``q_net``) and their Polyak-averaged copy (``q_target``), the temperatures,
one Adam over three parameter groups (the actor's, the critics', the temperatures'; plus one the optimizer adds,
e.g. muzero_repr's representation), the fp32 matmul kernel chooser (``fast_cpu_matmul``) and the compiled loss step
(``compile_update``).  The optimizer that builds it supplies the actor (an ``ActorFn``: the policy at a state), the
states the losses see (observations for fast_sac, the latent for muzero_repr) and the checkpoint keys.

Per update: one actor pass at ``s`` (with gradient) and one at ``s'`` (no gradient), one target-critic pass,
one online twin-Q pass at the taken actions and one at the actor's actions (critic weights frozen there, so the
actor loss moves only the actor; with discrete-only actions Q(s, .) does not depend on the actor and the first
pass's detached values are reused), then a *single* backward of ``critic + actor + temperature`` losses, a single
(fused) Adam step and one fused Polyak update.  On CPU the update's matmuls use oneDNN's fp32 kernel where it is
exact and, timed on the first updates, faster (``mlagents_plugins/common/fast_kernels.py``), the networks use a
fused Swish, and for vector observations the forward passes and losses run through ``torch.compile``
(``mlagents_plugins/common/compiled_step.py``), which fuses their elementwise ops.
"""
import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from mlagents.torch_utils import nn, torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.utils import ModelUtils
from mlagents_envs.base_env import ActionSpec, ObservationSpec
from mlagents_envs.logging_util import get_logger

from mlagents_plugins.common.bf16_matmul import bf16_products, use_bf16_linears_
from mlagents_plugins.common.compiled_step import CompiledStep
from mlagents_plugins.common.critic_norm import WeightProjection
from mlagents_plugins.common.fast_kernels import (
    MatmulKernelChooser,
    fuse_swish_,
    fused_adam_kwargs,
)
from mlagents_plugins.common.network_recipe import NetworkRecipe
from mlagents_plugins.common.tensor_utils import polyak_update_
from mlagents_plugins.sac import losses
from mlagents_plugins.sac.losses import SACBatch, SACLosses
from mlagents_plugins.sac.networks import Temperatures, TwinQ
from mlagents_plugins.sac.settings import SACHeadSettings

logger = get_logger(__name__)

STAT_POLICY_LOSS = "Losses/Policy Loss"
STAT_Q1_LOSS = "Losses/Q1 Loss"
STAT_Q2_LOSS = "Losses/Q2 Loss"
STAT_ENTCOEF_LOSS = "Losses/Entropy Coefficient Loss"
STAT_ENTCOEF = "Policy/Entropy Coefficient"
STAT_CONT_ENTCOEF = "Policy/Continuous Entropy Coeff"
STAT_DISC_ENTCOEF = "Policy/Discrete Entropy Coeff"
STAT_LR = "Policy/Learning Rate"
STAT_Q_MEAN = "Policy/Q Mean"
STAT_CRITIC_WARMUP = "Policy/Critic Warm-up"  # 1 while the updates train the critics alone (critic_warmup_updates)
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

#: ``loss_fn(batch) -> (the loss to differentiate, SACLosses)``: what the compiled step runs.
LossFn = Callable[[SACBatch], Tuple[torch.Tensor, SACLosses]]


class SACHead:
    """Twin Q + target copy, temperatures, one Adam, kernel chooser and compiled step of one behavior's SAC update.

    :param hp: the SAC head's settings (``fast_sac``'s, or ``muzero_repr``'s which extend them).
    :param stream_names: reward streams, one Q output per stream; ``critic_observation_specs`` and
        ``critic_network_settings`` shape the critics' bodies (muzero_repr: its latent as one vector observation).
    :param actor_params: the first Adam group (the parameters the actor loss moves); ``extra_params``, when given,
        a fourth group (same learning rate).
    :param loss_fn: the step's loss (the optimizer's: it supplies the actor and the states and calls
        ``compute_losses``), run through ``torch.compile`` when ``compile_update`` (eager fallback), its kernels
        chosen first.
    :param small_critic_init: the critics' output layers start small (``TwinQ``'s ``small_output_init``; fast_sac's
        ``critic_small_init``, which muzero_repr shares); off: ML-Agents' initialization.
    :param critic_warmup_updates: the first this many updates train the critics alone (fast_sac's
        ``critic_warmup_updates``): their step differentiates only ``q1_loss + q2_loss`` of ``loss_fn``'s
        ``SACLosses``, eagerly, so the actor and the temperatures get no gradient and Adam leaves them (and their
        moments) as they were; 0: none (muzero_repr).  Counted by the critics' Adam steps, which the checkpoint
        keeps, so ``--resume`` continues the count.
    :param neutral_critic_init: the critics start indifferent between actions (``TwinQ``'s ``action_neutral_init``;
        fast_sac's ``critic_neutral_init``); off: ML-Agents' initialization (muzero_repr).
    :param batch_renorm: (momentum, warm-up steps) of CrossQ's critics (fast_sac's ``critic_batch_renorm``): batch
        renormalization in both critics, no target critics (``q_target`` is None, no Polyak update) and the joint
        critic pass of ``losses.joint_critic_pass``; None: SAC's critics with targets.
    :param adam_beta1: Adam's first-moment rate of every group (fast_sac's ``adam_beta1``; PyTorch's 0.9 otherwise).
    :param actor_update_every: the actor and the temperatures step on every k-th update only, the critics on every
        update (fast_sac's ``actor_update_every``); the other updates run ``critic_loss_fn``, the same loss without the
        actor's pass (``losses.sac_losses`` with ``update_actor`` false).
    :param recipe: the critics' activation and initialization (fast_sac's ``network_activation`` and
        ``network_init``, ``common/network_recipe.py``); None: ML-Agents' (muzero_repr).
    :param bf16_update: the hidden layers' products in bf16 during the update (fast_sac's ``update_precision``,
        ``common/bf16_matmul.py``): the critics' hidden layers switch here, the actor's where the optimizer builds
        it; False: fp32 (muzero_repr).
    :param value_bins: binned critics (fast_sac's ``critic_value_bins``): each Q output that many logits over a
        symlog support, trained by cross-entropy against HL-Gauss targets (``losses.twin_q_cross_entropy``); 0:
        scalar critics and squared residuals (muzero_repr).
    """

    def __init__(
        self,
        hp: SACHeadSettings,
        action_spec: ActionSpec,
        stream_names: Sequence[str],
        critic_observation_specs: List[ObservationSpec],
        critic_network_settings: NetworkSettings,
        actor_params: List[nn.Parameter],
        loss_fn: LossFn,
        compile_update: bool,
        name: str,
        max_steps: int,
        device: torch.device,
        extra_params: Optional[List[nn.Parameter]] = None,
        small_critic_init: bool = False,
        critic_warmup_updates: int = 0,
        neutral_critic_init: bool = False,
        batch_renorm: Optional[Tuple[float, int]] = None,
        adam_beta1: float = 0.9,
        actor_update_every: int = 1,
        critic_loss_fn: Optional[LossFn] = None,
        recipe: Optional[NetworkRecipe] = None,
        bf16_update: bool = False,
        value_bins: int = 0,
        weight_norm: bool = False,
    ):
        self.hyperparameters = hp
        self.value_bins = int(value_bins)
        self.action_spec = action_spec
        self.branches = list(action_spec.discrete_branches)
        if self.value_bins and self.branches:  # fast_sac's feed-forward and recurrent optimizers alike
            raise TrainerConfigError(
                f"fast_sac: critic_value_bins: {self.value_bins} needs continuous-only actions, but the behavior "
                f"has discrete branches {self.branches}; allowed with them: 0 (scalar critics)"
            )
        self.q_net = TwinQ(
            list(stream_names),
            critic_observation_specs,
            critic_network_settings,
            action_spec,
            layer_norm=hp.critics_layer_normed(len(self.branches), critic_network_settings.hidden_units)
            and batch_renorm is None,
            small_output_init=small_critic_init,
            action_neutral_init=neutral_critic_init,
            batch_renorm=batch_renorm,
            recipe=recipe,
            value_bins=value_bins,
        ).to(device)
        # ``weight_norm``: fast_sac's critic_weight_norm (common/critic_norm.py ``WeightProjection``), after each step.
        self.weight_projection = WeightProjection(self.q_net.normed_linears() if weight_norm else [])
        if weight_norm and not len(self.weight_projection):
            raise TrainerConfigError(
                "fast_sac: critic_weight_norm: true needs layer-normalized critics, but these have none "
                f"(critic_layer_norm resolved off: discrete branches {self.branches}, or fewer than 64 hidden "
                "units, or critic_batch_renorm); allowed here: false"
            )
        self.weight_projection.project_()
        fuse_swish_(self.q_net)  # same function, one kernel (common/fast_kernels.py); before the target copy
        self.bf16_update = bool(bf16_update)
        bf16_layers = use_bf16_linears_(self.q_net) if self.bf16_update else 0  # before the target copy (switches too)
        # fp32 kernel choice (``fast_cpu_matmul``): not timed where the hidden products are bf16.  The fp32 products
        # left are the thin first and last layers, where oneDNN's fixed cost per call loses: the compiled step ran
        # 1.04-1.09x slower with it at 2x256 and 2x512 (same process, interleaved), while the eager updates the
        # chooser times picked it in 4 of 10 processes on a Zen 4 (bench/results/fast-sac-kernel-choice-2026-12-03).
        self.matmul_kernels = MatmulKernelChooser(device, hp.fast_cpu_matmul and not bf16_layers)
        if hp.fast_cpu_matmul and bf16_layers and torch.device(device).type == "cpu":
            # the line bench gym's records read (``matmul_kernel``), as where the kernel is timed
            logger.info("fast_cpu_matmul: default fp32 matmul kernel chosen (hidden layers in bf16: not timed)")
        self.joint_critic = batch_renorm is not None
        self.q_target: Optional[TwinQ] = None if self.joint_critic else self.q_net.make_target().to(device)
        self.temperatures = Temperatures(hp.init_entcoef, len(self.branches)).to(device)
        self.target_entropy_cont = -hp.continuous_target_entropy_scale * float(action_spec.continuous_size)
        self.actor_min_q = hp.actor_uses_min_q(len(self.branches), action_spec.continuous_size)
        self.entropy_reward = hp.entropy_in_targets(len(self.branches))
        # Built once for the Polyak update (load_state_dict copies in place, so these stay the live tensors).
        self.q_params = [p for p in self.q_net.parameters() if p.requires_grad]
        self.q_target_params = [] if self.q_target is None else [
            p for p, o in zip(self.q_target.parameters(), self.q_net.parameters()) if o.requires_grad
        ]
        groups = [
            {"params": list(actor_params)},
            {"params": self.q_params},
            {"params": list(self.temperatures.parameters())},
        ]
        if extra_params:
            groups.append({"params": list(extra_params)})
        self.adam = torch.optim.Adam(
            groups, lr=hp.learning_rate, betas=(float(adam_beta1), 0.999), **fused_adam_kwargs(device)
        )
        self.decay_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.learning_rate, 1e-10, max_steps
        )
        self.loss_step = CompiledStep(loss_fn, compile_update, name)
        # Critic-only steps at the start (TD3's and CrossQ's policy delay, here only for the first updates): the
        # actor acts with its initial, broad policy while the critics learn from what it does, instead of following
        # their random initial slopes (bench/results/tiny-defaults-2026-11-28).  Eager: a short phase, not worth a
        # second compile.
        self.critic_warmup_updates = int(critic_warmup_updates)
        self._warming_up = self.critic_warmup_updates > 0
        self.critic_only_step = CompiledStep(_critic_terms_only(loss_fn), False, name + " (critic warm-up)")
        self.actor_update_every = int(actor_update_every)
        if self.actor_update_every > 1 and critic_loss_fn is None:
            raise ValueError("SACHead: actor_update_every > 1 needs critic_loss_fn (the loss without the actor)")
        # The critic-only updates' step: its own compiled graph (no actor pass at s_tm1).
        self.critic_step = (
            CompiledStep(critic_loss_fn, compile_update, name + " (critics only)")
            if self.actor_update_every > 1 else None
        )
        self.num_updates = 0  # updates taken by this head (since the process started): the actor's cadence
        # The actor loss's critic pass reuses the critic pass's observation encodings (``losses``); same math, one
        # image-encoder pass less per critic and update with continuous actions.  Off only to measure it.
        self.share_critic_encoding = True

    def compute_losses(self, actor: losses.ActorFn, batch: SACBatch, update_actor: bool = True) -> SACLosses:
        """The four SAC losses of ``batch`` (``losses.sac_losses``) with ``actor`` as the policy at a state; the
        states are ``batch``'s (``s_tm1``, ``s_t``, ``policy_s_tm1``).  No parameter changes.

        Where the actor loss sees ``s_tm1`` itself and ``share_critic_encoding`` is on, its critic pass reuses the
        critic pass's observation encodings (``TwinQ.encoding_shared``: the same values, one encoder pass)."""
        if batch.policy_s_tm1 is None and self.share_critic_encoding and not self.joint_critic:
            critic, frozen_critic = self.q_net.encoding_shared()
        else:
            critic, frozen_critic = self.q_net, self.q_net.frozen
        nets = losses.SACNetworks(
            actor, critic, frozen_critic, self.q_target,
            self.temperatures.log_alpha_cont, self.temperatures.log_alpha_disc,
        )
        return losses.sac_losses(nets, batch, self.loss_settings(), update_actor=update_actor)

    def loss_settings(self) -> losses.SACLossSettings:
        """What ``losses.sac_losses`` needs besides the networks and the batch, from this head's settings."""
        return losses.SACLossSettings(
            branches=self.branches,
            cont_size=self.action_spec.continuous_size,
            target_entropy_cont=self.target_entropy_cont,
            discrete_entropy_scale=self.hyperparameters.discrete_target_entropy_scale,
            actor_min_q=self.actor_min_q,
            entropy_reward=self.entropy_reward,
            joint_critic=self.joint_critic,
            value_bins=self.value_bins,
        )

    def update(self, batch: SACBatch, step: int) -> Tuple[Dict[str, float], SACLosses]:
        """One SAC step on ``batch`` at trainer step ``step`` (the learning rate's schedule): one backward of
        critic + actor + temperature losses, one Adam step, one Polyak update.  Returns the stats (keys above)
        and the step's ``SACLosses`` (``td_abs``: |TD error| [B], for replay priorities)."""
        warming_up = self.warming_up()
        self.num_updates += 1
        actor_turn = self.critic_step is None or self.num_updates % self.actor_update_every == 0
        if warming_up:
            step_fn = self.critic_only_step
        else:
            step_fn = self.loss_step if actor_turn else self.critic_step
        with self.matmul_kernels.scope(), bf16_products(self.bf16_update):
            lr = self.decay_learning_rate.get_value(step)
            # On critic-only updates the actor's and the temperatures' gradients are None: Adam skips them.
            _, out = step_fn.gradient_step([self.adam], lr, batch, ready=self.matmul_kernels.decided)
            self.weight_projection.project_()
            if self.q_target is not None:
                polyak_update_(self.q_params, self.q_target_params, self.hyperparameters.tau)
        stats = sac_stats(out, self.temperatures, self.action_spec.continuous_size > 0, self.branches)
        if not actor_turn:
            # No actor pass: its loss, the temperature loss, the entropy and the per-branch entries are not measured.
            for key in [STAT_POLICY_LOSS, STAT_ENTCOEF_LOSS, STAT_ENTROPY, STAT_BRANCH_MIN_BIAS]:
                stats.pop(key, None)
            for i in range(len(self.branches)):
                stats.pop(STAT_BRANCH_ENTROPY.format(i), None)
        stats[STAT_LR] = lr
        if self.critic_warmup_updates:
            stats[STAT_CRITIC_WARMUP] = float(warming_up)
        return stats, out

    def critic_updates_taken(self) -> int:
        """Updates the critics have had: their Adam step count (saved with the checkpoint)."""
        state = self.adam.state.get(self.q_params[0], {})
        return int(state["step"]) if "step" in state else 0

    def warming_up(self) -> bool:
        """Whether the next update trains the critics alone (``critic_warmup_updates``); read from Adam's state
        until the warm-up is over, then never again."""
        if self._warming_up:
            self._warming_up = self.critic_updates_taken() < self.critic_warmup_updates
        return self._warming_up


def _critic_terms_only(loss_fn: LossFn) -> LossFn:
    """``loss_fn`` with only the critics' losses to differentiate (``q1_loss + q2_loss``), its ``SACLosses``
    unchanged (the stats still report the actor's and the temperatures' losses, which nothing minimizes then)."""

    def critic_terms(batch: SACBatch) -> Tuple[torch.Tensor, SACLosses]:
        _, out = loss_fn(batch)
        return out.q1_loss + out.q2_loss, out

    return critic_terms


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
    fast_sac and muzero_repr report the same keys.  One concatenation and one device sync for everything (the
    losses, the log temperatures, the diagnostics); the temperatures are exponentiated in Python (float64) instead
    of as tensors (the stats took 0.1 ms of a 4.7 ms update at 2x256 on one thread before,
    bench/results/fast-sac-speed-xeon-amx-2026-12-03)."""
    with torch.no_grad():
        values = torch.cat([
            out.policy_loss.reshape(1), out.q1_loss.reshape(1), out.q2_loss.reshape(1),
            out.temperature_loss.reshape(1), out.q_mean.reshape(1), out.entropy.reshape(1),
            temperatures.log_alpha_cont.reshape(-1), temperatures.log_alpha_disc.reshape(-1),
            out.diagnostics.reshape(-1),
        ]).tolist()
    policy_loss, q1_loss, q2_loss, temperature_loss, q_mean, entropy = values[:6]
    n_cont = int(temperatures.log_alpha_cont.numel())
    n_disc = int(temperatures.log_alpha_disc.numel())
    alpha_c = [math.exp(v) for v in values[6:6 + n_cont]]
    alpha_d = [math.exp(v) for v in values[6 + n_cont:6 + n_cont + n_disc]]
    diagnostics = values[6 + n_cont + n_disc:]
    a_all = alpha_c + alpha_d if has_cont else alpha_d
    stats = {
        STAT_POLICY_LOSS: policy_loss,
        STAT_Q1_LOSS: q1_loss,
        STAT_Q2_LOSS: q2_loss,
        STAT_ENTCOEF_LOSS: temperature_loss,
        STAT_ENTCOEF: sum(a_all) / len(a_all),
        STAT_Q_MEAN: q_mean,
        STAT_ENTROPY: entropy,
    }
    if has_cont:
        stats[STAT_CONT_ENTCOEF] = alpha_c[0]
    if branches:
        stats[STAT_DISC_ENTCOEF] = sum(alpha_d) / len(alpha_d)
        stats.update({STAT_BRANCH_ENTCOEF.format(i): alpha for i, alpha in enumerate(alpha_d)})
    stats.update(zip(_diagnostic_keys(len(branches)), diagnostics))
    return stats
