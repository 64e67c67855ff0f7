"""IMPALA optimizer: owns the critic, the V-trace losses and the gradient step.

Per update (one batch of pieces): the learner recomputes log pi(a|x) of the stored actions and V(x)
with its current parameters; V-trace (``losses.vtrace``) turns them, the rewards and the behaviour
log-probabilities recorded at acting time into value targets and policy-gradient advantages, one set
per reward stream (each with its own gamma); the total advantage is their sum (the return of the summed
reward), and the baseline loss is the sum of the per-stream losses.

Kernels (same math): the separate critic's Swish is fused (the trainer fuses the actor's), Adam uses the
fused kernel where torch has one for the device, and the update's fp32 matmuls use oneDNN on CPU where a
probe shows it exact and faster (``fast_cpu_matmul``; ``mlagents_plugins/common/fast_kernels.py``).
"""
from typing import Dict, List, NamedTuple, Optional, Tuple, cast

from mlagents.torch_utils import default_device, torch
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.agent_action import AgentAction
from mlagents.trainers.torch_entities.networks import ValueNetwork
from mlagents.trainers.torch_entities.utils import ModelUtils
from mlagents_envs.timers import timed

from mlagents_plugins.common.fast_kernels import (
    MatmulKernelChooser,
    fuse_swish_,
    fused_adam_kwargs,
)
from mlagents_plugins.impala import losses, recurrent
from mlagents_plugins.impala.pieces import PieceBatch
from mlagents_plugins.impala.settings import ImpalaSettings

# Stats keys written by the optimizer.
STAT_POLICY_LOSS = "Losses/Policy Loss"
STAT_VALUE_LOSS = "Losses/Value Loss"
STAT_ENTROPY = "Policy/Learner Entropy"
STAT_LEARNING_RATE = "Policy/Learning Rate"
STAT_ENTROPY_WEIGHT = "Policy/Entropy Weight"
STAT_GRAD_NORM = "Losses/Gradient Norm"
STAT_MEAN_RHO = "IMPALA/Mean Clipped Rho"
STAT_FRACTION_CLIPPED = "IMPALA/Fraction Rho Clipped"
STAT_APPROX_KL = "IMPALA/Approx KL"  # estimate of KL(behaviour || learner) on the batch's actions
STAT_FRACTION_SURROGATE_CLIPPED = "IMPALA/Fraction Outside Surrogate Clip"  # only with surrogate_clip


class LossTerms(NamedTuple):
    """The three loss terms of one batch (scalars with gradient) and the V-trace diagnostics."""

    policy_loss: torch.Tensor
    value_loss: torch.Tensor  # summed over reward streams
    entropy_loss: torch.Tensor  # -mean entropy
    importance: losses.ImportanceStats
    approx_kl: float  # KL(mu || pi) estimate on the batch
    fraction_outside_clip: float  # steps with pi/mu outside 1 +- surrogate_clip (0 when it is off)


class PassTargets(NamedTuple):
    """Targets of one pass over a round's steps (``update_style: epochs``), per real step ``[N]``."""

    vs: Dict[str, torch.Tensor]  # V-trace value target per reward stream
    advantage: torch.Tensor  # summed over streams: q_t - V(x_t), standardised over the pass when asked


class TorchImpalaOptimizer(TorchOptimizer):
    def __init__(self, policy: TorchPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        self.hyperparameters: ImpalaSettings = cast(ImpalaSettings, trainer_settings.hyperparameters)
        hp = self.hyperparameters
        self.stream_names: List[str] = [key.value for key in trainer_settings.reward_signals]
        self.device = default_device()
        self.matmul_kernels = MatmulKernelChooser(self.device, hp.fast_cpu_matmul)
        params = list(self.policy.actor.parameters())
        if hp.shared_critic:
            self._critic = policy.actor  # SharedActorCritic: value heads on the policy body
        else:
            self._critic = ValueNetwork(
                self.stream_names,
                policy.behavior_spec.observation_specs,
                network_settings=trainer_settings.network_settings,
            )
            self._critic.to(self.device)
            fuse_swish_(self._critic)
            params += list(self._critic.parameters())
        self.decay_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.learning_rate, 1e-10, trainer_settings.max_steps
        )
        self.decay_entropy_weight = ModelUtils.DecayedValue(
            hp.entropy_weight_schedule, hp.entropy_weight, 1e-5, trainer_settings.max_steps
        )
        self.decay_surrogate_clip = (
            None
            if hp.surrogate_clip is None
            else ModelUtils.DecayedValue(hp.surrogate_clip_schedule, hp.surrogate_clip, 0.1, trainer_settings.max_steps)
        )
        if hp.optimizer == "rmsprop":
            self.optimizer = torch.optim.RMSprop(
                params, lr=hp.learning_rate, alpha=hp.rmsprop_alpha, eps=hp.optimizer_epsilon, foreach=True
            )
        else:
            self.optimizer = torch.optim.Adam(
                params, lr=hp.learning_rate, eps=hp.optimizer_epsilon, **fused_adam_kwargs(self.device)
            )
        self._params = params

    def surrogate_clip_now(self) -> float:
        """surrogate_clip at the current step (decayed when surrogate_clip_schedule is linear)."""
        return self.decay_surrogate_clip.get_value(self.policy.get_current_step())

    @property
    def critic(self):
        return self._critic

    def _discount_t(self, name: str, batch: PieceBatch) -> torch.Tensor:
        """gamma on every real step; 0 after a true terminal unless the signal ignores dones."""
        signal = self.reward_signals[name]
        discount = signal.gamma * batch.mask_t
        if not signal.ignore_done:
            discount = discount * (1.0 - batch.terminal_t)
        return discount

    @staticmethod
    def _actions(batch: PieceBatch, rows: Optional[torch.Tensor] = None) -> AgentAction:
        """The stored actions of the batch's real steps (of ``rows`` among them when given)."""
        continuous, discrete = batch.continuous_action, batch.discrete_action
        if rows is not None:
            continuous, discrete = continuous[rows], discrete[rows]
        branches = [discrete[:, i] for i in range(discrete.shape[1])] if discrete.shape[1] > 0 else None
        return AgentAction(continuous, branches)

    def _vtrace_streams(
        self, batch: PieceBatch, log_rho_t: torch.Tensor, values: Dict[str, torch.Tensor],
        bootstrap: Dict[str, torch.Tensor], pg_weighted: bool = True,
    ) -> Tuple[Dict[str, torch.Tensor], Dict[str, losses.VTraceReturns], torch.Tensor]:
        """V-trace per reward stream: (v_tm1 [T, B] per stream, its returns, the policy's advantage [T, B]).

        The advantage is summed over streams (the return of the summed reward) and standardised over the batch's
        real steps when ``normalize_advantage``.  With the surrogate it is ``q_t - V(x_t)`` (the ratio pi/mu
        weights each sample itself); without, the paper's ``pg_rho (q_t - V(x_t))``, or ``q_t - V(x_t)`` when
        ``pg_weighted`` is false (the caller weights it later).
        """
        hp = self.hyperparameters
        B = batch.mask_t.shape[1]
        mask_t = batch.mask_t
        v_tm1_by_stream: Dict[str, torch.Tensor] = {}
        returns_by_stream: Dict[str, losses.VTraceReturns] = {}
        advantage_t = torch.zeros_like(mask_t)
        for name in self.stream_names:
            v_tm1 = batch.time_major(values[name].reshape(-1))
            returns = losses.vtrace(
                log_rho_t,
                self._discount_t(name, batch),
                batch.rewards[name],
                v_tm1,
                bootstrap[name].reshape(B),
                mask_t,
                rho_clip=hp.rho_clip,
                c_clip=hp.c_clip,
                pg_rho_clip=hp.pg_rho_clip,
                lambda_=hp.trace_lambda,
            )
            if self.decay_surrogate_clip is not None or not pg_weighted:
                advantage_t = advantage_t + (returns.q_t - v_tm1.detach()) * mask_t
            else:
                advantage_t = advantage_t + returns.pg_advantage
            v_tm1_by_stream[name], returns_by_stream[name] = v_tm1, returns
        if hp.normalize_advantage:
            advantage_t = losses.standardize(advantage_t, mask_t)
        return v_tm1_by_stream, returns_by_stream, advantage_t

    def _policy_loss(
        self, log_pi_t: torch.Tensor, log_mu_t: torch.Tensor, advantage_t: torch.Tensor, mask_t: torch.Tensor
    ) -> Tuple[torch.Tensor, float]:
        """(policy loss, fraction of steps outside the surrogate clip): the clipped surrogate when
        ``surrogate_clip`` is set, else the paper's policy gradient on an advantage already weighted by pg_rho."""
        if self.decay_surrogate_clip is None:
            return losses.policy_gradient_loss(log_pi_t, advantage_t, mask_t), 0.0
        clip = self.surrogate_clip_now()
        log_rho_t = (log_pi_t - log_mu_t).detach()
        return (losses.clipped_surrogate_loss(log_pi_t, log_mu_t, advantage_t, mask_t, clip),
                losses.fraction_outside_clip(log_rho_t, mask_t, clip))

    def _forward(self, batch: PieceBatch):
        """The learner's outputs on the batch's real steps: (log pi of the stored actions [N, K], entropy [N], values
        per stream [N], bootstrap values per stream [B], no gradient).  A recurrent policy replays every piece as
        consecutive sequences of ``sequence_length`` steps, each from its stored memories (``impala/recurrent.py``);
        otherwise the networks run on the real steps."""
        seq = batch.sequences
        if seq is None:
            # The networks run on the N real steps only; batch.time_major spreads their outputs over [T, B].
            run_out = self.policy.actor.get_stats(
                batch.obs, self._actions(batch), masks=batch.action_mask, sequence_length=1)
            values, _ = self.critic.critic_pass(batch.obs, sequence_length=1)
            with torch.no_grad():
                bootstrap, _ = self.critic.critic_pass(batch.bootstrap_obs, sequence_length=1)
            return run_out["log_probs"].flatten(), run_out["entropy"].reshape(-1), values, bootstrap
        recurrent.check_memories(seq, self.policy.m_size)
        s_len = seq.sequence_length
        branches = seq.discrete_action
        actions = AgentAction(seq.continuous_action,
                              [branches[:, i] for i in range(branches.shape[1])] if branches.shape[1] > 0 else None)
        run_out = self.policy.actor.get_stats(recurrent.actor_sequence_obs(seq), actions,
                                              masks=seq.action_mask, memories=seq.memory, sequence_length=s_len)
        all_values, _ = self.critic.critic_pass(seq.obs, memories=seq.critic_memory, sequence_length=s_len + 1)
        values = recurrent.to_dict_rows(all_values, seq.value_rows)
        bootstrap = {name: v.detach() for name, v in recurrent.to_dict_rows(all_values, seq.bootstrap_rows).items()}
        return (run_out["log_probs"].flatten()[seq.actor_rows], run_out["entropy"].reshape(-1)[seq.actor_rows], values,
                bootstrap)

    def compute_losses(self, batch: PieceBatch) -> LossTerms:
        """Learner forward pass and V-trace on one batch (no optimizer step)."""
        mask_t = batch.mask_t
        target_log_probs, entropy, values, bootstrap = self._forward(batch)  # [N, K], [N], [N], [B]
        log_pi_t = batch.time_major(target_log_probs.sum(dim=1))
        entropy_t = batch.time_major(entropy)
        log_rho_t = batch.time_major(
            losses.log_importance_ratio(target_log_probs.detach(), batch.behaviour_log_probs))
        v_tm1_by_stream, returns_by_stream, advantage_t = self._vtrace_streams(batch, log_rho_t, values, bootstrap)
        value_loss = torch.zeros((), device=mask_t.device)
        for name in self.stream_names:
            value_loss = value_loss + losses.baseline_loss(v_tm1_by_stream[name], returns_by_stream[name].vs, mask_t)
        log_mu_t = batch.time_major(batch.behaviour_log_probs.sum(dim=1))
        policy_loss, outside = self._policy_loss(log_pi_t, log_mu_t, advantage_t, mask_t)
        return LossTerms(
            policy_loss=policy_loss,
            value_loss=value_loss,
            entropy_loss=losses.entropy_loss(entropy_t, mask_t),
            importance=losses.importance_stats(log_rho_t, mask_t, self.hyperparameters.rho_clip),
            approx_kl=losses.approx_kl(log_rho_t, mask_t),
            fraction_outside_clip=outside,
        )

    def _step(self, terms: LossTerms) -> Dict[str, float]:
        """One optimizer step on ``policy + value_weight * value + entropy_weight * entropy``; its stats."""
        hp = self.hyperparameters
        step = self.policy.get_current_step()
        lr = self.decay_learning_rate.get_value(step)
        entropy_weight = self.decay_entropy_weight.get_value(step)
        loss = terms.policy_loss + hp.value_weight * terms.value_loss + entropy_weight * terms.entropy_loss
        ModelUtils.update_learning_rate(self.optimizer, lr)
        self.optimizer.zero_grad()
        loss.backward()
        max_norm = hp.grad_clip_norm if hp.grad_clip_norm is not None else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(self._params, max_norm)
        self.optimizer.step()
        return {
            STAT_POLICY_LOSS: terms.policy_loss.item(),
            STAT_VALUE_LOSS: terms.value_loss.item(),
            STAT_ENTROPY: -terms.entropy_loss.item(),
            STAT_LEARNING_RATE: lr,
            STAT_ENTROPY_WEIGHT: entropy_weight,
            STAT_GRAD_NORM: float(grad_norm),
            STAT_MEAN_RHO: terms.importance.mean_clipped_rho,
            STAT_FRACTION_CLIPPED: terms.importance.fraction_clipped,
            STAT_APPROX_KL: terms.approx_kl,
            **({STAT_FRACTION_SURROGATE_CLIPPED: terms.fraction_outside_clip} if hp.surrogate_clip is not None else {}),
        }

    @timed
    def update(self, batch: PieceBatch) -> Dict[str, float]:
        """One gradient step on one batch of pieces (``update_style: stream``), targets from the current networks."""
        with self.matmul_kernels.scope():
            return self._step(self.compute_losses(batch))

    # ---- update_style epochs: V-trace targets once per pass, gradient steps on shuffled steps ----------
    def pass_targets(self, batch: PieceBatch) -> PassTargets:
        """V-trace value targets per stream and the policy's advantage for every real step of ``batch`` under
        the current networks (no gradient), in the batch's real-row order ``[N]``: the targets of one pass."""
        with torch.no_grad(), self.matmul_kernels.scope():
            target_log_probs, _, values, bootstrap = self._forward(batch)
            log_rho_t = batch.time_major(losses.log_importance_ratio(target_log_probs, batch.behaviour_log_probs))
            # Without the surrogate, pg_rho is the learner's at each minibatch (compute_row_losses), not the pass's.
            _, returns_by_stream, advantage_t = self._vtrace_streams(
                batch, log_rho_t, values, bootstrap, pg_weighted=False)
        return PassTargets(
            vs={name: r.vs.reshape(-1)[batch.real_rows] for name, r in returns_by_stream.items()},
            advantage=advantage_t.reshape(-1)[batch.real_rows],
        )

    def compute_row_losses(self, batch: PieceBatch, rows: torch.Tensor, targets: PassTargets) -> LossTerms:
        """The losses on the real steps ``rows`` of ``batch`` against ``targets`` (``pass_targets``)."""
        obs = [o[rows] for o in batch.obs]
        run_out = self.policy.actor.get_stats(
            obs, self._actions(batch, rows), masks=batch.action_mask[rows], sequence_length=1)
        values, _ = self.critic.critic_pass(obs, sequence_length=1)
        return self._terms_against_targets(
            run_out["log_probs"].flatten(), run_out["entropy"].reshape(-1), values, batch.behaviour_log_probs[rows],
            PassTargets({name: vs[rows] for name, vs in targets.vs.items()}, targets.advantage[rows]))

    def compute_piece_losses(self, batch: PieceBatch, targets: PassTargets) -> LossTerms:
        """The losses on every real step of ``batch`` (whole pieces of a recurrent policy, replayed from their stored
        memories) against ``targets`` [N] in the batch's real-row order (``update_style: epochs``)."""
        target_log_probs, entropy, values, _ = self._forward(batch)
        return self._terms_against_targets(target_log_probs, entropy, values, batch.behaviour_log_probs, targets)

    def _terms_against_targets(self, target_log_probs: torch.Tensor, entropy: torch.Tensor, values,
                               behaviour_log_probs: torch.Tensor, targets: PassTargets) -> LossTerms:
        """Loss terms of ``n`` steps from the learner's outputs there (log pi [n, K], entropy [n], values per
        stream) and the pass's targets for them ([n] each)."""
        hp = self.hyperparameters
        n = target_log_probs.shape[0]
        mask_t = torch.ones((n, 1), device=target_log_probs.device)  # every row is a real step: [n, 1] time-major
        log_pi_t = target_log_probs.sum(dim=1).reshape(n, 1)
        log_mu_t = behaviour_log_probs.sum(dim=1).reshape(n, 1)
        log_rho_t = losses.log_importance_ratio(target_log_probs.detach(), behaviour_log_probs).reshape(n, 1)
        advantage_t = targets.advantage.reshape(n, 1)
        if self.decay_surrogate_clip is None:
            advantage_t = advantage_t * losses.clip_weight(torch.exp(log_rho_t), hp.pg_rho_clip)
        policy_loss, outside = self._policy_loss(log_pi_t, log_mu_t, advantage_t, mask_t)
        value_loss = torch.zeros((), device=target_log_probs.device)
        for name in self.stream_names:
            value_loss = value_loss + losses.baseline_loss(
                values[name].reshape(n, 1), targets.vs[name].reshape(n, 1), mask_t)
        return LossTerms(
            policy_loss=policy_loss,
            value_loss=value_loss,
            entropy_loss=losses.entropy_loss(entropy.reshape(n, 1), mask_t),
            importance=losses.importance_stats(log_rho_t, mask_t, hp.rho_clip),
            approx_kl=losses.approx_kl(log_rho_t, mask_t),
            fraction_outside_clip=outside,
        )

    @timed
    def update_rows(self, batch: PieceBatch, rows: torch.Tensor, targets: PassTargets) -> Optional[Dict[str, float]]:
        """One gradient step on the real steps ``rows`` of ``batch`` (``update_style: epochs``); None, and no
        step, when the minibatch's KL(mu || pi) estimate already exceeds ``kl_stop`` (the round should end)."""
        kl_stop = self.hyperparameters.kl_stop
        with self.matmul_kernels.scope():
            terms = self.compute_row_losses(batch, rows, targets)
            if kl_stop is not None and terms.approx_kl > kl_stop:
                return None
            return self._step(terms)

    @timed
    def update_pieces(self, batch: PieceBatch, targets: PassTargets) -> Optional[Dict[str, float]]:
        """``update_rows`` for a recurrent policy: one gradient step on whole pieces (``compute_piece_losses``)."""
        kl_stop = self.hyperparameters.kl_stop
        with self.matmul_kernels.scope():
            terms = self.compute_piece_losses(batch, targets)
            if kl_stop is not None and terms.approx_kl > kl_stop:
                return None
            return self._step(terms)

    def get_modules(self):
        modules = {"Optimizer:value_optimizer": self.optimizer, "Optimizer:critic": self._critic}
        for reward_provider in self.reward_signals.values():
            modules.update(reward_provider.get_modules())
        return modules
