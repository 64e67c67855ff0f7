"""Optimizer of muzero_repr: the learned model's MuZero update and the SAC head's update, on their own cadence.

Model update (MuZero Sec. 3 eq. 1, Appendix G; deviations noted): sample start rows (prioritized by value
error if ``prioritized_replay``), unroll ``num_unroll_steps`` with the actions taken, targets from
``targets.compute_unroll_targets`` with bootstrap values from a periodically/Polyak-updated target model,
losses of recurrent steps scaled by 1/K (MuZero pseudocode ``update_weights``), gradient entering the dynamics
scaled by ``recurrent_gradient_scaling_factor``.

RL head: fast_sac's SAC, the same code: ``sac.batch.window_batch`` builds its n-step windows and
``sac.losses.sac_losses`` its losses (soft n-step targets, twin Q, actor, temperatures), with the latent h(o)
as the state.  The critic's latent is detached unless ``rl_gradient_to_repr`` (ALF's default: the RL loss does
not shape the representation); the actor's always is.  Reward: the environment reward times the extrinsic
signal's strength, discount its gamma.
"""
import copy
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from mlagents.torch_utils import default_device, nn, torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import NetworkSettings, RewardSignalType, TrainerSettings
from mlagents.trainers.torch_entities.utils import ModelUtils

from mlagents_plugins.fast_kernels import MatmulKernelChooser, fuse_swish_, fused_adam_kwargs
from mlagents_plugins.muzero_repr import losses as L
from mlagents_plugins.muzero_repr.actor import MuZeroActor, latent_observation_spec
from mlagents_plugins.muzero_repr.networks import MuZeroModel, encode_actions, random_shift
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.muzero_repr.targets import (
    ACTIONS_AFTER_END_RANDOM,
    actions_for_unroll,
    alive_rows,
    bootstrap_rows,
    compute_unroll_targets,
)
from mlagents_plugins.offpolicy import rows as R
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.fast_sac import losses as S
from mlagents_plugins.fast_sac.batch import sample_starts, window_batch
from mlagents_plugins.fast_sac.networks import Temperatures, TwinQ, polyak_update_, sample_for_training
from mlagents_plugins.fast_sac.optimizer import STAT_LR, SACBatch, sac_stats

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
# The SAC head reports fast_sac's keys (mlagents_plugins/fast_sac/optimizer.py: Losses/Q1 Loss, Policy/Entropy
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


class ModelBatch(NamedTuple):
    """One sampled batch of unroll windows, as tensors on the training device."""

    starts: np.ndarray  # [B] ring indices of the start rows
    weights_b: torch.Tensor  # [B] importance weights (ones without PER)
    obs_0: List[torch.Tensor]  # start observations, each [B, ...]
    obs_future: List[torch.Tensor]  # observations of rows 1..K, each [B, K, ...] (empty without consistency)
    actions_enc_bka: torch.Tensor  # [B, K, A] encoded actions fed to the dynamics (filled after the end)
    cont_action_bka: Optional[torch.Tensor]  # [B, K, Ac] taken continuous actions (policy targets)
    disc_action_bkb: Optional[torch.Tensor]  # [B, K, nb] taken discrete actions
    r_bw: torch.Tensor  # [B, W]
    terminal_bw: torch.Tensor  # [B, W] bool
    valid_bw: torch.Tensor  # [B, W] bool
    boot_obs: List[torch.Tensor]  # next_obs of the bootstrap rows, each [B * (K+1), ...]
    boot_rows_bk: torch.Tensor  # [B, K+1] window row of each bootstrap


class MuZeroReprOptimizer(TorchOptimizer):
    def __init__(self, policy: TorchPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        hp: MuZeroReprSettings = trainer_settings.hyperparameters  # type: ignore
        self.hp = hp
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
        # Same function, one kernel (mlagents_plugins/fast_kernels.py); before the target copies are made.
        fuse_swish_(self.actor)
        fuse_swish_(self.model)
        self.target_model = copy.deepcopy(self.model)
        for p in self.target_model.parameters():
            p.requires_grad_(False)
        adam = fused_adam_kwargs(self.device)
        self.model_opt = torch.optim.Adam(self.model.parameters(), lr=hp.model_learning_rate, **adam)

        # ---- SAC head on the latent: fast_sac's losses (sac.losses.sac_losses), one backward, one Adam ----
        head_settings = NetworkSettings(hidden_units=hp.head_hidden_units, num_layers=hp.head_num_layers)
        self.q_net = TwinQ(self.stream_names, [latent_observation_spec(hp.latent_size)], head_settings, self.action_spec)
        self.q_net.to(self.device)
        fuse_swish_(self.q_net)
        self.target_q = self.q_net.make_target()
        self.temperatures = Temperatures(hp.init_entcoef, len(self.branches)).to(self.device)
        groups = [
            {"params": self.actor.head_parameters()},
            {"params": list(self.q_net.parameters())},
            {"params": list(self.temperatures.parameters())},
        ]
        if hp.rl_gradient_to_repr:
            groups.append({"params": list(self.actor.representation.parameters())})
        self.rl_opt = torch.optim.Adam(groups, lr=hp.learning_rate, **adam)
        self.target_entropy_cont = -hp.continuous_target_entropy_scale * float(self.action_spec.continuous_size)
        self.actor_min_q = hp.actor_uses_min_q(len(self.branches))
        # learning_rate_schedule anneals both step sizes (the RL head's and the model's) the same way.
        self.decay_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.learning_rate, 1e-10, trainer_settings.max_steps
        )
        self.decay_model_learning_rate = ModelUtils.DecayedValue(
            hp.learning_rate_schedule, hp.model_learning_rate, 1e-10, trainer_settings.max_steps
        )
        # fast_cpu_matmul: one kernel chooser per update kind, so each times one kind of work.
        self.model_matmul = MatmulKernelChooser(self.device, hp.fast_cpu_matmul)
        self.rl_matmul = MatmulKernelChooser(self.device, hp.fast_cpu_matmul)
        self.num_model_updates = 0
        # Random shifts and random actions after an episode's end draw from the run seed (``--seed``), as the
        # replay sampling does (``OffPolicyTrainerBase.rng``).
        self.torch_rng = torch.Generator().manual_seed(int(policy.seed))

    @property
    def critic(self):
        return self.q_net

    def get_modules(self) -> Dict[str, nn.Module]:
        modules = {
            "Optimizer:muzero_model": self.model,
            "Optimizer:muzero_target_model": self.target_model,
            "Optimizer:q_net": self.q_net,
            "Optimizer:target_q": self.target_q,
            "Optimizer:temperatures": self.temperatures,
            "Optimizer:model_opt": self.model_opt,
            "Optimizer:rl_opt": self.rl_opt,
        }
        for name, signal in self.reward_signals.items():
            modules.update(signal.get_modules())
        return modules

    # ------------------------------------------------------------------ helpers
    def _obs(self, rows: Dict[str, np.ndarray], next_: bool, augment: bool) -> List[torch.Tensor]:
        obs = R.gather_obs(rows, self.n_obs, next_, self.device)
        return self._augment(obs) if augment else obs

    def _random_actions(self, shape_bk) -> torch.Tensor:
        b, k = shape_bk
        parts = []
        if self.action_spec.continuous_size > 0:
            parts.append(torch.rand(b, k, self.action_spec.continuous_size, generator=self.torch_rng) * 2 - 1)
        for n in self.branches:
            idx = torch.randint(0, n, (b, k), generator=self.torch_rng)
            parts.append(nn.functional.one_hot(idx, n).float())
        return torch.cat(parts, dim=-1).to(self.device)

    # ------------------------------------------------------------------ model update
    def update_target_model(self, tau: float) -> None:
        """Move the target model's weights by ``tau``; copy its buffers (observation normaliser statistics)."""
        polyak_update_(list(self.model.parameters()), list(self.target_model.parameters()), tau)
        with torch.no_grad():
            for b_target, b in zip(self.target_model.buffers(), self.model.buffers()):
                b_target.copy_(b)

    def sample_starts(
        self, replay: ReplayBuffer, rng: np.random.Generator, per_beta: Optional[float] = None
    ) -> Tuple[np.ndarray, Optional[torch.Tensor]]:
        """``batch_size`` start rows and their importance weights ``[B]`` (None without PER).

        With ``prioritized_replay`` both updates draw from the same priorities (the model's value error)
        (``sac.batch.sample_starts``), so the RL head and the model see the same sampling distribution, each
        corrected back to uniform.
        """
        hp = self.hp
        beta = hp.per_beta if per_beta is None else per_beta
        return sample_starts(replay, rng, hp.batch_size, hp.prioritized_replay, beta, self.device)

    def sample_model_batch(
        self, replay: ReplayBuffer, rng: np.random.Generator, per_beta: Optional[float] = None
    ) -> ModelBatch:
        """``per_beta``: importance-sampling exponent (default the setting; the trainer anneals it to 1)."""
        hp = self.hp
        K, n, B = hp.num_unroll_steps, hp.td_steps, hp.batch_size
        W = K + n
        starts, weights = self.sample_starts(replay, rng, per_beta)
        if weights is None:
            weights = torch.ones(B, device=self.device)
        idx, valid = replay.sequence_indices(starts, W)
        small_fields = [R.REWARD, R.TERMINAL]
        if self.action_spec.continuous_size > 0:
            small_fields.append(R.CONT_ACTION)
        if self.action_spec.discrete_size > 0:
            small_fields.append(R.DISC_ACTION)
        small = replay.gather(idx, small_fields)
        valid_bw = torch.as_tensor(valid, device=self.device)
        # Only the last row of a segment can be terminal, and every episode end is a segment end, so
        # "episode end" within a window is the terminal flag; time-outs and chunk ends show as ~valid.
        terminal_bw = torch.as_tensor(small[R.TERMINAL], device=self.device) & valid_bw
        r_bw = torch.as_tensor(small[R.REWARD], device=self.device) * self.reward_scale
        boot_rows = bootstrap_rows(terminal_bw, terminal_bw, valid_bw, K, n)
        boot_idx = np.take_along_axis(idx, boot_rows.cpu().numpy(), axis=1).reshape(-1)
        boot_obs = self._obs(replay.gather(boot_idx, [R.next_obs_field(i) for i in range(self.n_obs)]), True, False)
        obs_names = [R.obs_field(i) for i in range(self.n_obs)]
        obs_0 = self._obs(replay.gather(idx[:, 0], obs_names), False, True)
        obs_future: List[torch.Tensor] = []
        if hp.train_repr_prediction and K > 0:
            fut = self._obs(replay.gather(idx[:, 1 : K + 1].reshape(-1), obs_names), False, True)
            obs_future = [o.reshape(B, K, *o.shape[1:]) for o in fut]
        cont = disc = None
        if self.action_spec.continuous_size > 0:
            cont = torch.as_tensor(small[R.CONT_ACTION][:, :K], device=self.device)
        if self.action_spec.discrete_size > 0:
            disc = torch.as_tensor(small[R.DISC_ACTION][:, :K].astype(np.int64), device=self.device)
        enc = encode_actions(self.action_spec, cont, disc)
        alive_bk = alive_rows(valid_bw, terminal_bw)[:, :K]
        rand = self._random_actions((B, K)) if hp.actions_after_end == ACTIONS_AFTER_END_RANDOM else None
        enc = actions_for_unroll(enc, alive_bk, hp.actions_after_end, rand)
        return ModelBatch(starts, weights, obs_0, obs_future, enc, cont, disc, r_bw, terminal_bw, valid_bw,
                          boot_obs, boot_rows)

    def model_loss(self, batch: ModelBatch):
        """Total model loss and its parts; the learned model's forward pass (see module docstring)."""
        hp = self.hp
        K, n = hp.num_unroll_steps, hp.td_steps
        B = batch.r_bw.shape[0]
        with torch.no_grad():
            v_boot = L.prediction_to_scalar(
                self.target_model.initial_inference(batch.boot_obs).value, hp.support_size, self.transform_eps
            ).reshape(B, K + 1)
            v_next_bw = torch.zeros_like(batch.r_bw).scatter(1, batch.boot_rows_bk, v_boot)
            tg = compute_unroll_targets(batch.r_bw, batch.terminal_bw, batch.terminal_bw, batch.valid_bw,
                                        v_next_bw, self.gamma, K, n)
        outs = self.model.unroll(batch.obs_0, batch.actions_enc_bka, hp.recurrent_gradient_scaling_factor)
        w = batch.weights_b.unsqueeze(1)
        # MuZero pseudocode: predictions of recurrent steps weigh 1/K.
        step_scale = torch.tensor([1.0] + [1.0 / max(K, 1)] * K, device=self.device)
        value_pred = torch.stack([o.value for o in outs], dim=1)
        value_l = L.scalar_prediction_loss(value_pred, tg.value_bk, hp.support_size, self.transform_eps)
        value_k = L.masked_mean_over_batch(value_l * w, tg.value_mask_bk)
        parts = {"value": value_k}
        total = hp.value_loss_weight * (value_k * step_scale).sum()
        if K > 0:
            reward_pred = torch.stack([o.reward for o in outs[1:]], dim=1)
            reward_l = L.scalar_prediction_loss(reward_pred, tg.reward_bk, hp.support_size, self.transform_eps)
            reward_k = L.masked_mean_over_batch(reward_l * w, tg.reward_mask_bk)
            parts["reward"] = reward_k
            total = total + hp.reward_loss_weight * (reward_k * step_scale[1:]).sum()
        if hp.policy_loss_weight > 0 and K > 0:
            # Policy target of step k is the action taken at row k (k < K, where the row is stored).
            pol = torch.stack([o.policy for o in outs[:K]], dim=1)
            policy_l = torch.zeros(B, K, device=self.device)
            c = self.action_spec.continuous_size
            if c > 0:
                policy_l = policy_l + L.continuous_policy_loss(pol[..., :c], batch.cont_action_bka.clamp(-1, 1))
            if self.branches:
                logits = torch.split(pol[..., c:], self.branches, dim=-1)
                policy_l = policy_l + L.discrete_policy_loss(list(logits), batch.disc_action_bkb)
            policy_k = L.masked_mean_over_batch(policy_l * w, tg.value_mask_bk[:, :K])
            parts["policy"] = policy_k
            total = total + hp.policy_loss_weight * (policy_k * step_scale[:K]).sum()
        if hp.train_game_over:
            logits = torch.stack([o.game_over_logit for o in outs], dim=1)
            go_l = nn.functional.binary_cross_entropy_with_logits(logits, tg.game_over_bk, reduction="none")
            go_k = L.masked_mean_over_batch(go_l * w, tg.game_over_mask_bk)
            parts["game_over"] = go_k
            total = total + hp.game_over_loss_weight * (go_k * step_scale).sum()
        if hp.train_repr_prediction and K > 0:
            with torch.no_grad():
                flat = [o.reshape(B * K, *o.shape[2:]) for o in batch.obs_future]
                target = self.model.consistency_target(self.model.representation(flat)).reshape(B, K, -1)
            online = torch.stack([self.model.consistency_online(o.latent) for o in outs[1:]], dim=1)
            cons_l = L.negative_cosine_similarity(online, target)
            cons_k = L.masked_mean_over_batch(cons_l * w, tg.value_mask_bk[:, 1:])
            parts["consistency"] = cons_k
            total = total + hp.repr_prediction_loss_weight * (cons_k * step_scale[1:]).sum()
        with torch.no_grad():
            v0 = L.prediction_to_scalar(outs[0].value, hp.support_size, self.transform_eps)
            value_err_b = (v0 - tg.value_bk[:, 0]).abs()
            diag = {
                "latent_norm": torch.stack([o.latent.norm(dim=-1).mean() for o in outs]),
                "latent_std": outs[0].latent.std(dim=0, unbiased=False).mean(),
                "value_prediction": v0.mean(),
            }
        return total, parts, value_err_b, diag, tg

    def update_model(
        self, replay: ReplayBuffer, rng: np.random.Generator, per_beta: Optional[float] = None
    ) -> Dict[str, float]:
        hp = self.hp
        batch = self.sample_model_batch(replay, rng, per_beta)
        with self.model_matmul.scope():
            model_lr = self.decay_model_learning_rate.get_value(self.policy.get_current_step())
            for g in self.model_opt.param_groups:
                g["lr"] = model_lr
            total, parts, value_err_b, diag, tg = self.model_loss(batch)
            self.model_opt.zero_grad()
            total.backward()
            if hp.model_grad_clip > 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), hp.model_grad_clip)
            self.model_opt.step()
        self.num_model_updates += 1
        if self.num_model_updates % hp.model_target_update_period == 0:
            self.update_target_model(hp.model_target_update_tau)
        z0 = tg.value_bk[:, 0]
        vals = torch.stack(
            [total.detach(), z0.mean(), z0.min(), z0.max(), diag["value_prediction"], diag["latent_std"]]
        ).tolist()
        stats = {
            STAT_MODEL_LOSS: vals[0],
            STAT_VALUE_TARGET: vals[1],
            STAT_VALUE_TARGET_MIN: vals[2],
            STAT_VALUE_TARGET_MAX: vals[3],
            STAT_VALUE_PREDICTION: vals[4],
            STAT_LATENT_STD: vals[5],
        }
        keys = {"value": STAT_VALUE_LOSS, "reward": STAT_REWARD_LOSS, "policy": STAT_POLICY_LOSS,
                "consistency": STAT_CONSISTENCY_LOSS}
        for name, per_step in parts.items():
            if name == "game_over":
                stats[STAT_GAME_OVER_LOSS] = float(per_step.mean().item())
                continue
            first = 1 if name in ("reward", "consistency") else 0
            for j, v in enumerate(per_step.tolist()):
                stats[keys[name].format(k=j + first)] = float(v)
        for k, v in enumerate(diag["latent_norm"].tolist()):
            stats[STAT_LATENT_NORM.format(k=k)] = v
        if hp.prioritized_replay:
            pr = S.per_priorities(value_err_b, hp.per_alpha, hp.per_epsilon).cpu().numpy()
            replay.update_priorities(batch.starts, pr)
            stats[STAT_PRIORITY_MEAN] = float(pr.mean())
            stats[STAT_PRIORITY_MAX] = float(pr.max())
            stats[STAT_PER_BETA] = float(hp.per_beta if per_beta is None else per_beta)
        stats[STAT_MODEL_UPDATES] = float(self.num_model_updates)
        stats[STAT_MODEL_LR] = float(model_lr)
        return stats

    # ------------------------------------------------------------------ RL head (SAC on the latent)
    def _actor_on_latent(self, z: List[torch.Tensor], mask: Optional[torch.Tensor]):
        """The ``ActorFn`` of ``sac.losses.sac_losses`` on the latent ``[z]``: the policy MLP, then fast_sac's
        sampling path (``sac.networks.sample_for_training``)."""
        return sample_for_training(self.actor.action_model, self.actor.network_body.head(z[0]), mask)

    def sample_rl_batch(
        self, replay: ReplayBuffer, rng: np.random.Generator, per_beta: Optional[float] = None
    ) -> SACBatch:
        """fast_sac's n-step windows (``sac.batch.window_batch``) with the extrinsic reward only (times its
        strength, discount its gamma); visual observations get the DrQ shift when ``random_shift_pad``."""
        starts, weights = self.sample_starts(replay, rng, per_beta)
        scale = np.float32(self.reward_scale)
        batch = window_batch(
            replay, starts, weights, self.hp.n_step, self.spec,
            lambda idx, window: (window[R.REWARD] * scale)[..., None], [self.gamma], [1.0], self.device,
        )
        return batch._replace(obs=self._augment(batch.obs), next_obs=self._augment(batch.next_obs))

    def _augment(self, obs: List[torch.Tensor]) -> List[torch.Tensor]:
        if self.hp.random_shift_pad <= 0:
            return obs
        return [random_shift(o, self.hp.random_shift_pad, self.torch_rng) if o.dim() == 4 else o for o in obs]

    def rl_losses(self, batch: SACBatch) -> S.SACLosses:
        """fast_sac's SAC losses (``sac.losses.sac_losses``) with the latent as the state.

        The critic sees ``h(o)``, attached when ``rl_gradient_to_repr`` (``LatentBody.latent``); the actor loss
        sees it detached always, so only the critic's TD loss shapes h (SAC-AE, Yarats et al. 2019 Sec. 6, and
        DrQ: actor gradients into a shared encoder hurt).  The bootstrap latent carries no gradient.
        """
        z_tm1 = self.actor.network_body.latent(batch.obs)
        with torch.no_grad():
            z_t = self.actor.representation(batch.next_obs)
        return S.sac_losses(
            self._actor_on_latent, self.q_net, self.q_net.frozen, self.target_q,
            s_tm1=[z_tm1], a_tm1_cont=batch.cont_actions, a_tm1_disc=batch.disc_actions, mask_tm1=batch.action_mask,
            r_t=batch.r_t, discount_t=batch.discount_t, valid_t=batch.valid_t,
            s_t=[z_t], mask_t=batch.next_action_mask,
            log_alpha_cont=self.temperatures.log_alpha_cont, log_alpha_disc=self.temperatures.log_alpha_disc,
            target_entropy_cont=self.target_entropy_cont, discrete_entropy_scale=self.hp.discrete_target_entropy_scale,
            branches=self.branches, cont_size=self.action_spec.continuous_size, actor_min_q=self.actor_min_q,
            weights=batch.weights, policy_s_tm1=[z_tm1.detach()],
        )

    def update_rl(
        self, replay: ReplayBuffer, rng: np.random.Generator, per_beta: Optional[float] = None
    ) -> Dict[str, float]:
        """One SAC update of the RL head: one backward of critic + actor + temperature losses, one Adam step,
        one Polyak update (as fast_sac).  With PER its critic loss is importance-weighted; the priorities stay
        the model's value errors (the RL head does not write them)."""
        batch = self.sample_rl_batch(replay, rng, per_beta)
        with self.rl_matmul.scope():
            lr = self.decay_learning_rate.get_value(self.policy.get_current_step())
            for g in self.rl_opt.param_groups:
                g["lr"] = lr
            out = self.rl_losses(batch)
            self.rl_opt.zero_grad(set_to_none=True)
            (out.q1_loss + out.q2_loss + out.policy_loss + out.temperature_loss).backward()
            self.rl_opt.step()
            polyak_update_(list(self.q_net.parameters()), list(self.target_q.parameters()), self.hp.tau)
        stats = sac_stats(out, self.temperatures, self.action_spec.continuous_size > 0, self.branches)
        stats[STAT_LR] = lr
        return stats
