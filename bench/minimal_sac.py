"""Minimal hand-written PyTorch update of the SAC variant that ``fast_sac`` runs, at the same size.

Same work per update as ``FastSACTrainer.update_once`` on continuous actions: ``batch_size`` windows of
``n_step`` rows (stopping at an episode end), soft n-step targets from Polyak twin target critics
[SAC-2 eq. 2-3 generalised to n steps], twin-Q loss, actor loss on Q1 (fast_sac's automatic ``actor_min_q``
for continuous-only actions) with the critics frozen, temperature loss, then ONE backward of the summed
losses, ONE Adam step over actor + critics + temperature, and a fused Polyak update.  Layers: actor
``num_layers x hidden`` Swish + mean/log-sigma heads; each critic ``num_layers x hidden`` Swish on
``[obs, action]`` + a linear output.
"""
import numpy as np
import torch

from mlagents_plugins.common.bf16_matmul import bf16_products, use_bf16_linears_

from bench.minimal_nets import (OFFPOLICY_BASE_SETTINGS, RowStore, frozen_copy, polyak_, swish_mlp, t,
                                 tanh_gaussian_sample)

SETTINGS = dict(
    OFFPOLICY_BASE_SETTINGS,
    n_step="window length of the n-step target (fast_sac's null: 2 without critic_batch_renorm)",
    tau="Polyak rate",
    init_entcoef="initial temperature",
    actor_min_q="checked: automatic/false (Q1 objective for continuous actions)",
    entropy_reward="targets with (true, automatic here) or without (false) the entropy bonus",
    continuous_target_entropy_scale="target entropy -scale * action size",
    critic_layer_norm="critics' hidden layers normalized (true, automatic here) or not (false)",
    discrete_target_entropy_scale="no work: continuous actions only",
    prioritized_replay="checked: false",
    per_alpha="no work: prioritized_replay false",
    per_beta="no work: prioritized_replay false",
    per_epsilon="no work: prioritized_replay false",
    random_shift_pad="no work: vector observations only (shifts apply to camera frames)",
    critic_small_init="checked: false (ML-Agents' initialization of the critics' output layers)",
    critic_warmup_updates="the first updates train the critics alone",
    critic_neutral_init="checked: false (ML-Agents' initialization of the critics' action inputs)",
    critic_batch_renorm="checked: false (SAC's critics with Polyak targets)",
    batch_renorm_momentum="no work: critic_batch_renorm false",
    batch_renorm_warmup="no work: critic_batch_renorm false",
    critic_hidden_units="critics' width (null: hidden_units)",
    adam_beta1="Adam's beta1 (null: 0.9 without critic_batch_renorm)",
    actor_update_every="checked: 1 (the actor steps on every update; null resolves to 1 without critic_batch_renorm)",
    burn_in="no work: no network_settings.memory (refused without it)",
    network_activation="the hidden layers' activation (SiLU, or ReLU with relu)",
    network_init="no work per update: the initial weights only (this loop keeps PyTorch's nn.Linear default)",
    update_precision="the hidden layers' products in bf16 where it resolves so (null: auto), as fast_sac's",
    critic_value_bins="checked: 0 (scalar critics and squared residuals)",
    critic_weight_norm="checked: false (no projection of the critics' weights after a step)",
)
#: fast_sac's own settings (not the SAC head's): muzero_repr's minimal loop leaves them out.
FAST_SAC_OWN = ("critic_warmup_updates", "critic_neutral_init", "critic_batch_renorm", "batch_renorm_momentum", "batch_renorm_warmup",
                "critic_hidden_units", "adam_beta1", "actor_update_every", "burn_in",
                "network_activation", "network_init", "update_precision", "critic_value_bins",
                "critic_weight_norm")


class MinimalSAC:
    def __init__(self, settings, obs_size: int, act_size: int, rows: int, seed: int = 0):
        hp, net = settings.hyperparameters, settings.network_settings
        if (hp.prioritized_replay or hp.actor_min_q or hp.critic_small_init or hp.critic_neutral_init
                or hp.critic_batch_renorm or hp.resolved_actor_update_every() != 1 or hp.critic_value_bins
                or hp.critic_weight_norm):
            raise ValueError("the minimal SAC loop covers uniform replay, the Q1 actor objective, "
                             "critic_small_init, critic_neutral_init and critic_batch_renorm: false, "
                             "actor_update_every: 1, critic_value_bins: 0 and critic_weight_norm: false only")
        self.entropy_reward = hp.entropy_in_targets(0)  # continuous actions only
        self.batch, self.n_step, self.tau = hp.batch_size, hp.resolved_n_step(), hp.tau
        self.gamma = settings.reward_signals[next(iter(settings.reward_signals))].gamma
        self.target_entropy = -hp.continuous_target_entropy_scale * float(act_size)
        h, n = net.hidden_units, net.num_layers
        relu = hp.network_recipe().activation == "relu"
        self.body = swish_mlp(obs_size, h, n, relu=relu)
        self.mu, self.log_sigma = torch.nn.Linear(h, act_size), torch.nn.Linear(h, act_size)
        hc = hp.critic_hidden_units or h
        normed = hp.critics_layer_normed(0, hc)  # continuous actions only
        self.q1 = swish_mlp(obs_size + act_size, hc, n, 1, layer_norm=normed, relu=relu)
        self.q2 = swish_mlp(obs_size + act_size, hc, n, 1, layer_norm=normed, relu=relu)
        self.q = torch.nn.ModuleList([self.q1, self.q2])
        # bf16 products where fast_sac's update_precision resolves to them (the same layers switch)
        self.bf16 = hp.update_bf16("cpu")
        if self.bf16:
            for module in (self.body, self.q1, self.q2):
                use_bf16_linears_(module)
        self.q_target = frozen_copy(self.q)
        self.log_alpha = torch.nn.Parameter(torch.full((1,), float(np.log(hp.init_entcoef))))
        actor = list(self.body.parameters()) + list(self.mu.parameters()) + list(self.log_sigma.parameters())
        self.adam = torch.optim.Adam([{"params": actor}, {"params": list(self.q.parameters())},
                                     {"params": [self.log_alpha]}], lr=hp.learning_rate,
                                    betas=(hp.resolved_adam_beta1(), 0.999), foreach=True)
        self.store = RowStore(rows, obs_size, act_size, np.random.default_rng(seed))
        self.warmup_left = hp.critic_warmup_updates  # updates still to train the critics alone
        self.discounts = self.gamma ** np.arange(self.n_step, dtype=np.float32)

    def actor(self, obs: torch.Tensor):
        e = self.body(obs)
        return tanh_gaussian_sample(self.mu(e), self.log_sigma(e))

    def step(self) -> None:
        with bf16_products(self.bf16):
            self._step()

    def _step(self) -> None:
        s = self.store
        idx, valid = s.windows(self.batch, self.n_step)
        last = idx[np.arange(self.batch), valid.sum(1) - 1]
        obs, act, next_obs = t(s.obs[idx[:, 0]]), t(s.action[idx[:, 0]]), t(s.next_obs[last])
        # n-step return and bootstrap discount per row (valid rows only; a terminal ends the sum, no bootstrap)
        r = (s.reward[idx] * valid * self.discounts).sum(1)
        boot = self.gamma ** valid.sum(1) * (1.0 - s.terminal[last])
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            a2, logp2 = self.actor(next_obs)
            x2 = torch.cat([next_obs, a2], 1)
            v = torch.min(self.q_target[0](x2), self.q_target[1](x2)).squeeze(1)
            if self.entropy_reward:
                v = v - alpha * logp2
            y = t(r.astype(np.float32)) + t(boot.astype(np.float32)) * v
        x = torch.cat([obs, act], 1)
        q_loss = 0.5 * ((self.q1(x).squeeze(1) - y) ** 2).mean() + 0.5 * ((self.q2(x).squeeze(1) - y) ** 2).mean()
        a_pi, logp = self.actor(obs)
        self.q1.requires_grad_(False)
        q_pi = self.q1(torch.cat([obs, a_pi], 1)).squeeze(1)
        self.q1.requires_grad_(True)
        pi_loss = (alpha * logp - q_pi).mean()
        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.adam.zero_grad(set_to_none=True)
        (q_loss if self.warmup_left > 0 else q_loss + pi_loss + alpha_loss).backward()
        self.warmup_left -= 1
        self.adam.step()
        polyak_(self.q, self.q_target, self.tau)

    @property
    def optimizers(self):
        return [self.adam]
