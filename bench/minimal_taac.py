"""Minimal hand-written PyTorch TAAC update (constant trajectories), at ``taac``'s size.

Same work per update as ``TaacTrainer.update_once`` (Yu, Xu, Zhang 2021): ``ceil(batch_size / L)`` windows
of ``L = mini_batch_length`` rows; at ``(s_t, tau^-_t)`` a reparameterised proposal, the switch
distribution ``beta ~ exp(Q / alpha_b)`` from the online critics' minimum (Eq. 3) and a fresh switch, the
switch-scaled actor loss (Eq. 7, critics frozen); at ``s_{t+1}`` with ``tau^- = tau_t`` the bootstrap
``E_beta[min_i Q_target_i]``; compare-through targets (Eq. 5, backward over the window: follow the stored
rows while neither the rollout nor the fresh switch switched, else bootstrap); critic loss of every replica
on ``Q_i(s_t, tau_t)``; both temperature losses; ONE backward, three Adam steps (actor, critics,
temperatures), Polyak update of the target critics.  Constant trajectories: ``tau = a``, keeping advances
``tau^-`` unchanged, a new trajectory is the proposal itself.  Layers: actor ``num_layers x hidden`` Swish
on ``[obs, tau^-]`` + mean and log-sigma layers; ``num_critic_replicas`` critics ``num_layers x hidden``
Swish on ``[obs, tau]`` + a linear output.
"""
import math

import numpy as np
import torch

from bench.minimal_nets import OFFPOLICY_BASE_SETTINGS, RowStore, frozen_copy, polyak_, swish_mlp, t, tanh_gaussian_sample

SETTINGS = dict(
    OFFPOLICY_BASE_SETTINGS,
    trajectory="checked: constant", inverse_mode="no work: constant trajectories",
    mini_batch_length="window length", num_critic_replicas="critics", target_update_tau="Polyak rate",
    target_update_period="checked: 1 (Polyak every update)", init_action_temperature="initial temperature",
    init_switch_temperature="initial temperature", action_target_entropy_scale="action target entropy",
    switch_target_entropy="switch target entropy", b1_advantage_clipping="checked: null",
    max_repeat_steps="no work: acting only", randomize_first_state_tau="no work: acting only",
    critic_layer_norm="critics' hidden layers normalized (true, automatic here) or not (false)",
    critic_small_init="checked: false (ML-Agents' initialization of the critics' output layers)",
    critic_warmup_updates="the first updates train the critics alone",
    critic_neutral_init="checked: false (ML-Agents' initialization of the critics' action inputs)",
    actor_min_q="checked: the critics' minimum (null with vector observations, or true)",
)


def compare_through(r: torch.Tensor, terminal: torch.Tensor, v1: torch.Tensor, switch: torch.Tensor,
                    valid: torch.Tensor, gamma: float) -> torch.Tensor:
    """Compare-through targets ``[n, L]`` (Eq. 5): ``G_j = r_j + gamma (1 - terminal_j) X``, ``X = v1_j`` when
    the return is cut after row j (row j+1 switched or is invalid, row j ended the episode, last row), else
    ``G_{j+1}``.  Values on invalid rows are not used."""
    n, L = r.shape
    cut = torch.ones_like(switch)
    cut[:, :-1] = switch[:, 1:] | (terminal[:, :-1] > 0) | ~valid[:, 1:]
    g = torch.zeros(n, L)
    g_next = torch.zeros(n)
    for j in reversed(range(L)):
        g_next = r[:, j] + gamma * (1 - terminal[:, j]) * torch.where(cut[:, j], v1[:, j], g_next)
        g[:, j] = g_next
    return g


class MinimalTAAC:
    def __init__(self, settings, obs_size: int, act_size: int, rows: int, seed: int = 0):
        hp, net = settings.hyperparameters, settings.network_settings
        if (hp.trajectory != "constant" or hp.target_update_period != 1 or hp.b1_advantage_clipping is not None
                or hp.critic_small_init or hp.critic_neutral_init or hp.actor_min_q is False):
            raise ValueError("the minimal TAAC loop covers trajectory: constant, target_update_period: 1, "
                             "b1_advantage_clipping: null, critic_small_init and critic_neutral_init: false, "
                             "actor_min_q: null or true only")
        self.hp = hp
        self.L = hp.window_length
        self.n_seq = int(math.ceil(hp.batch_size / self.L))
        self.gamma = settings.reward_signals[next(iter(settings.reward_signals))].gamma
        h, n = net.hidden_units, net.num_layers
        self.body = swish_mlp(obs_size + act_size, h, n)
        self.mu, self.log_sigma = torch.nn.Linear(h, act_size), torch.nn.Linear(h, act_size)
        self.critics = torch.nn.ModuleList(
            [swish_mlp(obs_size + act_size, h, n, 1, layer_norm=hp.critics_layer_normed(h))
             for _ in range(hp.num_critic_replicas)])
        self.targets = frozen_copy(self.critics)
        self.log_alpha_a = torch.nn.Parameter(torch.tensor(math.log(hp.init_action_temperature)))
        self.log_alpha_b = torch.nn.Parameter(torch.tensor(math.log(hp.init_switch_temperature)))
        actor = list(self.body.parameters()) + list(self.mu.parameters()) + list(self.log_sigma.parameters())
        self.opts = [torch.optim.Adam(actor, lr=hp.learning_rate),
                     torch.optim.Adam(self.critics.parameters(), lr=hp.learning_rate),
                     torch.optim.Adam([self.log_alpha_a, self.log_alpha_b], lr=hp.learning_rate)]
        self.target_entropy_a = -hp.action_target_entropy_scale * act_size
        self.store = RowStore(rows, obs_size, act_size, np.random.default_rng(seed), extra=(("tau_prev", act_size),))
        self.store.switch = self.store.rng.random(rows) < 0.3
        self.warmup_left = hp.critic_warmup_updates  # updates still to train the critics alone

    def propose(self, obs: torch.Tensor, tau_prev: torch.Tensor):
        e = self.body(torch.cat([obs, tau_prev], 1))
        return tanh_gaussian_sample(self.mu(e), self.log_sigma(e))

    def q_min(self, nets, obs: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, tau], 1)
        return torch.min(torch.cat([q(x) for q in nets], 1), 1).values

    def step(self) -> None:
        hp, s, L = self.hp, self.store, self.L
        idx, valid_np = s.windows(self.n_seq, L)
        flat = idx.reshape(-1)
        obs, next_obs = t(s.obs[flat]), t(s.next_obs[flat])
        tau_prev, tau = t(s.tau_prev[flat]), t(s.action[flat])
        valid = t(valid_np.reshape(-1).astype(np.float32))
        n_valid = valid.sum().clamp(min=1.0)
        alpha_a, alpha_b = self.log_alpha_a.exp().detach(), self.log_alpha_b.exp().detach()

        x, log_pi = self.propose(obs, tau_prev)  # tau_new = x, tau_keep = tau_prev
        self.critics.requires_grad_(False)
        q_new = self.q_min(self.critics, obs, x)
        self.critics.requires_grad_(True)
        with torch.no_grad():
            z = (q_new - self.q_min(self.critics, obs, tau_prev)) / alpha_b
            p_switch = torch.sigmoid(z)
            entropy_b = -(torch.sigmoid(-z) * torch.nn.functional.logsigmoid(-z)
                          + p_switch * torch.nn.functional.logsigmoid(z))
            fresh = torch.rand_like(p_switch) < p_switch
        actor_loss = ((alpha_a * log_pi - p_switch * q_new) * valid).sum() / n_valid

        with torch.no_grad():
            x1, _ = self.propose(next_obs, tau)
            p1 = torch.sigmoid((self.q_min(self.critics, next_obs, x1) - self.q_min(self.critics, next_obs, tau)) / alpha_b)
            v1 = ((1 - p1) * self.q_min(self.targets, next_obs, tau) + p1 * self.q_min(self.targets, next_obs, x1))
            v1 = v1.reshape(self.n_seq, L)
            switch = t(s.switch[idx]) | fresh.reshape(self.n_seq, L)
            g = compare_through(t(s.reward[idx]), t(s.terminal[idx]), v1, switch, t(valid_np), self.gamma).reshape(-1)
        xq = torch.cat([obs, tau], 1)
        critic_loss = sum(0.5 * (((q(xq).squeeze(1) - g) ** 2) * valid).sum() / n_valid for q in self.critics)
        temperature_loss = (self.log_alpha_a * (((-log_pi.detach() - self.target_entropy_a) * valid).sum() / n_valid)
                            + self.log_alpha_b * (((entropy_b - hp.switch_target_entropy) * valid).sum() / n_valid))
        opts = self.opts[1:2] if self.warmup_left > 0 else self.opts  # the critics' optimizer alone while warming up
        for opt in opts:
            opt.zero_grad()
        (critic_loss if self.warmup_left > 0 else critic_loss + actor_loss + temperature_loss).backward()
        self.warmup_left -= 1
        for opt in opts:
            opt.step()
        polyak_(self.critics, self.targets, hp.target_update_tau)

    @property
    def optimizers(self):
        return self.opts
