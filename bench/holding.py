"""Does a trainer *hold* what it learns?  Long in-process runs, per seed: steps to threshold, best and final
rolling mean, whether the final rolling mean stays >= 0.9 x the best, and the lowest rolling mean once the
threshold was reached (a fall the run recovers from before its end; issue #14).

    python -m bench holding --scene reach --trainers fast_sac sac --seeds 0 1 2 --steps 30000 \
        --json results/holding/reach.json [--set actor_min_q=false ...]

Every trainer gets the same config (the issue's: lr 3e-4, batch 128, buffer 100k, buffer_init_steps 1000,
steps_per_update 2, tau 0.005, init_entcoef 0.01, 2x128, gamma 0.99, time_horizon 64, 2 areas = 8 agents);
built-in ``sac`` gets the fields its settings share with fast_sac.  ``--config shipped`` takes
``configs/fast_sac_<scene>.yaml`` instead (the same sharing rule).  ``--set key=value`` (YAML value) overrides
a hyperparameter of our trainers (fast_sac, muzero_repr), never built-in sac's, so one difference from
built-in sac can be switched at a time; ``--set-all key=value`` overrides it for every trainer, built-in sac
included where its settings have the field (e.g. ``--set-all init_entcoef=1.0``); ``--network key=value`` sets a
``network_settings`` field for every trainer (``vis_encode_type=resnet`` on ``camera_gray18``).  ``--config minimal`` is the
defaults benchmark's drop-in config (bench/plan.py ``minimal_config``: only lr, batch, buffer, buffer_init_steps,
steps_per_update, 2x128; everything else at each trainer's default).  For muzero_repr as issue #15 ran it (its defaults but for the shared
fields) add ``--set init_entcoef=1.0``.  One run at a time, one torch thread (the machine is shared).  Runs of
one seed are not reproducible: two hybrid runs of seed 1, same config but for ``--steps`` (24k, 48k; the
learning rate is constant), parted from the 2000-step summary on (bench/results/fast-sac-hybrid-fall-2026-11-25), so compare
trainers over seeds, not single curves.
"""
import argparse
import json
import math
import os
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

import yaml

SHARED_WITH_SAC = ("learning_rate", "batch_size", "buffer_size", "buffer_init_steps", "steps_per_update", "tau", "init_entcoef")


def _trainer_hyper(trainer: str, hyper: Dict[str, object], overrides: Dict[str, object]) -> Dict[str, object]:
    """fast_sac gets ``hyper`` with ``overrides``; built-in sac only the fields its settings share with it."""
    if trainer != "sac":
        return {**hyper, **overrides}
    return {k: v for k, v in hyper.items() if k in SHARED_WITH_SAC}


#: Every holding config summarises every 1000 steps and writes no checkpoints or replay files.
RUN_FIELDS = dict(summary_freq=1000, checkpoint_interval=10 ** 9)


def minimal_holding_config(trainer: str, overrides: Dict[str, object]) -> dict:
    """The defaults benchmark's drop-in config (built-in sac takes no ``overrides``), summaries every 1000 steps,
    no checkpoints or replay files."""
    from bench.plan import minimal_config

    cfg = minimal_config(trainer)
    cfg["hyperparameters"] = _trainer_hyper(trainer, cfg["hyperparameters"], overrides)
    cfg.update(RUN_FIELDS)
    return cfg


def apply_network(cfg: dict, network: Dict[str, object]) -> dict:
    """``--network``: ``network_settings`` fields for every trainer, built-in sac included (one settings class
    for all), e.g. ``vis_encode_type=resnet`` for images under the default encoder's 20x20 minimum."""
    cfg["network_settings"] = {**cfg["network_settings"], **network}
    return cfg


def apply_to_all(cfg: dict, trainer: str, overrides: Dict[str, object]) -> dict:
    """``--set-all``: every trainer gets ``overrides``; built-in sac only those its settings have."""
    keep = {k: v for k, v in overrides.items() if trainer != "sac" or k in SHARED_WITH_SAC}
    cfg["hyperparameters"].update(keep)
    return cfg


def issue_config(trainer: str, overrides: Dict[str, object]) -> dict:
    hyper = dict(
        learning_rate=3.0e-4,
        batch_size=128,
        buffer_size=100000,
        buffer_init_steps=1000,
        steps_per_update=2.0,
        tau=0.005,
        init_entcoef=0.01,
    )
    return dict(
        trainer_type=trainer,
        hyperparameters=_trainer_hyper(trainer, hyper, overrides),
        network_settings=dict(hidden_units=128, num_layers=2, normalize=False),
        reward_signals=dict(extrinsic=dict(gamma=0.99, strength=1.0)),
        time_horizon=64,
        **RUN_FIELDS,
    )


def shipped_config(trainer: str, scene: str, overrides: Dict[str, object]) -> dict:
    """``configs/fast_sac_<scene>.yaml`` (for built-in sac: the fields it shares), summaries every 1000 steps,
    no checkpoints or replay files."""
    from bench.plan import load_config

    ref = load_config("fast_sac", scene)
    if ref is None:
        raise SystemExit(f"--config shipped: there is no configs/fast_sac_{scene}.yaml")
    hyper = {k: v for k, v in ref["hyperparameters"].items() if k != "save_replay_buffer"}
    return dict(
        trainer_type=trainer,
        hyperparameters=_trainer_hyper(trainer, hyper, overrides),
        network_settings=ref["network_settings"],
        reward_signals=ref["reward_signals"],
        time_horizon=ref["time_horizon"],
        **RUN_FIELDS,
    )


def rolling(curve: Sequence[Tuple[int, float]], window: int) -> List[Tuple[int, float]]:
    """Mean of the last ``window`` summaries at each summary (fewer at the start)."""
    out = []
    for i, (step, _) in enumerate(curve):
        vals = [r for _, r in curve[max(0, i - window + 1) : i + 1]]
        out.append((step, sum(vals) / len(vals)))
    return out


def holding_summary(curve: Sequence[Tuple[int, float]], threshold: float, window: int = 3) -> dict:
    """Steps to threshold (first raw summary >= threshold), best and final rolling mean, final / best, and the
    lowest rolling mean once the threshold was reached (over the windows that start at or after the first
    summary >= threshold; nan if it never was or no such window) with its ratio to the best: a fall that the
    run recovers from before its end leaves final / best high but shows in ``min_after_threshold`` /
    ``dip_ratio``."""
    roll = rolling(curve, window)
    i_hit: Optional[int] = next((i for i, (_, r) in enumerate(curve) if r >= threshold), None)
    hit = curve[i_hit][0] if i_hit is not None else None
    best = max((r for _, r in roll), default=math.nan)
    final = roll[-1][1] if roll else math.nan
    after = [r for _, r in roll[i_hit + window - 1 :]] if i_hit is not None else []
    low = min(after) if after else math.nan
    return dict(
        steps_to_threshold=hit,
        best=best,
        final=final,
        hold_ratio=final / best if best > 0 else math.nan,
        min_after_threshold=low,
        dip_ratio=low / best if best > 0 and after else math.nan,
    )


class _Progress:
    """A StatsWriter printing each summary's mean reward and chosen stats as the run goes (long runs)."""

    def __init__(self, keys: Sequence[str]):
        self.keys = list(keys)

    def on_add_stat(self, category, key, value, aggregation=None):
        pass

    def add_property(self, category, property_type, value):
        pass

    def write_stats(self, category, values, step):
        r = values.get("Environment/Cumulative Reward")
        parts = [f"{step}: reward {r.mean:.3f}" if r is not None and r.num else f"{step}:"]
        parts += [f"{k.split('/')[-1]} {values[k].mean:.4g}" for k in self.keys if k in values and values[k].num]
        print("   ", " | ".join(parts), flush=True)


def main(argv: Optional[Sequence[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench holding", description=__doc__.split("\n\n")[0])
    p.add_argument("--scene", default="reach")
    p.add_argument("--trainers", nargs="+", default=["fast_sac", "sac"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=30000)
    p.add_argument("--areas", type=int, default=2)
    p.add_argument("--config", choices=("issue", "shipped", "minimal"), default="issue",
                   help="issue: the issue's config (default); shipped: configs/fast_sac_<scene>.yaml; "
                        "minimal: the defaults benchmark's drop-in config")
    p.add_argument("--set", nargs="*", default=[], help="fast_sac hyperparameter overrides key=value (YAML)")
    p.add_argument("--set-all", nargs="*", default=[],
                   help="overrides key=value for every trainer (built-in sac: the fields it shares)")
    p.add_argument("--network", nargs="*", default=[],
                   help="network_settings key=value for every trainer, built-in sac included (e.g. vis_encode_type=resnet)")
    p.add_argument("--stats", nargs="*", default=[], help="summary keys to print at the end of each run")
    p.add_argument("--json", default=None, help="append the records to this JSON-lines file")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from mlagents.trainers.stats import StatsReporter, StatsWriter

    from mlagents_plugins.envs.harness import train_in_process

    StatsReporter.add_writer(type("ProgressWriter", (_Progress, StatsWriter), {})(args.stats))
    from mlagents_plugins.envs.scenes import scene_class

    overrides, overrides_all, network = {}, {}, {}
    for target, pairs in ((overrides, args.set), (overrides_all, args.set_all), (network, args.network)):
        for kv in pairs:
            key, _, value = kv.partition("=")
            target[key] = yaml.safe_load(value)
    threshold = scene_class(args.scene).success_threshold
    for seed in args.seeds:
        for trainer in args.trainers:
            if args.config == "issue":
                cfg = issue_config(trainer, overrides)
            elif args.config == "minimal":
                cfg = minimal_holding_config(trainer, overrides)
            else:
                cfg = shipped_config(trainer, args.scene, overrides)
            cfg = apply_network(apply_to_all(cfg, trainer, overrides_all), network)
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.time()
                res = train_in_process(
                    cfg, args.scene, max_steps=args.steps, seed=seed, num_areas=args.areas, output_dir=tmp
                )
            summ = holding_summary(res.reward_curve, threshold)
            rec = dict(
                scene=args.scene, config=args.config, trainer=trainer, seed=seed, steps=args.steps, overrides=overrides if trainer != "sac" else {},
                overrides_all=overrides_all, network=network,
                wall_s=round(time.time() - t0, 1), curve=res.reward_curve, **summ,
                stats={k: res.stats.get(k, []) for k in args.stats},
            )
            print(
                f"{args.scene} {trainer:9s} seed {seed} {overrides if trainer != 'sac' else ''}: "
                f"threshold@{summ['steps_to_threshold']} best {summ['best']:.3f} final {summ['final']:.3f} "
                f"hold {summ['hold_ratio']:.2f} min after threshold {summ['min_after_threshold']:.3f} "
                f"(dip {summ['dip_ratio']:.2f}) ({rec['wall_s']} s)",
                flush=True,
            )
            print("   curve:", " ".join(f"{r:.2f}" for _, r in res.reward_curve), flush=True)
            for k in args.stats:
                print(f"   {k}:", " ".join(f"{v:.3g}" for _, v in res.stats.get(k, [])), flush=True)
            if args.json:
                os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
                with open(args.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")

