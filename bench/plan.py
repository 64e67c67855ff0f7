"""What to run: trainers discovered from entry points, scene/trainer pairing, per-run configs, budgets.

Configs: a trainer of ours uses ``configs/<trainer>_<scene>.yaml`` (written by its engineer) when it exists,
else the bench template below.  The built-in ``sac`` and ``ppo`` start from ML-Agents' defaults and take
every overlapping setting (hyperparameters their settings class also has, ``network_settings``, reward
gamma, ``time_horizon``) from a reference config of ours for the same scene: ``fast_sac`` (then any other
off-policy one) for sac, ``impala`` for ppo's network/gamma/time horizon.  The bench itself overrides only
``max_steps``, ``summary_freq`` (the same for every trainer of a scene, so curves line up) and checkpointing
(one final checkpoint, replay buffer included, so save/load times are comparable).
"""
import copy
import os
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from typing import Any, Dict, List, Optional, Sequence, Tuple

import attr
import yaml

from bench.overrides import apply_override, override_text
from mlagents_plugins.envs.scenes import scene_class, scenes_in

PACKAGE = "mlagents-plugins"
BUILTINS = ("sac", "ppo")
CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")
#: action kinds a trainer cannot handle (default: it handles every kind)
UNSUPPORTED_ACTIONS = {"taac": {"discrete", "hybrid"}}
#: trainers that keep an on-policy buffer rather than a replay buffer
ON_POLICY = {"ppo", "impala"}

# The defaults benchmark (issue #12): what a user's own config for built-in sac or ppo sets, the same values for
# every trainer of that family, everything specific to our trainers at its default.  Our off-policy trainers and
# sac take MINIMAL_SAC, impala and ppo take MINIMAL_PPO (built-in names: they load as drop-in configs).
MINIMAL_SAC = {"learning_rate": 3.0e-4, "batch_size": 128, "buffer_size": 100000, "buffer_init_steps": 1000,
               "steps_per_update": 2.0}
MINIMAL_PPO = {"learning_rate": 3.0e-4, "batch_size": 256, "buffer_size": 2048}
MINIMAL_NETWORK = {"hidden_units": 128, "num_layers": 2}

# Shared values for every off-policy trainer without its own config (and sac when ours has none).
OFFPOLICY_TEMPLATE = {
    "batch_size": 128,
    "buffer_size": 50000,
    "buffer_init_steps": 500,
    "steps_per_update": 2.0,
    "learning_rate": 3.0e-4,
    "tau": 0.005,
    "init_entcoef": 0.1,
}
PPO_TEMPLATE = {"batch_size": 256, "buffer_size": 2048, "learning_rate": 3.0e-4, "num_epoch": 3, "beta": 1.0e-3}
IMPALA_TEMPLATE = {"learning_rate": 3.0e-4}
NETWORK_TEMPLATE = {"normalize": False, "hidden_units": 64, "num_layers": 2}
COMMON_TEMPLATE = {"time_horizon": 64, "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}}}


@dataclass(frozen=True)
class Budget:
    """Steps per run and seeds: ``steps[scene]``; ``learn_scene`` also runs through mlagents-learn."""

    name: str
    scenes: Tuple[str, ...]
    steps: Dict[str, int]
    seeds: Tuple[int, ...]
    learn_scene: Optional[str]
    learn_seeds: Tuple[int, ...]
    learn_trainers: Optional[Tuple[str, ...]] = None  # None: every trainer of the scene
    summaries: int = 10  # summary points per run (summary_freq = steps / summaries)
    replay_rows: int = 1_000_000  # rows for python -m bench replay
    minimal_configs: bool = False  # every trainer gets the minimal drop-in config (MINIMAL_SAC / MINIMAL_PPO)


QUICK = Budget("quick", ("balance", "branches"), {"balance": 3000, "branches": 2000}, (0, 1), "balance", (0,),
               learn_trainers=("fast_sac", "sac", "ppo"), summaries=6, replay_rows=100_000)
FULL = Budget(
    "full",
    ("balance", "branches", "camera", "hybrid", "switching"),
    {"balance": 20000, "branches": 10000, "camera": 5000, "hybrid": 10000, "switching": 10000},
    (0, 1, 2),
    "balance",
    (0,),
)
#: every trainer with one minimal config on every validation scene; steps about 2x what built-in sac needs
#: (branches_short: no trainer moved off random play in 20k, and ppo needs ~40k on the base branches scene)
DEFAULTS = Budget(
    "defaults",
    tuple(scenes_in("validation")),
    {"balance_big_reward_long": 30000, "balance_distractors": 30000, "branches_short": 50000, "camera36": 10000,
     "hybrid_sparse": 20000, "reach_sparse_distractors": 20000, "switching_noisy": 20000,
     "reach_continuous_noisy": 30000, "reach_continuous_camera32": 30000},
    (0, 1, 2),
    None,
    (),
    summaries=20,
    minimal_configs=True,
)

#: the screening tier (``python -m bench defaults --screen``, issue 44): DEFAULTS with one seed and budgets cut to
#: where the trainers were already apart in the defaults study (bench/results/defaults-all-2026-11-27): fast_sac,
#: taac and muzero_repr reach balance's thresholds by 4.5-7.5k steps, sac by 6-9k, impala 15-30k, ppo rarely;
#: branches_short separates from 30k (fast_sac 0.67-0.70, muzero_repr 0.37-0.70, impala 0.14-0.22, sac and ppo about
#: 0); camera36 at 10k (fast_sac above 0.9, muzero_repr 0.5-0.7, the rest below 0); taac reaches switching_noisy's
#: threshold by 8-10k while every other trainer stays below 0.7.  Planned at <= 45 wall-minutes at --jobs 2 on an
#: idle 2-core machine (the plan's estimate from earlier records, bench/README.md).
SCREEN = replace(
    DEFAULTS,
    name="screen",
    steps={"balance_big_reward_long": 15000, "balance_distractors": 12000, "branches_short": 30000,
           "camera36": 10000, "hybrid_sparse": 20000, "reach_sparse_distractors": 15000, "switching_noisy": 12000,
           "reach_continuous_noisy": 15000, "reach_continuous_camera32": 10000},
    seeds=(0,),
)


def action_kind(scene: str) -> str:
    """'continuous', 'discrete' or 'hybrid' from the scene's ActionSpec."""
    spec = scene_class(scene)(num_areas=1).action_spec
    if spec.continuous_size and spec.discrete_size:
        return "hybrid"
    return "continuous" if spec.continuous_size else "discrete"


def discover_trainers() -> Tuple[List[str], List[str]]:
    """(trainer names of this package that load, notes on those registered but failing to load)."""
    ours, notes = [], []
    for ep in entry_points(group="mlagents.trainer_type"):
        if ep.dist is None or ep.dist.name != PACKAGE:
            continue
        try:
            types, _ = ep.load()()
        except Exception as err:  # noqa: BLE001 - a half-finished plugin must not stop the bench
            notes.append(f"{ep.name}: registered but failed to load ({type(err).__name__}: {err})")
            continue
        ours.extend(sorted(types))
    return sorted(set(ours)), notes


def supports(trainer: str, scene: str) -> bool:
    return action_kind(scene) not in UNSUPPORTED_ACTIONS.get(trainer, set())


def settings_fields(trainer: str) -> set:
    """Names of the hyperparameter fields ``trainer`` accepts (from its registered settings class)."""
    from mlagents import plugins as mla_plugins
    from mlagents.plugins.trainer_type import register_trainer_plugins

    register_trainer_plugins()
    cls = mla_plugins.all_trainer_settings[trainer]
    return {f.name for f in attr.fields(cls)}


def load_config(trainer: str, scene: str, config_dir: str = CONFIG_DIR) -> Optional[Dict[str, Any]]:
    """The behavior block of ``configs/<trainer>_<scene>.yaml``, or None if that file does not exist."""
    path = os.path.join(config_dir, f"{trainer}_{scene}.yaml")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    behaviors = doc.get("behaviors") or {}
    if len(behaviors) != 1:
        raise ValueError(f"{path}: expected exactly one behavior under 'behaviors', found {sorted(behaviors)}")
    return copy.deepcopy(next(iter(behaviors.values())))


def _template(trainer: str) -> Dict[str, Any]:
    if trainer == "ppo":
        hyper = dict(PPO_TEMPLATE)
    elif trainer == "impala":
        hyper = dict(IMPALA_TEMPLATE)
    else:
        hyper = dict(OFFPOLICY_TEMPLATE)
    accepted = settings_fields(trainer)
    hyper = {k: v for k, v in hyper.items() if k in accepted}  # e.g. taac has no tau / init_entcoef
    cfg = copy.deepcopy(COMMON_TEMPLATE)
    cfg.update({"trainer_type": trainer, "hyperparameters": hyper, "network_settings": dict(NETWORK_TEMPLATE)})
    return cfg


def _overlay(target: Dict[str, Any], ref: Dict[str, Any], hyper_keys: set) -> None:
    """Copy the settings ``target`` shares with ``ref`` (hyperparameters limited to ``hyper_keys``)."""
    for key, value in (ref.get("hyperparameters") or {}).items():
        if key in hyper_keys:
            target["hyperparameters"][key] = copy.deepcopy(value)
    if ref.get("network_settings"):
        net = {k: v for k, v in ref["network_settings"].items() if k in ("normalize", "hidden_units", "num_layers", "vis_encode_type")}
        target["network_settings"].update(copy.deepcopy(net))
    gamma = ((ref.get("reward_signals") or {}).get("extrinsic") or {}).get("gamma")
    if gamma is not None:
        target["reward_signals"]["extrinsic"]["gamma"] = gamma
    if ref.get("time_horizon") is not None:
        target["time_horizon"] = ref["time_horizon"]


def _reference(scene: str, order: List[str], config_dir: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    for name in order:
        cfg = load_config(name, scene, config_dir)
        if cfg is not None:
            return cfg, f"{name}_{scene}.yaml"
    return None, None


def minimal_config(trainer: str) -> Dict[str, Any]:
    """The defaults benchmark's config: a user's sac (or ppo) config with ``trainer_type`` changed, nothing else."""
    cfg = copy.deepcopy(COMMON_TEMPLATE)
    hyper = MINIMAL_PPO if trainer in ON_POLICY else MINIMAL_SAC
    cfg.update({"trainer_type": trainer, "hyperparameters": dict(hyper), "network_settings": dict(MINIMAL_NETWORK)})
    return cfg


def build_config(trainer: str, scene: str, max_steps: int, summaries: int, ours: List[str],
                 config_dir: str = CONFIG_DIR, minimal: bool = False) -> Tuple[Dict[str, Any], str]:
    """(behavior config, where its hyperparameters came from) for one run."""
    if minimal:
        cfg, source = minimal_config(trainer), "minimal drop-in config (bench/plan.py MINIMAL_*)"
    elif trainer not in BUILTINS:
        cfg = load_config(trainer, scene, config_dir)
        source = f"configs/{trainer}_{scene}.yaml"
        if cfg is None:
            cfg, source = _template(trainer), "bench template (bench/plan.py)"
        cfg["trainer_type"] = trainer
    else:
        cfg = _template(trainer)
        if trainer == "sac":
            order = ["fast_sac"]
        else:
            order = ["impala"]
        ref, ref_name = _reference(scene, order, config_dir)
        keys = settings_fields(trainer) if trainer == "sac" else {"learning_rate"}
        source = "bench template (bench/plan.py)"
        if ref is None and trainer == "sac":
            source += ", as fast_sac (no configs/fast_sac_{scene}.yaml)".format(scene=scene)
        if ref is not None:
            _overlay(cfg, ref, keys)
            source += f" + shared settings of configs/{ref_name}"
    summary_freq = max(100, max_steps // summaries)
    cfg.update({"max_steps": max_steps, "summary_freq": summary_freq, "checkpoint_interval": 10 * max_steps,
                "keep_checkpoints": 1})
    cfg.setdefault("network_settings", dict(NETWORK_TEMPLATE))
    cfg.setdefault("reward_signals", copy.deepcopy(COMMON_TEMPLATE["reward_signals"]))
    hyper = cfg.setdefault("hyperparameters", {})
    if trainer not in ON_POLICY and "save_replay_buffer" in settings_fields(trainer):
        hyper["save_replay_buffer"] = True
    return cfg, source


@dataclass
class Job:
    """One training run to make."""

    trainer: str
    origin: str
    scene: str
    seed: int
    mode: str
    max_steps: int
    config: Dict[str, Any]
    config_source: str
    index: int = 0
    total: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)


def override_applies(trainer: str, path: Sequence[str]) -> bool:
    """Whether ``--set path=...`` reaches ``trainer``: a hyperparameter only a trainer whose settings class has
    it; any other section (``network_settings``, ``reward_signals``, ``time_horizon``...) every trainer."""
    return path[0] != "hyperparameters" or len(path) != 2 or path[1] in settings_fields(trainer)


def plan_jobs(budget: Budget, ours: List[str], trainers: Optional[List[str]] = None,
              scenes: Optional[List[str]] = None, config_dir: str = CONFIG_DIR,
              overrides: Sequence[Tuple[Sequence[str], Any]] = ()) -> Tuple[List[Job], List[str]]:
    """(jobs in run order, reasons for skipped pairs).  Cheap built-ins first so early progress is visible.
    ``overrides`` (``--set``): (key path, value) pairs set in the config of every trainer they reach
    (``override_applies``); one that reaches no planned trainer is a ValueError naming it."""
    names = [t for t in list(BUILTINS) + ours if trainers is None or t in trainers]
    for path, value in overrides:
        if not any(override_applies(t, path) for t in names):
            raise ValueError(f"--set {override_text(path, value)}: no planned trainer ({', '.join(names)}) has the "
                             f"hyperparameter {path[-1]!r}")
    jobs, skipped = [], []
    for scene in scenes or budget.scenes:
        scene_class(scene)  # a clear error for an unknown scene
        for trainer in names:
            if not supports(trainer, scene):
                skipped.append(f"{trainer} on {scene}: {action_kind(scene)} actions are not supported by {trainer}")
                continue
            steps = budget.steps.get(scene, max(budget.steps.values()))
            cfg, source = build_config(trainer, scene, steps, budget.summaries, ours, config_dir,
                                       minimal=budget.minimal_configs)
            applied = [(path, value) for path, value in overrides if override_applies(trainer, path)]
            for path, value in applied:
                apply_override(cfg, path, value)
            if applied:
                source += " + --set " + " ".join(override_text(p, v) for p, v in applied)
            origin = "builtin" if trainer in BUILTINS else "ours"
            for seed in budget.seeds:
                jobs.append(Job(trainer, origin, scene, seed, "in_process", steps, copy.deepcopy(cfg), source))
            if scene == budget.learn_scene and (budget.learn_trainers is None or trainer in budget.learn_trainers):
                for seed in budget.learn_seeds:
                    jobs.append(Job(trainer, origin, scene, seed, "mlagents-learn", steps, copy.deepcopy(cfg), source))
    jobs.sort(key=lambda j: (j.mode != "in_process", j.scene, j.seed))
    for i, job in enumerate(jobs):
        job.index, job.total = i + 1, len(jobs)
    return jobs, skipped
