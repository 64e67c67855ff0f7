"""Probe of 2026-11-26 (docs/fast_sac.md "Critic layer normalization"): trains fast_sac with the defaults
benchmark's drop-in config and prints the policy's per-dimension sigma, |tanh mu| and the temperature every 1000
updates.  FLOOR=x clamps the continuous temperature at x after each update; CRITIC_LN=1 (or =noaffine, without
learned scale and shift) inserts a LayerNorm after each hidden linear layer of both critics.  It patches the
trainer as of commit 68b6596 (before critic_layer_norm existed): run it with CHECKOUT set to a checkout of that
commit.

    CHECKOUT=/path/to/checkout python probe.py SCENE SEED STEPS [hyperparameter=value ...]
"""
import sys, torch, yaml, tempfile, math, os
FLOOR = float(os.environ.get("FLOOR", "0"))
sys.path.insert(0, os.environ.get("CHECKOUT", "/tmp/wt-base"))
torch.set_num_threads(1)
from mlagents_plugins.fast_sac import optimizer as O
from bench.holding import minimal_holding_config, holding_summary
from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.scenes import scene_class

scene, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
over = {}
for kv in sys.argv[4:]:
    k, _, v = kv.partition("="); over[k] = yaml.safe_load(v)
orig = O.FastSACOptimizer.update
n = [0]
def update(self, batch):
    out = orig(self, batch)
    if FLOOR:
        with torch.no_grad():
            self.temperatures.log_alpha_cont.clamp_(min=math.log(FLOOR))
    n[0] += 1
    if n[0] % 1000 == 0:
        with torch.no_grad():
            enc, _ = self.policy.actor.network_body(batch.obs)
            g = self.policy.actor.action_model._continuous_distribution
            mu = g.mu(enc)
            ls = torch.clamp(g.log_sigma(enc), -20, 2) if g.conditional_sigma else g.log_sigma.expand_as(mu)
            a = torch.tanh(mu)
            alpha = self.temperatures.log_alpha_cont.exp().item()
        print(f"upd {n[0]}: sigma {' '.join(f'{v:.3f}' for v in ls.exp().mean(0))} | |tanh mu| "
              f"{' '.join(f'{v:.2f}' for v in a.abs().mean(0))} | alpha {alpha:.4f} | stats {{{', '.join(f'{k}: {v:.3g}' for k, v in out[0].items() if 'Coef' in k or 'Entropy' in k)}}}", flush=True)
    return out
O.FastSACOptimizer.update = update
if os.environ.get("CRITIC_LN"):
    from mlagents_plugins.fast_sac import networks as NW
    _init = NW.TwinQ.__init__
    def _ln_init(self, *a, **k):
        _init(self, *a, **k)
        for q in (self.q1, self.q2):
            enc = q.network_body._body_endoder
            mods = []
            for m in enc.seq_layers:
                mods.append(m)
                if isinstance(m, torch.nn.Linear):
                    mods.append(torch.nn.LayerNorm(m.out_features, elementwise_affine=os.environ["CRITIC_LN"] != "noaffine"))
            enc.seq_layers = torch.nn.Sequential(*mods)
    NW.TwinQ.__init__ = _ln_init
cfg = minimal_holding_config("fast_sac", over)
with tempfile.TemporaryDirectory() as tmp:
    res = train_in_process(cfg, scene, max_steps=steps, seed=seed, num_areas=1, output_dir=tmp)
s = holding_summary(res.reward_curve, scene_class(scene).success_threshold)
print("curve", " ".join(f"{r:.2f}" for _, r in res.reward_curve))
print(s)
