"""One same-machine peer run of ``python -m bench gym`` in its own process: SB3's SAC or sb3-contrib's CrossQ.

``bench.gym.run_peer`` runs ``main([...])`` in a fresh interpreter (``--algo sb3_sac --env HalfCheetah-v5 --seed 0
--steps 100000 --json OUT.json``); so ``python -m bench`` stays the one program of ``bench``.

Settings: SAC with the field's standard ones (2x256, batch 256, one update per step, 1M buffer, 5k random steps,
lr 3e-4, tau 0.005, gamma 0.99); CrossQ with sb3-contrib's defaults (the paper's: batch-renormalized critics
without target networks, wider critics, policy delay 3) and the same buffer, random steps and gamma.  Every
``--eval-every`` steps the deterministic policy plays ``--eval-episodes`` episodes on a separate copy of the task
(``bench.gym.evaluate``, as for the ML-Agents trainers); its time is reported apart so the caller takes it out of
the run's cost.  Needs the bench-only extra ``requirements/bench-gym.txt``.
"""
import argparse
import copy
import json
import time
from typing import Any, Dict, List, Optional

import numpy as np

from bench.gym import evaluate
from bench.overrides import apply_override, parse_override

STANDARD = {"buffer_size": 1_000_000, "learning_starts": 5000, "gamma": 0.99}
SAC_STANDARD = {**STANDARD, "batch_size": 256, "learning_rate": 3e-4, "tau": 0.005, "train_freq": 1,
                "gradient_steps": 1, "policy_kwargs": {"net_arch": [256, 256]}}


#: env steps between the console lines that ``python -m bench gym`` reads for its progress (mlagents-learn's
#: summary period in configs/gym/)
SUMMARY_EVERY = 5000


def summary_line(step: int, train_return: float, eval_return: Optional[float] = None) -> str:
    """The console line of one summary (``bench.gym.PEER_LINE`` reads it): the step, the evaluation return when the
    step was evaluated, and the mean of the last 10 training episodes."""
    evaluated = "" if eval_return is None else f" Eval return: {eval_return:.3f}."
    return f"Step: {step}.{evaluated} Train return: {train_return:.3f}."


def make_model(algo: str, env, seed: int, learning_starts: Optional[int], overrides=()):
    """The peer's model with its standard settings, ``learning_starts`` and then each ``(path, value)`` of
    ``overrides`` (``--set``, ``bench gym``'s ``--peer-set``) applied to the constructor's keywords."""
    try:
        if algo == "sb3_sac":
            from stable_baselines3 import SAC as Algo

            kwargs: Dict[str, Any] = dict(SAC_STANDARD)
        elif algo == "sb3_crossq":
            from sb3_contrib import CrossQ as Algo

            kwargs = dict(STANDARD)
        else:
            raise ValueError(f"--algo {algo!r} is unknown; allowed: sb3_sac, sb3_crossq")
    except ImportError as err:
        raise SystemExit(f"{algo} needs the bench-only extra: pip install -r requirements/bench-gym.txt ({err})")
    if learning_starts is not None:
        kwargs["learning_starts"] = learning_starts
    kwargs = copy.deepcopy(kwargs)  # SAC_STANDARD's nested dicts stay as they are
    for path, value in overrides:
        apply_override(kwargs, path, value)
    return Algo("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **kwargs), kwargs


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="bench.gym_peers")
    p.add_argument("--algo", required=True, choices=["sb3_sac", "sb3_crossq"])
    p.add_argument("--env", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--eval-every", type=int, default=10_000)
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--eval-seed", type=int, default=10_000)
    p.add_argument("--learning-starts", type=int, default=None)
    p.add_argument("--json", required=True)
    p.add_argument("--set", dest="overrides", type=parse_override, action="append", default=[], metavar="KEY=VALUE",
                   help="a constructor keyword of the peer, a YAML value (bench gym's --peer-set)")
    args = p.parse_args(argv)

    import gymnasium as gym
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor

    torch.set_num_threads(1)
    env = Monitor(gym.make(args.env))
    model, kwargs = make_model(args.algo, env, args.seed, args.learning_starts, args.overrides)
    evals: List[Dict[str, Any]] = []
    train_curve: List[List[float]] = []
    spent = {"wall": 0.0, "cpu": 0.0}
    start = time.perf_counter()

    summary_every = min(SUMMARY_EVERY, args.eval_every)

    class EvalEvery(BaseCallback):
        def _on_step(self) -> bool:
            step = self.num_timesteps
            evaluated = None
            if step % args.eval_every == 0 or step == args.steps:
                w0, c0 = time.perf_counter(), time.process_time()
                act = lambda obs: model.predict(obs[0], deterministic=True)[0]  # noqa: E731
                evals.append({"step": step, **evaluate(act, args.env, args.eval_episodes, args.eval_seed)})
                evaluated = evals[-1]["return_mean"]
                spent["wall"] += time.perf_counter() - w0
                spent["cpu"] += time.process_time() - c0
                returns = env.get_episode_rewards()[-10:]
                train_curve.append([step, time.perf_counter() - start - spent["wall"],
                                    float(np.mean(returns)) if returns else float("nan")])
            if evaluated is not None or step % summary_every == 0:
                returns = env.get_episode_rewards()[-10:]
                print(summary_line(step, float(np.mean(returns)) if returns else float("nan"), evaluated),
                      flush=True)
            return True

    model.learn(total_timesteps=args.steps, callback=EvalEvery())
    returns = env.get_episode_rewards()[-10:]
    result = {"steps": int(model.num_timesteps), "eval": evals, "eval_s": spent["wall"], "eval_cpu_s": spent["cpu"],
              "train_return": float(np.mean(returns)) if returns else None, "train_curve": train_curve,
              "config": {k: v for k, v in kwargs.items()}}
    with open(args.json, "w") as f:
        json.dump(result, f)
    return 0

