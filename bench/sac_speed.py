"""Per-update speed and replay memory: built-in ML-Agents ``sac`` vs ``fast_sac`` vs a minimal PyTorch SAC.

All three do the same work per "full update step": draw a batch of 256 transitions from a replay of
``--rows`` transitions (vector obs 8, continuous action 2), get the extrinsic reward for the batch, and take
one SAC gradient step with 2x256 hidden layers (actor, twin Q, Polyak target, temperature).

* ``builtin``: ``SACTrainer``'s loop body - ``AgentBuffer.sample_mini_batch``, ``signal.evaluate`` for each
  reward signal, ``TorchSACOptimizer.update`` (which also trains its V network).
* ``fast_sac``: ``FastSACTrainer.update_once`` (replay sampling, batch tensors, fused update).
* ``minimal``: a hand-written textbook SAC step (numpy ring buffer, ``nn.Sequential`` nets, three Adam
  optimizers, three backward passes) - the floor a plain PyTorch loop reaches.

Memory: bytes the replay holds for ``--rows`` transitions (tracemalloc for the AgentBuffer, whose Python
lists of arrays are not visible to ``nbytes``; the ring buffer's preallocated arrays for fast_sac).

Usage: ``python bench/sac_speed.py [--threads N] [--updates K] [--rows R] [--json]``.  Ratios are within one
run, so they compare like with like on the same (possibly shared) machine.
"""
import argparse
import os
import sys
import tempfile
import tracemalloc
from typing import Callable, Dict

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

OBS, ACT, HIDDEN, BATCH = 8, 2, 256, 256


def _settings(trainer_type: str, rows: int):
    from mlagents.trainers.settings import NetworkSettings, TrainerSettings

    if trainer_type == "fast_sac":
        from mlagents_plugins.fast_sac.settings import FastSACSettings as H
    else:
        from mlagents.trainers.sac.optimizer_torch import SACSettings as H
    return TrainerSettings(
        trainer_type=trainer_type,
        hyperparameters=H(batch_size=BATCH, buffer_size=rows + 10, buffer_init_steps=0),
        network_settings=NetworkSettings(hidden_units=HIDDEN, num_layers=2),
        max_steps=10 ** 7,
        summary_freq=10 ** 9,
    )


def _trajectories(rows: int, rng: np.random.Generator):
    sys.path.insert(0, os.path.join(REPO, "tests", "sac"))
    from helpers import make_spec, make_trajectory

    spec = make_spec(obs_shapes=((OBS,),), cont=ACT)
    out = []
    n = 0
    while n < rows:
        out.append(make_trajectory(spec, 64, rng, done=len(out) % 3 == 0, agent_id=f"a{len(out) % 8}"))
        n += 64
    return spec, out


def _make_trainer(kind: str, spec, rows: int, out_dir: str):
    from mlagents import plugins as mla_plugins
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
    from mlagents.trainers.sac.trainer import SACTrainer
    from mlagents_plugins.fast_sac.plugin import get_type_and_setting
    from mlagents_plugins.fast_sac.trainer import FastSACTrainer

    types, settings = get_type_and_setting()
    mla_plugins.all_trainer_types.update(types)
    mla_plugins.all_trainer_settings.update(settings)
    cls = FastSACTrainer if kind == "fast_sac" else SACTrainer
    trainer = cls("B", 10, _settings(kind, rows), True, False, 0, os.path.join(out_dir, kind))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(bid, trainer.create_policy(bid, spec))
    return trainer


def _fill(trainer, trajectories) -> int:
    """Process the trajectories (no updates) and return the bytes the replay holds."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for t in trajectories:
        trainer._process_trajectory(t)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    if hasattr(trainer, "replay"):
        return int(trainer.replay.nbytes)
    return int(after - before)


def builtin_step(trainer) -> Callable[[], None]:
    from bench.update_speed import builtin_sac_step

    return builtin_sac_step(trainer, BATCH)


def minimal_step(rows: int, seed: int = 0) -> Callable[[], None]:
    """Textbook SAC (Haarnoja et al. 2018b) in plain PyTorch on a numpy ring buffer."""
    import torch
    from torch import nn

    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(rows, OBS)).astype(np.float32)
    nxt = rng.normal(size=(rows, OBS)).astype(np.float32)
    act = rng.uniform(-1, 1, (rows, ACT)).astype(np.float32)
    rew = rng.normal(size=rows).astype(np.float32)
    done = (rng.random(rows) < 0.02).astype(np.float32)

    def mlp(i: int, o: int) -> nn.Module:
        return nn.Sequential(nn.Linear(i, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, o))

    actor = mlp(OBS, 2 * ACT)
    q1, q2 = mlp(OBS + ACT, 1), mlp(OBS + ACT, 1)
    t1, t2 = mlp(OBS + ACT, 1), mlp(OBS + ACT, 1)
    t1.load_state_dict(q1.state_dict())
    t2.load_state_dict(q2.state_dict())
    log_alpha = torch.zeros(1, requires_grad=True)
    opt_pi = torch.optim.Adam(actor.parameters(), 3e-4)
    opt_q = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), 3e-4)
    opt_a = torch.optim.Adam([log_alpha], 3e-4)
    gamma, tau, target_ent = 0.99, 0.005, -float(ACT)

    def sample(o):
        mu, log_std = actor(o).chunk(2, dim=-1)
        std = log_std.clamp(-20, 2).exp()
        u = mu + std * torch.randn_like(mu)
        a = torch.tanh(u)
        logp = (-0.5 * ((u - mu) / std) ** 2 - std.log() - 0.5 * np.log(2 * np.pi)).sum(-1)
        logp = logp - torch.log(1 - a * a + 1e-6).sum(-1)
        return a, logp

    def step() -> None:
        i = rng.integers(0, rows, BATCH)
        o, o2 = torch.from_numpy(obs[i]), torch.from_numpy(nxt[i])
        a, r, d = torch.from_numpy(act[i]), torch.from_numpy(rew[i]), torch.from_numpy(done[i])
        alpha = log_alpha.exp().detach()
        with torch.no_grad():
            a2, logp2 = sample(o2)
            x2 = torch.cat([o2, a2], -1)
            y = r + gamma * (1 - d) * (torch.min(t1(x2), t2(x2)).squeeze(-1) - alpha * logp2)
        x = torch.cat([o, a], -1)
        q_loss = 0.5 * ((q1(x).squeeze(-1) - y) ** 2).mean() + 0.5 * ((q2(x).squeeze(-1) - y) ** 2).mean()
        opt_q.zero_grad()
        q_loss.backward()
        opt_q.step()
        a_pi, logp = sample(o)
        xp = torch.cat([o, a_pi], -1)
        pi_loss = (alpha * logp - torch.min(q1(xp), q2(xp)).squeeze(-1)).mean()
        opt_pi.zero_grad()
        pi_loss.backward()
        opt_pi.step()
        a_loss = -(log_alpha * (logp.detach() + target_ent)).mean()
        opt_a.zero_grad()
        a_loss.backward()
        opt_a.step()
        with torch.no_grad():
            for net, tgt in ((q1, t1), (q2, t2)):
                for p, tp in zip(net.parameters(), tgt.parameters()):
                    tp.mul_(1 - tau).add_(tau * p)

    return step


def main() -> Dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--updates", type=int, default=200, help="timed update steps per variant (default 200)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=40,
        help="untimed updates first (default 40: covers fast_sac's one-off matmul-kernel choice and compile)",
    )
    parser.add_argument("--rows", type=int, default=20000, help="transitions in the replay (default 20000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    import torch

    from bench.speed import print_result, time_interleaved

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    spec, trajs = _trajectories(args.rows, rng)
    with tempfile.TemporaryDirectory() as tmp:
        builtin = _make_trainer("sac", spec, args.rows, tmp)
        builtin_bytes = _fill(builtin, trajs)
        ours = _make_trainer("fast_sac", spec, args.rows, tmp)
        ours_bytes = _fill(ours, trajs)
        ms = time_interleaved(
            {"builtin": builtin_step(builtin), "fast_sac": ours.update_once, "minimal": minimal_step(args.rows)},
            args.updates,
            warmup=args.warmup,
        )
    ms_builtin, ms_ours, ms_minimal = ms["builtin"], ms["fast_sac"], ms["minimal"]
    result = {
        "threads": args.threads,
        "batch_size": BATCH,
        "hidden": f"2x{HIDDEN}",
        "replay_rows": sum(len(t.steps) for t in trajs),
        "builtin_sac_ms_per_update": round(ms_builtin, 3),
        "fast_sac_ms_per_update": round(ms_ours, 3),
        "minimal_torch_ms_per_update": round(ms_minimal, 3),
        "speedup_vs_builtin": round(ms_builtin / ms_ours, 2),
        "speedup_vs_minimal": round(ms_minimal / ms_ours, 2),
        "builtin_replay_bytes": builtin_bytes,
        "fast_sac_replay_bytes": ours_bytes,
        "memory_ratio_builtin_over_fast_sac": round(builtin_bytes / max(1, ours_bytes), 2),
    }
    print_result(result, args.json, width=40)
    return result


if __name__ == "__main__":
    main()
