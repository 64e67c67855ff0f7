"""What muzero_repr's latent holds, what its critic sees, and where the representation's gradient comes from.

Trains muzero_repr in-process on a ``reach_continuous`` scene (the defaults benchmark's drop-in config, 1 area = 8
agents, ``--set key=value`` overrides of muzero_repr's own fields), then, on observations the run never trained on
(the scripted expert with Gaussian action noise, so the states cover the arena):

* **latent probes**: ridge regressions from ``s_0 = h(o)`` to the true position, velocity, target, target - position
  and the expert's action; R^2 on held-out states (1 = the latent holds it linearly, 0 = not at all).  The same
  probes on a freshly initialised h give the floor; on the raw observation the ceiling.
* **critic**: the mean of ``Q1(s, a_expert) - Q1(s, a_random)`` over states and the fraction of states where the
  critic ranks the expert's action above a uniform random one (0.5 = it cannot tell them apart).
* **gradient routing**: on one replay batch, the norm of the gradient each loss sends into h's parameters (model
  value, reward, consistency; the SAC critic's TD loss with the latent attached, whether or not the trainer
  attaches it; the actor loss), and whether the trainer's own update lets the critic's gradient in.

    .venv/bin/python -m bench latent-probe --scene reach_continuous --steps 20000 --seed 0 \
        [--set rl_gradient_to_repr=true ...] [--json out.json]
"""
import argparse
import json
import math
import tempfile
from typing import Dict, List, Tuple

import numpy as np
import yaml

PROBED = ("position", "velocity", "target", "target - position", "expert action")


def ridge_r2(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
             l2: float = 1e-3) -> float:
    """R^2 on the test rows of a ridge regression (features standardised on the training rows, bias free)."""
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-8
    a = np.concatenate([(x_train - mu) / sd, np.ones((len(x_train), 1))], 1)
    b = np.concatenate([(x_test - mu) / sd, np.ones((len(x_test), 1))], 1)
    reg = l2 * len(a) * np.eye(a.shape[1])
    reg[-1, -1] = 0.0
    w = np.linalg.solve(a.T @ a + reg, a.T @ y_train)
    resid = ((b @ w - y_test) ** 2).sum(0)
    total = ((y_test - y_test.mean(0)) ** 2).sum(0)
    return float(1.0 - resid.sum() / total.sum())


def probe_states(scene_name: str, decisions: int, seed: int, noise: float = 0.5) -> Tuple[List[np.ndarray], Dict[str, np.ndarray]]:
    """Observations of the scene under the expert with Gaussian action noise, and the true quantities behind them."""
    from mlagents_envs.base_env import ActionTuple

    from mlagents_plugins.envs.scenes import scene_class

    scene = scene_class(scene_name)(num_areas=4, seed=seed)
    rng = np.random.default_rng(seed)
    obs: List[List[np.ndarray]] = []
    truth: Dict[str, List[np.ndarray]] = {k: [] for k in PROBED}
    for _ in range(decisions):
        expert = scene.heuristic().continuous
        obs.append(scene.observe())
        truth["position"].append(scene.pos.copy())
        truth["velocity"].append(scene.vel.copy())
        truth["target"].append(scene.target.copy())
        truth["target - position"].append(scene.target - scene.pos)
        truth["expert action"].append(expert.copy())
        act = np.clip(expert + noise * rng.standard_normal(expert.shape), -1, 1).astype(np.float32)
        scene.step(ActionTuple(continuous=act))
    stacked = [np.concatenate([o[i] for o in obs]) for i in range(len(obs[0]))]
    return stacked, {k: np.concatenate(v) for k, v in truth.items()}


def probe_table(features: np.ndarray, truth: Dict[str, np.ndarray]) -> Dict[str, float]:
    n = len(features)
    half = n // 2
    return {k: round(ridge_r2(features[:half], v[:half], features[half:], v[half:]), 3) for k, v in truth.items()}


def critic_view(opt, latent, truth: Dict[str, np.ndarray], seed: int) -> Dict[str, float]:
    import torch

    rng = np.random.default_rng(seed + 1)
    expert = torch.as_tensor(truth["expert action"], dtype=torch.float32)
    random = torch.as_tensor(rng.uniform(-1, 1, expert.shape), dtype=torch.float32)
    with torch.no_grad():
        q_e = _q1(opt, latent, expert)
        q_r = _q1(opt, latent, random)
    return {"q expert - q random": round(float((q_e - q_r).mean()), 4),
            "fraction expert ranked higher": round(float((q_e > q_r).float().mean()), 3),
            "q std over states": round(float(q_e.std()), 4)}


def _q1(opt, latent, actions):
    q1, _ = opt.head.q_net([latent], actions, first_only=True)
    return q1.reshape(-1)


def gradient_routes(trainer) -> Dict[str, float]:
    """Norm of the gradient each loss sends into h (one replay batch; nothing is stepped)."""
    import torch

    opt = trainer.optimizer
    h_params = [p for p in opt.actor.representation.parameters()]
    out: Dict[str, float] = {}

    def norm_of(loss) -> float:
        grads = torch.autograd.grad(loss, h_params, retain_graph=True, allow_unused=True)
        return round(math.sqrt(sum(float((g ** 2).sum()) for g in grads if g is not None)), 5)

    mb = trainer.sample_model_batch()
    fwd = opt.model_loss(mb)
    w = opt.loss_weights
    K = opt.hyperparameters.num_unroll_steps
    scale = torch.full((K + 1,), 1.0 / max(K, 1))
    scale[0] = 1.0
    out["model value"] = norm_of(w.value * (fwd.losses.value_k * scale).sum())
    if fwd.losses.reward_k is not None:
        out["model reward"] = norm_of(w.reward * (fwd.losses.reward_k * scale[1:]).sum())
    if fwd.losses.consistency_k is not None:
        out["model consistency"] = norm_of(w.consistency * (fwd.losses.consistency_k * scale[1:]).sum())
    out["model total"] = norm_of(fwd.losses.total)
    rb = trainer.sample_rl_batch()
    z_tm1 = opt.actor.representation(rb.obs)  # attached, whatever the trainer does
    with torch.no_grad():
        z_t = opt.actor.representation(rb.next_obs)
    losses = opt.head.losses(opt._actor_on_latent, rb, [z_tm1], [z_t], policy_s_tm1=[z_tm1])
    out["critic TD (if attached)"] = norm_of(losses.q1_loss + losses.q2_loss)
    out["actor (if attached)"] = norm_of(losses.policy_loss)
    out["trainer lets the critic's gradient in"] = bool(opt.actor.network_body.rl_gradient_to_repr)
    return out


def main(argv=None) -> None:
    import torch

    from bench.plan import minimal_config
    from bench.runner import capture_trainers
    from mlagents_plugins.envs.harness import train_in_process
    from mlagents_plugins.muzero_repr.networks import Representation

    p = argparse.ArgumentParser(prog="python -m bench latent-probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--scene", default="reach_continuous")
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", nargs="*", default=[], help="key=value (YAML) overrides of the trainer's hyperparameters")
    p.add_argument("--probe-decisions", type=int, default=400)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    cfg = minimal_config("muzero_repr")
    for pair in args.set:
        key, value = pair.split("=", 1)
        cfg["hyperparameters"][key] = yaml.safe_load(value)
    cfg.update(summary_freq=1000, checkpoint_interval=10 ** 9)
    with tempfile.TemporaryDirectory() as tmp, capture_trainers() as trainers:
        res = train_in_process(cfg, args.scene, max_steps=args.steps, seed=args.seed, num_areas=1, output_dir=tmp,
                               run_id="probe")
    trainer = trainers[-1]
    record: Dict[str, object] = {"scene": args.scene, "steps": args.steps, "seed": args.seed, "set": args.set,
                                 "curve": [[int(s), round(float(r), 3)] for s, r in res.reward_curve],
                                 "final": round(float(res.final_mean_reward), 3)}
    obs, truth = probe_states(args.scene, args.probe_decisions, seed=1000 + args.seed)
    tensors = [torch.as_tensor(o) for o in obs]
    opt = trainer.optimizer
    with torch.no_grad():
        latent = opt.actor.representation(tensors)
        fresh = Representation(trainer.policy.behavior_spec.observation_specs,
                               trainer.trainer_settings.network_settings, opt.hyperparameters.latent_size,
                               opt.actor.representation.scaling)(tensors)
    record["probe R2: trained latent"] = probe_table(latent.numpy(), truth)
    record["probe R2: untrained h"] = probe_table(fresh.numpy(), truth)
    record["critic"] = critic_view(opt, latent, truth, args.seed)
    record["gradient into h"] = gradient_routes(trainer)
    if obs[0].ndim == 2:
        record["probe R2: raw observation"] = probe_table(obs[0], truth)
    text = json.dumps(record, indent=1)
    print(text)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(record) + "\n")

