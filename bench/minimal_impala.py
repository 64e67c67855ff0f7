"""Minimal hand-written PyTorch IMPALA learner step (V-trace actor-critic), at ``impala``'s size.

Same work per update as ``ImpalaTrainer._learn_on`` for a batch of full pieces: ``batch_size`` pieces of
``unroll_length`` steps (time-major), the policy's log-probabilities and entropy of the stored actions, V of
every step with gradient and of each piece's bootstrap observation without, V-trace targets and
policy-gradient advantages (Espeholt et al. 2018 eq. 1 and sec. 4.2, backward recursion over time),
optional advantage standardisation, policy + value_weight * value + entropy_weight * entropy loss, ONE
backward, global gradient-norm clip, ONE Adam step.  Layers: actor ``num_layers x hidden`` Swish + mean
layer + a state-independent log-sigma parameter (ML-Agents' ``SimpleActor`` without conditional sigma);
critic ``num_layers x hidden`` Swish + a linear value head (``shared_critic: false``).

The pieces live in numpy arrays ``[P, T, ...]`` (the minimal loop's queue); a batch is B random pieces.
"""
import numpy as np
import torch

from bench.minimal_nets import LOG_SQRT_2PI, swish_mlp, t


def vtrace(log_rho: torch.Tensor, discount: torch.Tensor, r: torch.Tensor, v: torch.Tensor, v_boot: torch.Tensor,
           rho_clip, c_clip, pg_rho_clip, lambda_: float):
    """(v_s targets, policy-gradient advantages), both ``[T, B]``, for full pieces (no padding)."""
    rho = log_rho.exp()
    rho_c = rho.clamp(max=rho_clip) if rho_clip is not None else rho
    c = lambda_ * (rho.clamp(max=c_clip) if c_clip is not None else rho)
    pg_rho = rho.clamp(max=pg_rho_clip) if pg_rho_clip is not None else rho
    v_next = torch.cat([v[1:], v_boot[None]], 0)
    delta = rho_c * (r + discount * v_next - v)
    vs_minus_v = torch.zeros_like(v)
    acc = torch.zeros_like(v_boot)
    for s in reversed(range(v.shape[0])):
        acc = delta[s] + discount[s] * c[s] * acc
        vs_minus_v[s] = acc
    vs = v + vs_minus_v
    return vs, pg_rho * (r + discount * torch.cat([vs[1:], v_boot[None]], 0) - v)


class MinimalImpala:
    def __init__(self, settings, obs_size: int, act_size: int, pieces: int, seed: int = 0):
        hp, net = settings.hyperparameters, settings.network_settings
        if hp.shared_critic or hp.optimizer != "adam":
            raise ValueError("the minimal IMPALA loop covers shared_critic: false with optimizer: adam only")
        self.hp = hp
        self.B, self.T = hp.batch_size, hp.unroll_length
        self.gamma = settings.reward_signals[next(iter(settings.reward_signals))].gamma
        h, n = net.hidden_units, net.num_layers
        self.body = swish_mlp(obs_size, h, n)
        self.mu = torch.nn.Linear(h, act_size)
        self.log_sigma = torch.nn.Parameter(torch.zeros(1, act_size))
        self.critic = swish_mlp(obs_size, h, n, 1)
        self.params = (list(self.body.parameters()) + list(self.mu.parameters()) + [self.log_sigma]
                       + list(self.critic.parameters()))
        self.adam = torch.optim.Adam(self.params, lr=hp.learning_rate, eps=hp.optimizer_epsilon)
        rng = np.random.default_rng(seed)
        self.rng = rng
        P, T = pieces, self.T
        self.obs = rng.normal(size=(P, T, obs_size)).astype(np.float32)
        self.boot_obs = rng.normal(size=(P, obs_size)).astype(np.float32)
        self.action = rng.normal(size=(P, T, act_size)).astype(np.float32)
        self.log_mu = rng.normal(-1.0, 0.3, (P, T, act_size)).astype(np.float32).sum(-1)
        self.reward = rng.normal(size=(P, T)).astype(np.float32)
        self.terminal = (np.arange(P) % 2 == 0).astype(np.float32)  # last step of every other piece ends its episode

    def step(self) -> None:
        hp, B, T = self.hp, self.B, self.T
        idx = self.rng.integers(0, len(self.obs), B)
        obs = t(self.obs[idx].swapaxes(0, 1).reshape(T * B, -1))  # time-major rows t * B + b
        act = t(self.action[idx].swapaxes(0, 1).reshape(T * B, -1))
        log_mu = t(self.log_mu[idx].T)  # [T, B]
        r = t(self.reward[idx].T)
        discount = torch.full((T, B), self.gamma)
        discount[-1] = self.gamma * (1.0 - t(self.terminal[idx]))

        mu = self.mu(self.body(obs))
        log_pi = (-0.5 * ((act - mu) / self.log_sigma.exp()) ** 2 - self.log_sigma - LOG_SQRT_2PI).sum(-1).reshape(T, B)
        entropy = (0.5 + LOG_SQRT_2PI + self.log_sigma).sum()
        v = self.critic(obs).reshape(T, B)
        with torch.no_grad():
            v_boot = self.critic(t(self.boot_obs[idx])).squeeze(1)
            vs, adv = vtrace(log_pi - log_mu, discount, r, v, v_boot, hp.rho_clip, hp.c_clip, hp.pg_rho_clip,
                             hp.trace_lambda)
            if hp.normalize_advantage:
                adv = (adv - adv.mean()) / (adv.var(unbiased=False) + 1e-8).sqrt()
        loss = (-(log_pi * adv).mean() + hp.value_weight * 0.5 * ((vs - v) ** 2).mean()
                - hp.entropy_weight * entropy)
        self.adam.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, hp.grad_clip_norm if hp.grad_clip_norm else float("inf"))
        self.adam.step()

    @property
    def optimizers(self):
        return [self.adam]
