"""Mechanism probe (issue 53): taac on the tiny one-camera continuous case; every --every updates, for each goal
g = -1, +1 (the camera's lit third) and tau^- in {0, -0.9, +0.9}: the proposal's tanh(mean) and std (pre-tanh),
the critics' pessimistic Q of keeping tau^- and of the proposal, p_switch, and the critics' slope
Q(tau=+0.9) - Q(tau=-0.9) times g (> 0: favours the goal's side).  One JSON line per record."""
import argparse, json, tempfile
import numpy as np
from mlagents.torch_utils import torch
from mlagents_plugins.envs import tiny
from mlagents_plugins.taac.optimizer import TaacOptimizer
from mlagents_plugins.taac import losses


def images(task):
    c, h, w = task.image
    out = np.full((2, c, h, w), tiny.DARK, dtype=np.float32)
    out[0, :, :, : w // 3] = tiny.LIT
    out[1, :, :, w - w // 3:] = tiny.LIT
    return torch.tensor(out)


def probe(opt, n, task):
    a = opt.actor
    obs = [images(task)]
    g = torch.tensor([-1.0, 1.0])
    rec = {"update": n, "alpha_a": round(float(a.log_alpha_action.exp()), 4), "alpha_s": round(float(a.log_alpha_switch.exp()), 4)}
    with torch.no_grad():
        for name, t in (("t0", 0.0), ("tm", -0.9), ("tp", 0.9)):
            tau_prev = torch.full((2, a.tau_size), t)
            enc, _ = a.network_body(obs, tau_prev)
            dist = a.distribution(enc)
            x = torch.tanh(dist.mean)
            keep, new = a.switch_candidates(x, tau_prev)
            qk, qn = a.critic.total(obs, keep), a.critic.total(obs, new)
            sd = losses.switch_distribution(qk, qn, a.switch_temperature(), a.advantage_clipping)
            rec[name] = {"x_goal": [round(float(v), 3) for v in (x[:, 0] * g)], "std": [round(float(v), 3) for v in dist.std[:, 0]],
                         "qk": [round(float(v), 3) for v in qk], "qn": [round(float(v), 3) for v in qn],
                         "p_sw": [round(float(v), 3) for v in sd.p_switch]}
        hi = a.critic.total(obs, torch.full((2, a.tau_size), 0.9))
        lo = a.critic.total(obs, torch.full((2, a.tau_size), -0.9))
        rec["slope_goal"] = [round(float(v), 3) for v in (hi - lo) * g]
    return rec


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--set", nargs="*", default=[], dest="overrides")
    args = p.parse_args()
    torch.set_num_threads(1)
    overrides = {k: json.loads(v) for k, _, v in (s.partition("=") for s in args.overrides)}
    base = tiny.CASES["sac-camera-continuous"]
    case = tiny.TinyCase(base.name, base.task, base.builtin, base.max_steps, base.hyperparameters + tuple(overrides.items()),
                         base.network_settings, base.threshold)
    original = TaacOptimizer.update
    count = {"n": 0}

    def update(self, batch, num_sequences=0):
        r = original(self, batch, num_sequences)
        count["n"] += 1
        if count["n"] % args.every == 0 or count["n"] in (1, 25, 50):
            print(json.dumps(probe(self, count["n"], base.task)), flush=True)
        return r

    TaacOptimizer.update = update
    with tempfile.TemporaryDirectory() as d:
        res = tiny.train_case(case, "taac", args.seed, d)
    print(json.dumps({"seed": args.seed, "set": overrides, "final": round(res.final_mean_reward, 3),
                      "curve": [round(v, 2) for _, v in res.reward_curve]}), flush=True)


if __name__ == "__main__":
    main()
