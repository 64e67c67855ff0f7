"""Minimal hand-written PyTorch update of ``muzero_repr``: one MuZero model update + one SAC head update.

Same work per update as ``MuZeroReprTrainer.update_once`` with ``model_update_interval: 1`` and
``model_updates_per_interval: 1`` (the shipped config), vector observations, continuous actions, categorical
support, no game-over/consistency heads and no policy loss (their defaults):

* model (MuZero, arXiv 1911.08265, eq. 1 and App. F/G): ``batch_size`` windows of ``K + n`` rows; n-step
  value targets bootstrapped from the target model's ``f(h(o))`` at the row where the sum stops (a
  terminal cuts it); ``s_0 = h(o_0)``, ``K`` dynamics steps with the taken actions (the last one repeated
  after an episode end), gradient into the dynamics scaled at every recurrent step, latents bounded
  (``latent_map``); cross-entropy of value and reward logits against the two-hot projection of ``h(target)``,
  recurrent steps weighted 1/K; ONE backward, gradient-norm clip, ONE Adam step; the target model copied
  every ``model_target_update_period`` updates;
* SAC head on the detached latent of h, or of h's target copy (``head_reads_target_repr``; refreshed every
  ``head_repr_update_period`` model updates), start and bootstrap observations in one pass (fast_sac's n-step soft targets, twin Q, actor on Q1 as fast_sac's automatic
  ``actor_min_q`` gives for continuous actions): ONE backward + Adam step of critics, actor head and
  temperature (the shared SAC head sums the three losses), Polyak.

Layers: h = ``network_settings`` Swish body + Linear to ``latent_size``; g = ``model_num_layers x
model_hidden_units`` Swish on ``[s, a]`` + latent and reward layers; f = the same trunk on ``s`` + value and
policy layers; actor head and each critic ``head_num_layers x head_hidden_units`` Swish (+ action for the
critics) with mean/log-sigma or a linear output.
"""
import numpy as np
import torch

from bench.minimal_nets import RowStore, frozen_copy, polyak_, swish_mlp, t, tanh_gaussian_sample
from bench.minimal_sac import FAST_SAC_OWN
from bench.minimal_sac import SETTINGS as SAC_SETTINGS

SETTINGS = dict(
    {name: meaning for name, meaning in SAC_SETTINGS.items() if name not in FAST_SAC_OWN},
    actor_min_q="checked: automatic/false (Q1 objective for continuous actions, as fast_sac)",
    latent_size="latent width", model_hidden_units="g/f width", model_num_layers="g/f depth",
    num_unroll_steps="K", td_steps="n", recurrent_gradient_scaling_factor="gradient scale into g",
    support_size="categorical atoms (checked >= 1)", value_transform="checked: true",
    value_transform_eps="h(x) epsilon", value_loss_weight="value loss weight",
    reward_loss_weight="reward loss weight", policy_loss_weight="checked: 0",
    train_game_over="checked: false", game_over_loss_weight="no work: train_game_over false",
    train_repr_prediction="checked: false", repr_prediction_loss_weight="no work: train_repr_prediction false",
    actions_after_end="checked: repeat", model_target_update_tau="target model Polyak rate",
    model_target_update_period="target model period", model_learning_rate="model Adam step size",
    model_update_interval="checked: 1", model_updates_per_interval="checked: 1",
    latent_scaling="h's and g's latent map: tanh (null, vector observations) or min-max",
    model_grad_clip="model norm clip", random_shift_pad="no work: vector observations (automatic: 0 for vectors)",
    rl_gradient_to_repr="checked: false (automatic: true while the head reads h)", head_hidden_units="head width", head_num_layers="head depth",
    head_reads_target_repr="the head reads h's copy when true, h when false",
    head_repr_update_tau="head's target h Polyak rate", head_repr_update_period="head's target h period",
    repr_prediction_target="no work: train_repr_prediction false", repr_prediction_loss="no work: train_repr_prediction false",
)


def _min_max(x: torch.Tensor) -> torch.Tensor:
    lo, hi = x.min(1, keepdim=True).values, x.max(1, keepdim=True).values
    return (x - lo) / (hi - lo + 1e-5)


def latent_map(hp):
    """h's and g's output map: ``latent_scaling`` min_max, else tanh (its automatic value with vector observations,
    the only ones this loop takes)."""
    return _min_max if hp.latent_scaling == "min_max" else torch.tanh


def value_targets(r_w: np.ndarray, terminal_w: np.ndarray, valid_w: np.ndarray, K: int, n: int, gamma: float,
                  v_next_at=None):
    """n-step value targets of unroll steps 0..K from windows ``[B, K + n]`` whose ``valid_w`` is the leading
    run of the start row's episode (a terminal is that run's last row).

    Returns (boot ``[B, K+1]`` window column whose ``next_obs`` bootstraps step k, reward sums ``[B, K+1]``,
    bootstrap discounts ``[B, K+1]``); the target is ``sums + discounts * V(next_obs at boot)``.  With
    ``v_next_at`` (``[B, K+1]`` values at the boot columns) the targets themselves are returned as a 4th item.
    """
    B = r_w.shape[0]
    vf = valid_w.astype(np.float32)
    ks = np.arange(K + 1)
    m = np.stack([valid_w[:, k:k + n].sum(1) for k in ks], 1).clip(min=1)  # rows summed for step k
    boot = ks + m - 1
    disc = gamma ** np.arange(n, dtype=np.float32)
    sums = np.stack([(r_w[:, k:k + n] * vf[:, k:k + n] * disc).sum(1) for k in ks], 1).astype(np.float32)
    boot_discount = (gamma ** m * (1.0 - terminal_w[np.arange(B)[:, None], boot])).astype(np.float32)
    if v_next_at is None:
        return boot, sums, boot_discount
    return boot, sums, boot_discount, sums + boot_discount * v_next_at


class _Model(torch.nn.Module):
    def __init__(self, obs_size, act_size, net, hp):
        super().__init__()
        self.scale = latent_map(hp)
        atoms = 2 * hp.support_size + 1
        self.h = torch.nn.Sequential(swish_mlp(obs_size, net.hidden_units, net.num_layers),
                                     torch.nn.Linear(net.hidden_units, hp.latent_size))
        self.g = swish_mlp(hp.latent_size + act_size, hp.model_hidden_units, hp.model_num_layers)
        self.g_latent = torch.nn.Linear(hp.model_hidden_units, hp.latent_size)
        self.g_reward = torch.nn.Linear(hp.model_hidden_units, atoms)
        self.f = swish_mlp(hp.latent_size, hp.model_hidden_units, hp.model_num_layers)
        self.f_value = torch.nn.Linear(hp.model_hidden_units, atoms)
        self.f_policy = torch.nn.Linear(hp.model_hidden_units, act_size)

    def represent(self, obs):
        return self.scale(self.h(obs))

    def value(self, s):
        return self.f_value(self.f(s))

    def predict(self, s):
        """(value logits, tanh policy means) from one pass of the prediction trunk."""
        e = self.f(s)
        return self.f_value(e), torch.tanh(self.f_policy(e))


class MinimalMuZeroRepr:
    def __init__(self, settings, obs_size: int, act_size: int, rows: int, seed: int = 0):
        hp, net = settings.hyperparameters, settings.network_settings
        if hp.actor_min_q:
            raise ValueError("the minimal muzero_repr loop covers the Q1 actor objective only")
        if hp.critic_small_init:
            raise ValueError("the minimal muzero_repr loop covers ML-Agents' critic initialization only")
        self.entropy_reward = hp.entropy_in_targets(0)  # continuous actions only
        if (hp.support_size < 1 or hp.train_game_over or hp.train_repr_prediction or hp.policy_loss_weight > 0
                or (hp.rl_gradient_to_repr is not False and not hp.head_reads_target_repr) or hp.prioritized_replay or hp.model_update_interval != 1
                or hp.model_updates_per_interval != 1 or not hp.value_transform or hp.actions_after_end != "repeat"):
            raise ValueError("the minimal muzero_repr loop covers the shipped balance config's options only")
        self.hp = hp
        self.gamma = settings.reward_signals[next(iter(settings.reward_signals))].gamma
        self.model = _Model(obs_size, act_size, net, hp)
        self.target_model = frozen_copy(self.model)
        self.head_h = frozen_copy(self.model.h)  # h's copy, refreshed on its period
        self.read_copy = bool(hp.head_reads_target_repr)
        self.model_opt = torch.optim.Adam(self.model.parameters(), lr=hp.model_learning_rate)
        hh, hn = hp.head_size(net)
        self.head = swish_mlp(hp.latent_size, hh, hn)
        self.mu, self.log_sigma = torch.nn.Linear(hh, act_size), torch.nn.Linear(hh, act_size)
        normed = hp.critics_layer_normed(0, hh)  # continuous actions only
        self.q = torch.nn.ModuleList([swish_mlp(hp.latent_size + act_size, hh, hn, 1, layer_norm=normed)
                                      for _ in range(2)])
        self.q_target = frozen_copy(self.q)
        self.log_alpha = torch.nn.Parameter(torch.full((1,), float(np.log(hp.init_entcoef))))
        head = list(self.head.parameters()) + list(self.mu.parameters()) + list(self.log_sigma.parameters())
        self.rl_opt = torch.optim.Adam(list(self.q.parameters()) + head + [self.log_alpha], lr=hp.learning_rate)
        self.target_entropy = -hp.continuous_target_entropy_scale * float(act_size)
        self.store = RowStore(rows, obs_size, act_size, np.random.default_rng(seed))
        self.atoms = torch.arange(-hp.support_size, hp.support_size + 1, dtype=torch.float32)
        self.num_model_updates = 0

    # ---- value transform and categorical support (MuZero App. F)
    def _h(self, x):
        return torch.sign(x) * (torch.sqrt(x.abs() + 1) - 1) + self.hp.value_transform_eps * x

    def _h_inv(self, y):
        # Root u = sqrt(|x| + 1) of eps u^2 + u - c = 0 written as 2c / (sqrt(1 + 4 eps c) + 1), and
        # u^2 - 1 as |y| (u + 1) / (1 + eps (u + 1)): no subtraction of near-equal float32 numbers.
        eps = self.hp.value_transform_eps
        c = y.abs() + 1 + eps
        u1 = 2 * c / (torch.sqrt(1 + 4 * eps * c) + 1) + 1
        return torch.sign(y) * (y.abs() * u1 / (1 + eps * u1))

    def _two_hot(self, x):
        S = self.hp.support_size
        x = self._h(x).clamp(-S, S)
        low = x.floor()
        hi_w = x - low
        low_i = (low + S).long()
        out = torch.zeros(*x.shape, 2 * S + 1)
        out.scatter_add_(-1, low_i.unsqueeze(-1), (1 - hi_w).unsqueeze(-1))
        out.scatter_add_(-1, (low_i + 1).clamp(max=2 * S).unsqueeze(-1), hi_w.unsqueeze(-1))
        return out

    def model_step(self) -> None:
        hp, s = self.hp, self.store
        K, n, B = hp.num_unroll_steps, hp.td_steps, hp.batch_size
        idx, valid = s.windows(B, K + n)
        vf = valid.astype(np.float32)
        boot_col, sums, boot_discount = value_targets(s.reward[idx], s.terminal[idx], valid, K, n, self.gamma)
        boot = idx[np.arange(B)[:, None], boot_col]  # [B, K+1] rows whose next_obs bootstraps
        with torch.no_grad():
            logits = self.target_model.value(self.target_model.represent(t(s.next_obs[boot.reshape(-1)])))
            v_next = self._h_inv((logits.softmax(-1) * self.atoms).sum(-1)).reshape(B, K + 1)
            z = t(sums) + t(boot_discount) * v_next
        alive = np.maximum.accumulate(np.where(valid[:, :K], np.arange(K), 0), axis=1)
        actions = t(np.clip(s.action[np.take_along_axis(idx[:, :K], alive, 1)], -1, 1))  # [B, K, A]
        mask_v, mask_r = t(vf[:, :K + 1]), t(vf[:, :K])

        latent = self.model.represent(t(s.obs[idx[:, 0]]))
        values, rewards = [self.model.predict(latent)[0]], []
        scale = hp.recurrent_gradient_scaling_factor
        for k in range(K):
            if k > 0:
                latent = latent * scale + latent.detach() * (1 - scale)
            e = self.model.g(torch.cat([latent, actions[:, k]], 1))
            latent = self.model.scale(self.model.g_latent(e))
            rewards.append(self.model.g_reward(e))
            values.append(self.model.predict(latent)[0])
        step_w = torch.tensor([1.0] + [1.0 / max(K, 1)] * K)
        v_ce = -(self._two_hot(z) * torch.stack(values, 1).log_softmax(-1)).sum(-1)  # [B, K+1]
        r_ce = -(self._two_hot(t(s.reward[idx[:, :K]])) * torch.stack(rewards, 1).log_softmax(-1)).sum(-1)
        v_k = (v_ce * mask_v).sum(0) / mask_v.sum(0).clamp(min=1)
        r_k = (r_ce * mask_r).sum(0) / mask_r.sum(0).clamp(min=1)
        loss = hp.value_loss_weight * (v_k * step_w).sum() + hp.reward_loss_weight * (r_k * step_w[1:]).sum()
        self.model_opt.zero_grad()
        loss.backward()
        if hp.model_grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), hp.model_grad_clip)
        self.model_opt.step()
        self.num_model_updates += 1
        if self.num_model_updates % hp.model_target_update_period == 0:
            polyak_(self.model, self.target_model, hp.model_target_update_tau)
        if self.num_model_updates % hp.head_repr_update_period == 0:
            polyak_(self.model.h, self.head_h, hp.head_repr_update_tau)

    def actor(self, z):
        e = self.head(z)
        return tanh_gaussian_sample(self.mu(e), self.log_sigma(e))

    def rl_step(self) -> None:
        hp, s = self.hp, self.store
        B, N = hp.batch_size, hp.n_step
        idx, valid = s.windows(B, N)
        last = idx[np.arange(B), valid.sum(1) - 1]
        r = (s.reward[idx] * valid * self.gamma ** np.arange(N)).sum(1).astype(np.float32)
        boot = (self.gamma ** valid.sum(1) * (1.0 - s.terminal[last])).astype(np.float32)
        act = t(s.action[idx[:, 0]])
        alpha = self.log_alpha.exp()
        with torch.no_grad():
            encoder = self.head_h if self.read_copy else self.model.h
            z = self.model.scale(encoder(torch.cat([t(s.obs[idx[:, 0]]), t(s.next_obs[last])])))
            z0, z1 = z[:B], z[B:]
            a1, logp1 = self.actor(z1)
            x1 = torch.cat([z1, a1], 1)
            v1 = torch.min(self.q_target[0](x1), self.q_target[1](x1)).squeeze(1)
            if self.entropy_reward:
                v1 = v1 - alpha * logp1
            y = t(r) + t(boot) * v1
        x = torch.cat([z0, act], 1)
        q_loss = sum(0.5 * ((q(x).squeeze(1) - y) ** 2).mean() for q in self.q)
        a_pi, logp = self.actor(z0)
        self.q.requires_grad_(False)
        xp = torch.cat([z0, a_pi], 1)
        pi_loss = (alpha.detach() * logp - self.q[0](xp).squeeze(1)).mean()
        self.q.requires_grad_(True)
        temp_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.rl_opt.zero_grad()
        (q_loss + pi_loss + temp_loss).backward()
        self.rl_opt.step()
        polyak_(self.q, self.q_target, hp.tau)

    def step(self) -> None:
        self.model_step()
        self.rl_step()

    @property
    def optimizers(self):
        return [self.model_opt, self.rl_opt]

