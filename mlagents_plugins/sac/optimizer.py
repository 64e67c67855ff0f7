"""``FastSACOptimizer``: one fused SAC gradient step on a typed, already-on-device ``SACBatch``.

Per update: one actor pass at ``s`` (with gradient) and one at ``s'`` (no gradient), one target-critic pass,
one online twin-Q pass at the taken actions and one at the actor's actions (critic weights frozen there, so
the actor loss moves only the actor; with discrete-only actions Q(s, .) does not depend on the actor and the
first pass's detached values are reused), then a *single* backward of ``critic + actor + temperature`` losses and
a single (fused) Adam step over three parameter groups, and one fused Polyak update.  On CPU the update's
matmuls use oneDNN's fp32 kernel where it is exact and, timed on the first updates, faster
(``fast_cpu_matmul``), the networks use a fused Swish (``mlagents_plugins/fast_kernels.py``), and for
vector observations the forward passes and losses run through ``torch.compile`` (``compile_update``,
``mlagents_plugins/compiled_step.py``), which fuses their elementwise ops.  Built-in SAC runs three
backward passes and three optimizers and also trains a V network; that and its per-update AgentBuffer
conversions are most of the speed difference.
"""
from typing import Dict, List, NamedTuple, Optional, Tuple, cast

import numpy as np

from mlagents.torch_utils import default_device, torch
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.utils import ModelUtils

from mlagents_plugins.compiled_step import CompiledStep
from mlagents_plugins.fast_kernels import MatmulKernelChooser, fuse_swish_, fused_adam_kwargs
from mlagents_plugins.sac import losses as L
from mlagents_plugins.sac.networks import Temperatures, TwinQ, polyak_update_
from mlagents_plugins.sac.settings import FastSACSettings

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


class SACLosses(NamedTuple):
    q1_loss: torch.Tensor
    q2_loss: torch.Tensor
    policy_loss: torch.Tensor
    temperature_loss: torch.Tensor
    td_abs: torch.Tensor  # [B] |TD error| (no gradient)
    q_mean: torch.Tensor  # mean Q1 of the taken actions (no gradient)
    entropy: torch.Tensor  # mean policy entropy estimate (no gradient)
    diagnostics: torch.Tensor  # [6 + 2K] no gradient: see FastSACOptimizer._diagnostics


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
            self.stream_names, policy.behavior_spec.observation_specs, policy.network_settings, self.action_spec
        ).to(self.device)
        fuse_swish_(self.q)
        self.q_target = self.q.make_target().to(self.device)
        self.temperatures = Temperatures(hp.init_entcoef, len(self.branches)).to(self.device)
        self.target_entropy_cont = -hp.continuous_target_entropy_scale * float(self.action_spec.continuous_size)
        self.discrete_entropy_scale = hp.discrete_target_entropy_scale
        self.target_entropy_disc = [hp.discrete_target_entropy_scale * float(np.log(n)) for n in self.branches]
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
        use_min = hp.actor_min_q if hp.actor_min_q is not None else len(self.branches) > 0
        self.actor_q1_only = not use_min
        # Forward passes and losses, compiled when ``compile_update`` (parameters are updated outside it).
        compile_update = hp.compile_update
        if compile_update is None:  # automatic: vector observations only (see FastSACSettings.compile_update)
            compile_update = all(len(s.shape) == 1 for s in policy.behavior_spec.observation_specs)
        self.loss_step = CompiledStep(self._total_loss, compile_update, "fast_sac update")

    @property
    def critic(self):
        return self.q.q1

    def _actor(self, obs: List[torch.Tensor], mask: Optional[torch.Tensor]):
        """Sampled action and log-probs: (cont action [B,C] | None, log pi_cont [B] | None, log p_disc [B,A] | None).

        Same distributions as the policy's ``ActionModel`` (which acts in the environment and is exported), read
        from its own layers, but without what training does not use: the continuous part goes through
        ``losses.tanh_gaussian_sample`` instead of transform objects and entropies, and discrete actions are
        not sampled at all (the losses take the exact expectation over ``log p_disc``).
        """
        actor = self.policy.actor
        encoding, _ = actor.network_body(obs)
        model = actor.action_model
        cont = lp_c = lp_d = None
        if self.action_spec.continuous_size > 0:
            gauss = model._continuous_distribution
            mu = gauss.mu(encoding)
            if gauss.conditional_sigma:
                log_sigma = torch.clamp(gauss.log_sigma(encoding), min=-20, max=2)
            else:
                log_sigma = gauss.log_sigma.expand_as(mu)
            cont, lp_c = L.tanh_gaussian_sample(mu, log_sigma, torch.randn_like(mu))
        if self.branches:
            dists = model._discrete_distribution(encoding, mask)
            lp_d = torch.cat([d.all_log_prob() for d in dists], dim=1)
        return cont, lp_c, lp_d

    def compute_losses(self, batch: SACBatch) -> SACLosses:
        """Forward passes and the four losses of one step (no parameter changes)."""
        if self._normalize:
            self.q.copy_normalization_from(self.policy.actor.network_body)
            self.q_target.copy_normalization_from(self.policy.actor.network_body)
        temps = self.temperatures
        alpha_c = temps.log_alpha_cont.detach().exp()
        alpha_d = temps.log_alpha_disc.detach().exp()

        with torch.no_grad():
            a_next, lp_c_next, lp_d_next = self._actor(batch.next_obs, batch.next_action_mask)
            tq1, tq2 = self.q_target(batch.next_obs, a_next)
            v_boot = L.soft_value(torch.minimum(tq1, tq2), lp_c_next, lp_d_next, alpha_c, alpha_d, self.branches)
            y, _ = L.n_step_targets(batch.r_t, batch.discount_t, batch.valid_t, v_boot)

        q1_all, q2_all = self.q(batch.obs, batch.cont_actions)  # [B, S, A]
        if self.branches:
            q1 = L.condense_q(q1_all, batch.disc_actions, self.branches)
            q2 = L.condense_q(q2_all, batch.disc_actions, self.branches)
        else:
            q1, q2 = q1_all[:, :, 0], q2_all[:, :, 0]
        q1_loss, q2_loss, td_abs = L.twin_q_loss(q1, q2, y, batch.weights)

        a_pi, lp_c, lp_d = self._actor(batch.obs, batch.action_mask)
        if a_pi is None:
            # Discrete-only: Q(s, .) does not depend on the actor, so the critic pass above already holds every
            # action's value; detached, the actor loss reaches the actor only (and a second pass is saved).
            q_pi = (q1_all if self.actor_q1_only else torch.minimum(q1_all, q2_all)).detach()
        else:
            # Critic weights detached for the actor's Q evaluation: the actor loss reaches the actor only.
            q_pi1, q_pi2 = self.q.frozen(batch.obs, a_pi, first_only=self.actor_q1_only)
            q_pi = q_pi1 if q_pi2 is None else torch.minimum(q_pi1, q_pi2)
        pi_loss = L.policy_loss(q_pi, lp_c, lp_d, alpha_c, alpha_d, self.branches)
        target_disc = self.target_entropy_disc
        if self.branches and batch.action_mask is not None:
            target_disc = L.masked_target_entropy(batch.action_mask, self.branches, self.discrete_entropy_scale)
        ent_loss = L.temperature_loss(
            temps.log_alpha_cont, temps.log_alpha_disc, lp_c, lp_d, self.target_entropy_cont, target_disc, self.branches
        )
        with torch.no_grad():
            entropy = -(lp_c.mean() if lp_c is not None else q1.new_zeros(()))
            if lp_d is not None:
                entropy = entropy - L.branch_sums(lp_d.exp() * lp_d, self.branches).sum(dim=1).mean()
            diagnostics = self._diagnostics(q1.detach(), q2.detach(), y, q1_all.detach(), q2_all.detach(), lp_d)
        return SACLosses(q1_loss, q2_loss, pi_loss, ent_loss, td_abs, q1.detach().mean(), entropy, diagnostics)

    def _diagnostics(self, q1, q2, y, q1_all, q2_all, lp_d) -> torch.Tensor:
        """[|Q1| mean, Q1 std, |Q1 - Q2| mean, target mean, mean(target - Q1), branch min bias,
        per-branch entropies [K], per-branch temperatures [K]] as one tensor (one device sync)."""
        zero = q1.new_zeros(())
        parts = [q1.abs().mean(), q1.std(unbiased=False), (q1 - q2).abs().mean(), y.mean(), (y - q1).mean()]
        if lp_d is not None:
            p = lp_d.exp().unsqueeze(1)  # [B, 1, A]
            e_q1 = L.branch_sums(q1_all * p, self.branches).mean(dim=-1)
            e_q2 = L.branch_sums(q2_all * p, self.branches).mean(dim=-1)
            e_min = L.branch_sums(torch.minimum(q1_all, q2_all) * p, self.branches).mean(dim=-1)
            parts.append((torch.minimum(e_q1, e_q2) - e_min).mean())
            parts.extend((-L.branch_sums(lp_d.exp() * lp_d, self.branches)).mean(dim=0).unbind())
            parts.extend(self.temperatures.log_alpha_disc.detach().exp().unbind())
        else:
            parts.append(zero)
        return torch.stack(parts)

    def _total_loss(self, batch: SACBatch) -> Tuple[torch.Tensor, SACLosses]:
        out = self.compute_losses(batch)
        return out.q1_loss + out.q2_loss + out.policy_loss + out.temperature_loss, out

    def _zero_grad(self) -> None:
        self.adam.zero_grad(set_to_none=True)

    def update(self, batch: SACBatch) -> Tuple[Dict[str, float], torch.Tensor]:
        """One fused SAC step. Returns (stats, |TD error| [B] for replay priorities)."""
        with self.matmul_kernels.scope():
            lr = self.decay_learning_rate.get_value(self.policy.get_current_step())
            for g in self.adam.param_groups:
                g["lr"] = lr
            self.adam.zero_grad(set_to_none=True)
            # Compiled only once the matmul kernel is chosen: the kernel switch is global state that torch.compile
            # guards on, so compiling while the chooser alternates would compile twice.
            if self.matmul_kernels.decided:
                _, out = self.loss_step.forward_backward(self._zero_grad, batch)
            else:
                total, out = self._total_loss(batch)
                total.backward()
            self.adam.step()
            polyak_update_(self._q_params, self._q_target_params, self.tau)

        with torch.no_grad():
            alpha_c = self.temperatures.log_alpha_cont.exp()
            alpha_d = self.temperatures.log_alpha_disc.exp()
            has_c = self.action_spec.continuous_size > 0
            a_all = torch.cat([alpha_c, alpha_d]) if has_c else alpha_d
            vals = torch.stack(
                [
                    out.policy_loss.detach(),
                    out.q1_loss.detach(),
                    out.q2_loss.detach(),
                    out.temperature_loss.detach(),
                    a_all.mean(),
                    alpha_c[0],
                    alpha_d.mean() if self.branches else alpha_c[0],
                    out.q_mean,
                    out.entropy,
                ]
            ).tolist()
        stats = {
            STAT_POLICY_LOSS: vals[0],
            STAT_Q1_LOSS: vals[1],
            STAT_Q2_LOSS: vals[2],
            STAT_ENTCOEF_LOSS: vals[3],
            STAT_ENTCOEF: vals[4],
            STAT_Q_MEAN: vals[7],
            STAT_ENTROPY: vals[8],
            STAT_LR: lr,
        }
        if has_c:
            stats[STAT_CONT_ENTCOEF] = vals[5]
        if self.branches:
            stats[STAT_DISC_ENTCOEF] = vals[6]
        diag = out.diagnostics.tolist()
        stats.update(
            {
                STAT_Q_ABS: diag[0],
                STAT_Q_STD: diag[1],
                STAT_TWIN_GAP: diag[2],
                STAT_TARGET_MEAN: diag[3],
                STAT_TARGET_DRIFT: diag[4],
            }
        )
        if self.branches:
            k = len(self.branches)
            stats[STAT_BRANCH_MIN_BIAS] = diag[5]
            for i in range(k):
                stats[STAT_BRANCH_ENTROPY.format(i)] = diag[6 + i]
                stats[STAT_BRANCH_ENTCOEF.format(i)] = diag[6 + k + i]
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
