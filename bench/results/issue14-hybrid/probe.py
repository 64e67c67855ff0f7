"""Issue #14 probe: a ``bench.holding`` run of fast_sac that also keeps snapshots of the networks, and a
roll-out of a snapshot that shows what the policy does in the hybrid scene against what its critic expects.

Train (any ``bench.holding`` arguments after ``train``; snapshots every ``--snap-every`` trainer steps):

    OMP_NUM_THREADS=1 .venv/bin/python bench/results/issue14-hybrid/probe.py train --snap-dir /tmp/snaps \
        --snap-every 2000 -- --scene hybrid --trainers fast_sac --seeds 1 --steps 32000

Roll out one snapshot (sampling as in training, fresh scene, no learning):

    .venv/bin/python bench/results/issue14-hybrid/probe.py rollout /tmp/snaps/seed1_step24000.pt --episodes 400

A snapshot is ``torch.save`` of deep copies of the policy's actor, the twin critics and their targets and the
temperatures, taken in the trainer's process (analysis only: nothing here is part of the trainer).
"""
import argparse
import copy
import json
import os
import sys
from typing import List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import numpy as np  # noqa: E402
import torch  # noqa: E402


def _install_snapshots(snap_dir: str, every: int, tag: str) -> None:
    """Wrap ``FastSACOptimizer.update`` so that the first update at or after every ``every`` trainer steps
    saves a snapshot to ``snap_dir``."""
    from mlagents_plugins.fast_sac.optimizer import FastSACOptimizer

    os.makedirs(snap_dir, exist_ok=True)
    original = FastSACOptimizer.update
    state = {"next": every}

    def update(self, batch):
        out = original(self, batch)
        step = int(self.policy.get_current_step())
        if step >= state["next"]:
            snap = {
                "step": step,
                "actor": copy.deepcopy(self.policy.actor),
                "q": copy.deepcopy(self.q),
                "q_target": copy.deepcopy(self.q_target),
                "temperatures": copy.deepcopy(self.temperatures),
                "gamma": list(self.gammas),
                "actor_q1_only": self.actor_q1_only,
            }
            torch.save(snap, os.path.join(snap_dir, f"{tag}_step{state['next']}.pt"))
            while state["next"] <= step:
                state["next"] += every
        return out

    FastSACOptimizer.update = update


def train(argv: Sequence[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--snap-dir", required=True)
    p.add_argument("--snap-every", type=int, default=2000)
    p.add_argument("--tag", default="run")
    p.add_argument("--timeout-terminal", action="store_true",
                   help="treat time-outs as terminal (the change of timeout_terminal.patch)")
    p.add_argument("--gamma", type=float, default=None, help="discount of the extrinsic reward (every trainer)")
    p.add_argument("holding_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    rest = [a for a in args.holding_args if a != "--"]
    _install_snapshots(args.snap_dir, args.snap_every, args.tag)
    if args.timeout_terminal:
        import mlagents_plugins.offpolicy.rows as R

        rows_fn = R.trajectory_to_rows

        def _timeout_terminal_rows(spec, trajectory, buf):
            rows = rows_fn(spec, trajectory, buf)
            rows[R.TERMINAL][-1] = bool(trajectory.done_reached)
            return rows

        R.trajectory_to_rows = _timeout_terminal_rows
    import bench.holding as H

    if args.gamma is not None:
        issue_config = H.issue_config

        def _with_gamma(trainer, overrides):
            cfg = issue_config(trainer, overrides)
            cfg["reward_signals"]["extrinsic"]["gamma"] = args.gamma
            return cfg

        H.issue_config = _with_gamma
    H.main(rest)


# ----------------------------------------------------------------------------------------------------------
# Roll-out analysis


def _policy_outputs(actor, obs: np.ndarray):
    """(continuous sample [n, 2] squashed, discrete probabilities [n, 3], deterministic heading [n, 2])."""
    from mlagents_plugins.fast_sac.networks import sample_for_training

    with torch.no_grad():
        o = [torch.as_tensor(obs)]
        enc, _ = actor.network_body(o)
        cont, _, lp_d = sample_for_training(actor.action_model, enc, torch.ones(len(obs), 3))
        mu = actor.action_model._continuous_distribution.mu(enc)
    return cont.numpy(), lp_d.exp().numpy(), torch.tanh(mu).numpy()


def _q_all(q, obs: np.ndarray, cont: np.ndarray):
    with torch.no_grad():
        q1, q2 = q([torch.as_tensor(obs)], torch.as_tensor(cont, dtype=torch.float32))
    return q1[:, 0, :].numpy(), q2[:, 0, :].numpy()


def rollout(path: str, episodes: int, seed: int, greedy_grab: bool = False) -> dict:
    """Run the snapshot's policy (sampled, as in training) on a fresh hybrid scene for ``episodes`` episodes and
    summarise: outcome counts, mean return, and per-step what the discrete branch does near the target, with
    the critic's ``min(Q1, Q2)(s, a_c, each discrete action)`` next to the discounted return actually earned."""
    from mlagents_envs.base_env import ActionTuple

    from mlagents_plugins.envs.scenes.hybrid import GRAB_RADIUS, HybridScene

    torch.manual_seed(seed)
    snap = torch.load(path, weights_only=False)
    actor, q = snap["actor"].eval(), snap["q"].eval()
    gamma = snap["gamma"][0]
    scene = HybridScene(num_areas=8, seed=seed)
    rng = np.random.default_rng(seed)
    n = scene.num_agents
    per_agent = -(-episodes // n)  # each slot's first ``per_agent`` episodes: no bias toward short ones
    traj: List[List[dict]] = [[] for _ in range(n)]
    done_eps: List[List[dict]] = [[] for _ in range(n)]
    while min(len(d) for d in done_eps) < per_agent:
        obs = scene.observe()[0]
        cont, probs, mu = _policy_outputs(actor, obs)
        u = rng.random(n)[:, None]
        disc = (u > np.cumsum(probs / probs.sum(axis=1, keepdims=True), axis=1)).sum(axis=1).clip(0, 2)
        if greedy_grab:
            disc = np.where(obs[:, 4] <= GRAB_RADIUS, 2, disc)
        q1, q2 = _q_all(q, obs, cont)
        qmin = np.minimum(q1, q2)
        toward = obs[:, 2:4] / np.maximum(obs[:, 4:5], 1e-6)
        qt = np.minimum(*_q_all(q, obs, toward))
        qa = np.minimum(*_q_all(q, obs, -toward))
        st = scene.step(ActionTuple(continuous=cont.astype(np.float32), discrete=disc[:, None].astype(np.int32)))
        for i in range(n):
            traj[i].append(dict(dist=float(obs[i, 4]), probs=probs[i].tolist(), disc=int(disc[i]),
                                q=qmin[i].tolist(), q_toward=qt[i].tolist(), q_away=qa[i].tolist(), r=float(st.reward[i]), cont=cont[i].tolist(),
                                heading_norm=float(np.linalg.norm(cont[i])), mu=mu[i].tolist(),
                                cos=float(np.dot(cont[i], obs[i, 2:4]) / max(1e-6, np.linalg.norm(cont[i]) * obs[i, 4]))))
            if st.done[i]:
                steps = traj[i]
                g = 0.0
                for s_ in reversed(steps):
                    g = s_["r"] + gamma * g
                    s_["ret"] = g
                outcome = "success" if st.success[i] else ("timeout" if st.interrupted[i] else "failure")
                done_eps[i].append(dict(outcome=outcome, length=len(steps), steps=steps))
                traj[i] = []
    eps = [e for d in done_eps for e in d[:per_agent]]
    allsteps = [s_ for e in eps for s_ in e["steps"]]
    near = [s_ for s_ in allsteps if s_["dist"] <= GRAB_RADIUS]
    far = [s_ for s_ in allsteps if s_["dist"] > GRAB_RADIUS]

    def _mean(xs):
        return float(np.mean(xs)) if xs else float("nan")

    out = dict(
        snapshot=os.path.basename(path), step=snap["step"], episodes=len(eps),
        mean_return=_mean([sum(s_["r"] for s_ in e["steps"]) for e in eps]),
        outcomes={k: sum(e["outcome"] == k for e in eps) for k in ("success", "timeout", "failure")},
        mean_length=_mean([e["length"] for e in eps]),
        steps_near=len(near), steps_far=len(far),
        near_p=[_mean([s_["probs"][j] for s_ in near]) for j in range(3)],
        far_p=[_mean([s_["probs"][j] for s_ in far]) for j in range(3)],
        near_q=[_mean([s_["q"][j] for s_ in near]) for j in range(3)],
        far_q=[_mean([s_["q"][j] for s_ in far]) for j in range(3)],
        near_return=_mean([s_["ret"] for s_ in near]),
        far_return=_mean([s_["ret"] for s_ in far]),
        far_v_pi=_mean([float(np.dot(s_["probs"], s_["q"])) for s_ in far]),
        near_v_pi=_mean([float(np.dot(s_["probs"], s_["q"])) for s_ in near]),
        first_v_pi=_mean([float(np.dot(e["steps"][0]["probs"], e["steps"][0]["q"])) for e in eps]),
        first_return=_mean([e["steps"][0]["ret"] for e in eps]),
        heading_norm=_mean([s_["heading_norm"] for s_ in allsteps]),
        mu_norm=_mean([float(np.linalg.norm(s_["mu"])) for s_ in allsteps]),
        # cos(angle) between the sampled heading and the direction to the target, away from it
        far_cos=_mean([s_["cos"] for s_ in far]),
        # the critic's min(Q1, Q2) with the heading straight at the target and straight away (walk, sprint)
        far_q_toward=[_mean([s_["q_toward"][j] for s_ in far]) for j in range(2)],
        far_q_away=[_mean([s_["q_away"][j] for s_ in far]) for j in range(2)],
        far_moves=[_mean([s_["disc"] == j for s_ in far]) for j in range(3)],
    )
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("train", "rollout", "landscape"):
        raise SystemExit(__doc__)
    if argv[0] == "train":
        train(argv[1:])
        return
    p = argparse.ArgumentParser()
    p.add_argument("snapshots", nargs="+")
    p.add_argument("--episodes", type=int, default=400)
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--greedy-grab", action="store_true", help="override the branch with grab inside the radius")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv[1:])
    torch.set_num_threads(1)
    for path in args.snapshots:
        if argv[0] == "landscape":
            res = landscape(path, args.seed)
            print(json.dumps(res), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(res) + "\n")
            continue
        res = rollout(path, args.episodes, args.seed, args.greedy_grab)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in res.items()}), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(res) + "\n")



def landscape(path: str, seed: int, n_states: int = 2000) -> dict:
    """The critic over random hybrid start-like states: its ``min(Q1, Q2)`` against distance to the target and
    against the heading, next to the one-step targets ``r + gamma V_target(s')`` of the same actions."""
    from mlagents_envs.base_env import ActionTuple

    from mlagents_plugins.envs.scenes.hybrid import HybridScene

    snap = torch.load(path, weights_only=False)
    actor, q, qt = snap["actor"].eval(), snap["q"].eval(), snap["q_target"].eval()
    alpha_c = float(snap["temperatures"].log_alpha_cont.exp())
    alpha_d = snap["temperatures"].log_alpha_disc.exp().detach()
    gamma = snap["gamma"][0]
    from mlagents_plugins.fast_sac import losses as L
    from mlagents_plugins.fast_sac.networks import sample_for_training

    def v_target(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            o = [torch.as_tensor(obs)]
            enc, _ = actor.network_body(o)
            a, lp_c, lp_d = sample_for_training(actor.action_model, enc, torch.ones(len(obs), 3))
            t1, t2 = qt(o, a)
            return L.soft_value(torch.minimum(t1, t2), lp_c, lp_d, torch.tensor(alpha_c), alpha_d, [3])[:, 0].numpy()

    out = {"snapshot": os.path.basename(path), "step": snap["step"]}
    rows = []
    for kind, sign in (("toward", 1.0), ("away", -1.0)):
        for mode in (0, 1, 2):
            scene = HybridScene(num_areas=n_states // 4, seed=seed)
            obs = scene.observe()[0]
            head = sign * obs[:, 2:4] / np.maximum(obs[:, 4:5], 1e-6)
            q1, q2 = _q_all(q, obs, head)
            st = scene.step(ActionTuple(continuous=head.astype(np.float32),
                                        discrete=np.full((len(obs), 1), mode, np.int32)))
            nxt = st.terminal_obs[0]
            terminal = st.done & ~st.interrupted
            y = st.reward + gamma * (1.0 - terminal) * v_target(nxt)
            qm = np.minimum(q1, q2)[:, mode]
            rows.append(dict(kind=kind, mode=mode, q=float(qm.mean()), y=float(y.mean()), r=float(st.reward.mean()),
                             q_minus_y=float((qm - y).mean()), terminal=float(terminal.mean())))
    out["actions"] = rows
    # V_target against distance: the critic's view of how much better it is to be near the target
    scene = HybridScene(num_areas=n_states // 4, seed=seed + 1)
    obs = scene.observe()[0]
    v = v_target(obs)
    d = obs[:, 4]
    bins = [0.0, 0.15, 0.3, 0.5, 0.8, 2.0]
    out["v_by_distance"] = [(lo, hi, float(v[(d >= lo) & (d < hi)].mean()) if ((d >= lo) & (d < hi)).any() else None)
                            for lo, hi in zip(bins[:-1], bins[1:])]
    return out


if __name__ == "__main__":
    main()
