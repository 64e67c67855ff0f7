"""Mechanism probe of bench/results/tiny-defaults-2026-11-28: train fast_sac on a tiny case (``tiny.train_case``, the
learning tests' harness) and, every ``--every`` updates, record for each goal g = -1, +1 what the actor would do:
per continuous dimension the pre-tanh mean ``mu``, ``sigma``, and ``p_goal = P(u * g > 0) = Phi(mu * g / sigma)``
(the probability of stepping toward the goal), per discrete branch the probability of the goal's choice, and the
critics' slope ``min(Q1, Q2)(a_d = +0.9) - min(Q1, Q2)(a_d = -0.9)`` times g (> 0: the critic favours the goal's
side), heads averaged.  One JSON line per record on stdout.

``python bench/results/tiny-defaults-2026-11-28/probe_saturation.py --case sac-hybrid-2c2d --seed 1 --steps 3000
[--set critic_warmup_updates=1000]``  (vector-observation cases only: the observation is g itself)
"""
import argparse
import json
import math
import tempfile

from mlagents.torch_utils import torch

from mlagents_plugins.envs import tiny
from mlagents_plugins.fast_sac.optimizer import FastSACOptimizer
from mlagents_plugins.sac.networks import discrete_log_probs


def _probe(opt: FastSACOptimizer, updates: int) -> dict:
    actor = opt.policy.actor
    spec = opt.action_spec
    obs = [torch.tensor([[-1.0], [1.0]])]
    g = obs[0][:, 0]
    out = {"update": updates}
    with torch.no_grad():
        enc, _ = actor.network_body(obs)
        if spec.continuous_size:
            gauss = actor.action_model._continuous_distribution
            mu = gauss.mu(enc)
            log_sigma = (torch.clamp(gauss.log_sigma(enc), -20, 2) if gauss.conditional_sigma
                         else gauss.log_sigma.expand_as(mu))
            sigma = log_sigma.exp()
            z = mu * g[:, None] / sigma
            out["mu"] = [[round(v, 3) for v in row] for row in mu.tolist()]
            out["sigma"] = [[round(v, 3) for v in row] for row in sigma.tolist()]
            out["p_goal"] = [[round(0.5 * (1 + math.erf(v / math.sqrt(2))), 4) for v in row] for row in z.tolist()]
            slopes = []
            for d in range(spec.continuous_size):
                lo, hi = torch.zeros(2, spec.continuous_size), torch.zeros(2, spec.continuous_size)
                lo[:, d], hi[:, d] = -0.9, 0.9
                q_lo = torch.minimum(*opt.head.q_net(obs, lo)).mean(dim=(1, 2))
                q_hi = torch.minimum(*opt.head.q_net(obs, hi)).mean(dim=(1, 2))
                slopes.append(((q_hi - q_lo) * g).tolist())
            out["slope_toward_goal"] = [[round(slopes[d][i], 4) for d in range(len(slopes))] for i in range(2)]
        if spec.discrete_size:
            mask = torch.ones(2, sum(spec.discrete_branches))
            lp = discrete_log_probs(actor.action_model._discrete_distribution, enc, mask).exp()
            # choice 1 moves +step: the goal's choice is 1 for g = +1, 0 for g = -1
            p = [[round(float(lp[i, 2 * k + (1 if g[i] > 0 else 0)]), 4) for k in range(len(spec.discrete_branches))]
                 for i in range(2)]
            out["p_goal_branch"] = p
        out["alpha_cont"] = round(float(opt.head.temperatures.log_alpha_cont.exp()), 5)
        out["alpha_disc"] = [round(v, 5) for v in opt.head.temperatures.log_alpha_disc.exp().tolist()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", default="sac-hybrid-2c2d")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--set", nargs="*", default=[], dest="overrides")
    args = parser.parse_args()
    torch.set_num_threads(1)
    overrides = {k: json.loads(v) for k, _, v in (s.partition("=") for s in args.overrides)}
    base = tiny.CASES[args.case]
    case = tiny.TinyCase(base.name, base.task, base.builtin, args.steps, base.hyperparameters + tuple(overrides.items()),
                         base.network_settings, base.threshold)
    original = FastSACOptimizer.update
    count = {"n": 0}

    def update(self, batch):
        result = original(self, batch)
        count["n"] += 1
        if count["n"] % args.every == 0:
            print(json.dumps(dict(_probe(self, count["n"]), case=args.case, seed=args.seed, set=overrides)),
                  flush=True)
        return result

    FastSACOptimizer.update = update
    with tempfile.TemporaryDirectory() as out_dir:
        result = tiny.train_case(case, "fast_sac", args.seed, out_dir)
    print(json.dumps({"case": args.case, "seed": args.seed, "set": overrides, "steps": args.steps,
                      "final": round(result.final_mean_reward, 3),
                      "curve": [round(v, 2) for _, v in result.reward_curve]}), flush=True)


if __name__ == "__main__":
    main()
