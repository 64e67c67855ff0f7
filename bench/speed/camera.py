"""One camera update of ``fast_sac``, change by change, against built-in ``sac`` in the same process.

Every trainer is built as ``mlagents-learn`` builds it from the defaults benchmark's drop-in config
(``bench/plan.py`` ``minimal_config``: batch 128, 2x128, the ``simple`` image encoder) for a camera scene's behavior
spec (``--scene``, default ``camera36``: a 3x36x36 camera, a 2-vector, one discrete branch; ``--continuous N``
swaps the actions for N continuous ones, as a continuous-control camera task has), its replay filled with the same
random 8-bit frames.  One update is ``update_once()`` (fast_sac: sample, batch, DrQ shift, fused SAC step) or the
body of ``SACTrainer._update_sac_policy`` (built-in sac).  Variants of fast_sac, each differing from ``fast_sac`` (the
defaults) in one thing:

* ``encoded_twice``: the actor loss's critic pass encodes the batch again (``SACHead.share_critic_encoding`` off;
  only differs with continuous actions, where that pass exists);
* ``channels_last``: every network's weights and the batch's images in channels-last memory format;
* ``compiled``: ``compile_update: true`` (the update's forward passes and losses through ``torch.compile``);
* ``no_shift``: ``random_shift_pad: 0`` (what the DrQ shift costs).

Timing: ``common.time_interleaved`` (median of ``--blocks`` interleaved blocks, so a busy machine slows every variant
alike), by default in CPU seconds of the timing thread (``--clock cpu``: torch runs one thread, so that is the
update's own CPU time, much less disturbed by other processes on a shared machine than wall seconds; ``--clock
wall`` for wall seconds); ratios are against ``fast_sac`` of the same run and built-in sac's time over each
variant's.

Usage: ``python -m bench speed camera [--scene camera36] [--continuous 2] [--updates 60] [--variants ...] [--json]``.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from bench.speed import common

VARIANTS = ("sac", "fast_sac", "encoded_twice", "channels_last", "compiled", "no_shift")
OVERRIDES: Dict[str, Dict[str, object]] = {"compiled": {"compile_update": True}, "no_shift": {"random_shift_pad": 0}}


def camera_spec(scene: str, continuous: int):
    """The scene's behavior spec; with ``continuous`` > 0 its actions replaced by that many continuous ones."""
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec

    from mlagents_plugins.envs.scenes import scene_class

    env = scene_class(scene)(num_areas=1)
    action_spec = ActionSpec(continuous, ()) if continuous > 0 else env.action_spec
    return BehaviorSpec(list(env.observation_specs), action_spec)


def camera_trajectory(spec, length: int, rng: np.random.Generator, done: bool, agent_id: str):
    """A ``Trajectory`` of random 8-bit frames (as a camera gives), random vectors, actions and rewards."""
    from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
    from mlagents.trainers.trajectory import AgentExperience, Trajectory
    from mlagents_envs.base_env import ActionTuple

    a = spec.action_spec
    branches = list(a.discrete_branches)

    def observe() -> List[np.ndarray]:
        return [(rng.integers(0, 256, o.shape) / 255.0).astype(np.float32) if len(o.shape) == 3
                else rng.normal(size=o.shape).astype(np.float32) for o in spec.observation_specs]

    steps = []
    for t in range(length):
        steps.append(AgentExperience(
            obs=observe(), reward=float(rng.normal()), done=bool(done and t == length - 1),
            action=ActionTuple(continuous=rng.uniform(-1, 1, (a.continuous_size,)).astype(np.float32),
                               discrete=np.array([rng.integers(0, b) for b in branches], np.int32)),
            action_probs=LogProbsTuple(continuous=np.zeros(a.continuous_size, np.float32),
                                       discrete=np.zeros(len(branches), np.float32)),
            action_mask=[np.zeros(b, bool) for b in branches] if branches else None,
            prev_action=np.zeros(len(branches), np.int32), interrupted=False, memory=None, group_status=[],
            group_reward=0.0,
        ))
    return Trajectory(steps=steps, next_obs=observe(), next_group_obs=[], agent_id=agent_id, behavior_id="B?team=0")


def build(trainer_type: str, spec, out_dir: str, overrides: Dict[str, object], batch: int, hidden: int):
    """A trainer with its policy and optimizer, from the drop-in config (``overrides`` for fast_sac only)."""
    from mlagents import plugins as mla_plugins
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
    from mlagents.trainers.settings import TrainerSettings

    from bench.plan import minimal_config

    common.register_plugins()
    cfg = minimal_config(trainer_type)
    cfg["hyperparameters"].update(batch_size=batch, **overrides)
    cfg["network_settings"].update(hidden_units=hidden)
    cfg.update(max_steps=10 ** 7, summary_freq=10 ** 9, checkpoint_interval=10 ** 9, threaded=False)
    settings = TrainerSettings.structure(cfg, TrainerSettings)
    trainer = mla_plugins.all_trainer_types[trainer_type]("B", 10, settings, True, False, 0, out_dir)
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(bid, trainer.create_policy(bid, spec))
    return trainer


def channels_last_(trainer) -> None:
    """Weights of the policy, critics and target critics, and every sampled batch's images, in channels-last."""
    import torch

    opt = trainer.optimizer
    for module in (trainer.policy.actor, opt.head.q_net, opt.head.q_target):
        module.to(memory_format=torch.channels_last)
    sample = trainer.sample_batch

    def sample_channels_last():
        batch = sample()

        def cl(obs):
            return [o.contiguous(memory_format=torch.channels_last) if o.dim() == 4 else o for o in obs]

        return batch._replace(obs=cl(batch.obs), next_obs=cl(batch.next_obs))

    trainer.sample_batch = sample_channels_last


def steps_of(variants: List[str], spec, rows: int, batch: int, hidden: int, tmp: str) -> Dict[str, Callable[[], None]]:
    from bench.speed.update import builtin_sac_step

    steps: Dict[str, Callable[[], None]] = {}
    for name in variants:
        trainer = build("sac" if name == "sac" else "fast_sac", spec, os.path.join(tmp, name),
                        OVERRIDES.get(name, {}), batch, hidden)
        rng = np.random.default_rng(0)  # the same frames in every variant's replay
        n = 0
        while n < rows:
            trainer._process_trajectory(camera_trajectory(spec, 64, rng, done=n % 192 == 0, agent_id=f"a{n % 8}"))
            n += 64
        if name == "sac":
            steps[name] = builtin_sac_step(trainer, batch)
            continue
        if name == "encoded_twice":
            trainer.optimizer.head.share_critic_encoding = False
        if name == "channels_last":
            channels_last_(trainer)
        steps[name] = trainer.update_once
    return steps


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench speed camera", description=__doc__.split("\n")[0])
    p.add_argument("--scene", default="camera36", help="camera scene whose observations are used (camera36)")
    p.add_argument("--continuous", type=int, default=0,
                   help="replace the scene's actions by this many continuous ones (0: the scene's own)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--updates", type=int, default=60, help="timed updates per variant (60)")
    p.add_argument("--warmup", type=int, default=5, help="untimed updates per variant first (5)")
    p.add_argument("--rows", type=int, default=3000, help="steps put in each replay (3000)")
    p.add_argument("--batch", type=int, default=128, help="batch size (128, the drop-in config's)")
    p.add_argument("--hidden", type=int, default=128, help="hidden units (128, the drop-in config's)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1)")
    p.add_argument("--blocks", type=int, default=10, help="interleaved timing blocks; the median is kept (10)")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="cpu: CPU seconds of the timing thread (needs --threads 1); wall: wall seconds (cpu)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)
    for name in ("continuous", "warmup"):
        if getattr(args, name) < 0:
            p.error(f"--{name}={getattr(args, name)} is invalid; must be an integer >= 0")
    if args.clock == "cpu" and args.threads != 1:
        p.error("--clock cpu counts the timing thread only; use --threads 1 or --clock wall")
    for name in ("updates", "rows", "batch", "hidden", "threads", "blocks"):
        if getattr(args, name) < 1:
            p.error(f"--{name}={getattr(args, name)} is invalid; must be an integer >= 1")

    import logging

    import torch
    from mlagents_envs.logging_util import set_log_level

    set_log_level(logging.WARNING)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    spec = camera_spec(args.scene, args.continuous)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.json:
            print(f"[speed camera] building {', '.join(args.variants)} ...", file=sys.stderr, flush=True)
        steps = steps_of(args.variants, spec, args.rows, args.batch, args.hidden, tmp)
        clock = time.thread_time if args.clock == "cpu" else time.perf_counter
        ms = common.time_interleaved(steps, args.updates, warmup=args.warmup, blocks=args.blocks, clock=clock)
    base = ms.get("fast_sac")
    out: Dict[str, Any] = {
        "scene": args.scene, "observations": [list(o.shape) for o in spec.observation_specs],
        "actions": {"continuous": spec.action_spec.continuous_size, "branches": list(spec.action_spec.discrete_branches)},
        "batch": args.batch, "hidden": args.hidden, "threads": args.threads, "updates": args.updates,
        "clock": args.clock, "blocks": args.blocks,
        "rows": [{"variant": name, "ms": round(t, 2),
                  "over_fast_sac": round(t / base, 3) if base else None,
                  "sac_over_this": round(ms["sac"] / t, 2) if "sac" in ms else None} for name, t in ms.items()],
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"scene {args.scene}, observations {out['observations']}, actions {out['actions']}, batch {args.batch}, "
              f"2x{args.hidden}, {args.threads} thread(s), {args.updates} updates per variant, {args.clock} ms")
        print(f"{'variant':<15} {'ms/update':>10} {'/ fast_sac':>10} {'sac / this':>10}")
        for r in out["rows"]:
            print(f"{r['variant']:<15} {r['ms']:>10} {str(r['over_fast_sac']):>10} {str(r['sac_over_this']):>10}")
    return out
