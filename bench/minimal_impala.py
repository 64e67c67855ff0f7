"""Minimal hand-written PyTorch IMPALA learner step (V-trace actor-critic), at ``impala``'s size.

Same work per update as ``ImpalaTrainer._learn_on`` for a batch of full pieces: ``batch_size`` steps as
``batch_size / unroll_length`` pieces of ``unroll_length`` steps (time-major), the policy's log-probabilities and entropy of the stored actions, V of
every step with gradient and of each piece's bootstrap observation without, V-trace targets and
policy-gradient advantages (Espeholt et al. 2018 eq. 1 and sec. 4.2, backward recursion over time),
optional advantage standardisation, the policy loss - the clipped surrogate on pi/mu with the advantage
``q_s - V(x_s)`` when ``surrogate_clip`` is set (impala's default), else the paper's ``pg_rho``-weighted
policy gradient - + value_weight * value + entropy_weight * entropy loss, ONE
backward, global gradient-norm clip, ONE Adam step.  Layers: actor ``num_layers x hidden`` Swish + mean
layer + a state-independent log-sigma parameter (ML-Agents' ``SimpleActor`` without conditional sigma);
critic ``num_layers x hidden`` Swish + a linear value head (``shared_critic: false``).

The pieces live in numpy arrays ``[P, T, ...]`` (the minimal loop's queue); a batch is B random pieces.
"""
import numpy as np
import torch

from bench.minimal_nets import FAST_CPU_MATMUL, LOG_SQRT_2PI, swish_mlp, t

#: how the loop treats each ImpalaSettings field (see minimal_nets.OFFPOLICY_BASE_SETTINGS)
SETTINGS = {
    "batch_size": "steps per update (batch_size / unroll_length full pieces)", "unroll_length": "steps per piece", "learning_rate": "Adam step size",
    "learning_rate_schedule": "no per-update work (constant)", "buffer_size": "no per-update work (queue size)",
    "rho_clip": "V-trace rho-bar", "c_clip": "V-trace c-bar", "trace_lambda": "V-trace lambda",
    "pg_rho_clip": "policy-gradient weight clip (without surrogate_clip)", "surrogate_clip": "clipped surrogate",
    "surrogate_clip_schedule": "no per-update work (constant)",
    "value_weight": "value loss weight", "entropy_weight": "entropy loss weight",
    "entropy_weight_schedule": "no per-update work (constant)", "grad_clip_norm": "global norm clip",
    "optimizer": "checked: adam", "rmsprop_alpha": "no work: adam", "optimizer_epsilon": "Adam epsilon",
    "shared_critic": "checked: false (separate critic)", "normalize_advantage": "advantage standardisation",
    "max_reuse": "no per-update work (which pieces, not how many)", "fast_cpu_matmul": FAST_CPU_MATMUL,
    "update_style": "checked: stream (one gradient step on whole pieces, what ImpalaTrainer._learn_on times)",
    "kl_stop": "no work under stream (epochs only)",
}


def vtrace(log_rho: torch.Tensor, discount: torch.Tensor, r: torch.Tensor, v: torch.Tensor, v_boot: torch.Tensor,
           rho_clip, c_clip, lambda_: float):
    """(v_s targets, ``q_s = r_s + discount_s v_{s+1}``), both ``[T, B]``, for full pieces (no padding)."""
    rho = log_rho.exp()
    rho_c = rho.clamp(max=rho_clip) if rho_clip is not None else rho
    c = lambda_ * (rho.clamp(max=c_clip) if c_clip is not None else rho)
    v_next = torch.cat([v[1:], v_boot[None]], 0)
    delta = rho_c * (r + discount * v_next - v)
    vs_minus_v = torch.zeros_like(v)
    acc = torch.zeros_like(v_boot)
    for s in reversed(range(v.shape[0])):
        acc = delta[s] + discount[s] * c[s] * acc
        vs_minus_v[s] = acc
    vs = v + vs_minus_v
    return vs, r + discount * torch.cat([vs[1:], v_boot[None]], 0)


class MinimalImpala:
    def __init__(self, settings, obs_size: int, act_size: int, pieces: int, seed: int = 0):
        hp, net = settings.hyperparameters, settings.network_settings
        if hp.shared_critic or hp.optimizer != "adam" or hp.update_style != "stream":
            raise ValueError("the minimal IMPALA loop covers shared_critic: false with optimizer: adam and "
                             "update_style: stream only")
        self.hp = hp
        self.T = hp.unroll_length
        self.B = -(-hp.batch_size // self.T)  # full pieces holding batch_size steps
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
        eps = getattr(hp, "surrogate_clip", None)
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
            log_rho = log_pi - log_mu
            vs, q = vtrace(log_rho, discount, r, v, v_boot, hp.rho_clip, hp.c_clip, hp.trace_lambda)
            adv = q - v
            if eps is None:  # the paper's policy gradient: advantage weighted by the clipped importance weight
                adv = adv * (log_rho.exp().clamp(max=hp.pg_rho_clip) if hp.pg_rho_clip is not None else log_rho.exp())
            if hp.normalize_advantage:
                adv = (adv - adv.mean()) / (adv.var(unbiased=False) + 1e-8).sqrt()
        if eps is None:
            policy_loss = -(log_pi * adv).mean()
        else:  # clipped surrogate on pi/mu (IMPACT / PPO eq. 7 with the behaviour policy as the old one)
            ratio = (log_pi - log_mu).exp()
            policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv).mean()
        loss = policy_loss + hp.value_weight * 0.5 * ((vs - v) ** 2).mean() - hp.entropy_weight * entropy
        self.adam.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, hp.grad_clip_norm if hp.grad_clip_norm else float("inf"))
        self.adam.step()

    @property
    def optimizers(self):
        return [self.adam]
