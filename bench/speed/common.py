"""Shared timing code of the update benchmark (``python -m bench speed update``, ``bench/speed/update.py``).

* ``time_interleaved`` (``mlagents_plugins.common.timing``, which ``update_precision: auto`` uses at start-up too):
  ms per call of several update functions, measured in interleaved blocks so that a busy shared machine slows every
  variant alike and their ratio stays comparable.
* ``balance_spec`` / ``synthetic_trajectory``: the stand-in "balance" scene's observation and action sizes
  and random trajectories of that shape, to fill a trainer's buffer without running an environment.
* ``trainer_settings`` / ``make_trainer``: one of our trainers (or a built-in) exactly as ``mlagents-learn``
  would build it from ``configs/<trainer>_balance.yaml``, wired to a policy but not to an environment.
* ``optimized_parameters`` / ``BackwardCounter``: what an update trains and how many backward passes it
  makes, so a minimal loop can be checked to do the same work as the trainer it is compared with.
* ``print_result``: a script's flat result as one JSON line (``--json``, read by the bench) or a table.
"""
import copy
import json
import os
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from mlagents_plugins.common.timing import time_interleaved  # noqa: F401  (moved to the package; the bench's name)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = "balance"


def print_result(result: Dict[str, object], as_json: bool, width: int = 40) -> None:
    if as_json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:{width}s} {value}")


def balance_spec():
    """BehaviorSpec of the balance stand-in scene (the scene every trainer of ours has a config for)."""
    from mlagents_plugins.envs.scenes import SCENES

    from mlagents_envs.base_env import BehaviorSpec

    scene = SCENES[SCENE](num_areas=1)
    return BehaviorSpec(list(scene.observation_specs), scene.action_spec)


def _observation(shape, rng: np.random.Generator) -> np.ndarray:
    """Vector observations standard normal; camera frames ([C, H, W]) uniform multiples of 1/255, as 8-bit
    pixels decode."""
    if len(shape) == 3:
        return (rng.integers(0, 256, shape) / 255.0).astype(np.float32)
    return rng.normal(size=shape).astype(np.float32)


def synthetic_trajectory(spec, length: int, rng: np.random.Generator, done: bool, agent_id: str,
                         log_probs: Optional[np.ndarray] = None, memory_size: int = 0):
    """A ``Trajectory`` of random observations/actions/rewards of ``spec``'s shapes (every action allowed).

    ``log_probs`` ``[length, W]`` fills the continuous log-probs slot (taac keeps its step record there);
    default random values of width ``continuous_size`` (impala reads them as behaviour log-probabilities).
    ``memory_size`` > 0: every step carries a random memory of that size (what a recurrent policy acted from).
    """
    from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
    from mlagents.trainers.trajectory import AgentExperience, Trajectory
    from mlagents_envs.base_env import ActionTuple

    a = spec.action_spec
    if log_probs is None:
        log_probs = rng.normal(-1.0, 0.3, (length, a.continuous_size)).astype(np.float32)
    branches = list(a.discrete_branches)
    steps = []
    for t in range(length):
        last = t == length - 1
        steps.append(AgentExperience(
            obs=[_observation(o.shape, rng) for o in spec.observation_specs],
            reward=float(rng.normal()),
            done=bool(last and done),
            action=ActionTuple(continuous=rng.uniform(-1, 1, (a.continuous_size,)).astype(np.float32),
                               discrete=np.array([rng.integers(0, b) for b in branches], np.int32)),
            action_probs=LogProbsTuple(continuous=log_probs[t], discrete=np.full(len(branches), -1.0, np.float32)),
            action_mask=[np.zeros(b, bool) for b in branches] if branches else None,
            prev_action=np.zeros(len(branches), np.int32),
            interrupted=False,
            memory=rng.normal(0.0, 0.1, memory_size).astype(np.float32) if memory_size else None,
            group_status=[],
            group_reward=0.0,
        ))
    next_obs = [_observation(o.shape, rng) for o in spec.observation_specs]
    return Trajectory(steps=steps, next_obs=next_obs, next_group_obs=[], agent_id=agent_id, behavior_id="B?team=0")


def register_plugins() -> None:
    from mlagents.plugins.trainer_type import register_trainer_plugins

    import mlagents_plugins  # noqa: F401  (ONNX export fix)

    register_trainer_plugins()


#: the keys of ``sizes`` below (``speed update``'s ``--hidden-units``, ``--num-layers``, ``--batch-size``)
SIZE_KEYS = ("hidden_units", "num_layers", "batch_size")


def behavior_config(trainer: str, overrides: Optional[Dict[str, object]] = None,
                    sizes: Optional[Dict[str, int]] = None,
                    memory: Optional[Dict[str, int]] = None) -> Dict[str, object]:
    """The behavior block of ``configs/<trainer>_balance.yaml`` (ours), or the bench's config for a built-in
    (``bench.plan.build_config``: sac shares fast_sac's settings, ppo impala's network), hyperparameters
    updated with ``overrides``; ``sizes`` (keys ``SIZE_KEYS``) replace the config's network size and batch size,
    so ours and the built-ins can be timed at one size; ``memory`` (``memory_size``, ``sequence_length``) becomes
    its ``network_settings.memory``."""
    from bench import plan

    if trainer in plan.BUILTINS:
        ours, _ = plan.discover_trainers()
        cfg, _ = plan.build_config(trainer, SCENE, 10 ** 7, 10, ours)
    else:
        cfg = plan.load_config(trainer, SCENE)
        if cfg is None:
            raise FileNotFoundError(f"configs/{trainer}_{SCENE}.yaml does not exist")
    cfg = copy.deepcopy(cfg)
    cfg["hyperparameters"] = dict(cfg.get("hyperparameters") or {}, **(overrides or {}))
    sizes = sizes or {}
    unknown = set(sizes) - set(SIZE_KEYS)
    if unknown:
        raise ValueError(f"sizes has unknown keys {sorted(unknown)}; allowed: {SIZE_KEYS}")
    if sizes.get("batch_size"):
        cfg["hyperparameters"]["batch_size"] = sizes["batch_size"]
    network = {k: sizes[k] for k in ("hidden_units", "num_layers") if sizes.get(k)}
    if memory:
        network["memory"] = dict(memory)
    if network:
        cfg["network_settings"] = dict(cfg.get("network_settings") or {}, **network)
    for key in ("save_replay_buffer", "init_replay_from"):
        cfg["hyperparameters"].pop(key, None)
    cfg.update(max_steps=10 ** 7, summary_freq=10 ** 9, checkpoint_interval=10 ** 9, threaded=False)
    return cfg


def trainer_settings(trainer: str, overrides: Optional[Dict[str, object]] = None,
                     sizes: Optional[Dict[str, int]] = None, memory: Optional[Dict[str, int]] = None):
    """``TrainerSettings`` as ``mlagents-learn`` structures them from ``behavior_config``."""
    from mlagents.trainers.settings import TrainerSettings

    register_plugins()
    return TrainerSettings.structure(behavior_config(trainer, overrides, sizes, memory), TrainerSettings)


def make_trainer(trainer: str, out_dir: str, overrides: Optional[Dict[str, object]] = None, seed: int = 0,
                 sizes: Optional[Dict[str, int]] = None, memory: Optional[Dict[str, int]] = None):
    """(trainer with its policy and optimizer, behavior spec): what TrainerFactory + add_policy build."""
    from mlagents import plugins as mla_plugins
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers

    settings = trainer_settings(trainer, overrides, sizes, memory)
    cls = mla_plugins.all_trainer_types[trainer]
    spec = balance_spec()
    t = cls("B", 10, settings, True, False, seed, os.path.join(out_dir, trainer))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    t.add_policy(bid, t.create_policy(bid, spec))
    return t, spec


def make_trainer_py_wrapper(trainer: str, out_dir: str, **kwargs):
    """``make_trainer`` with ``MLAGENTS_PLUGINS_PY_WRAPPER=1`` while the trainer is built (its compiled whole step at
    Inductor's defaults: a generated Python function calls the kernels, as ATen operators the profiler sees); the
    variable is restored afterwards."""
    previous = os.environ.get("MLAGENTS_PLUGINS_PY_WRAPPER")
    os.environ["MLAGENTS_PLUGINS_PY_WRAPPER"] = "1"
    try:
        return make_trainer(trainer, out_dir, **kwargs)
    finally:
        if previous is None:
            os.environ.pop("MLAGENTS_PLUGINS_PY_WRAPPER", None)
        else:
            os.environ["MLAGENTS_PLUGINS_PY_WRAPPER"] = previous


def fill(trainer, spec, rows: int, rng: np.random.Generator, length: int = 64,
         log_probs: Optional[Callable[[int], np.ndarray]] = None) -> int:
    """Feed ``trainer._process_trajectory`` random trajectories of ``length`` steps until ``rows`` steps
    went in (every third one ends its episode; with the policy's memory at every step of a recurrent policy);
    returns the number of steps."""
    n = 0
    k = 0
    memory_size = int(trainer.policy.m_size)
    while n < rows:
        lp = log_probs(length) if log_probs is not None else None
        trainer._process_trajectory(
            synthetic_trajectory(spec, length, rng, done=k % 3 == 0, agent_id=f"a{k % 8}", log_probs=lp,
                                 memory_size=memory_size))
        n += length
        k += 1
    return n


def optimized_parameters(*objects) -> List:
    """Unique trainable tensors (``requires_grad``) the ``torch.optim.Optimizer`` attributes of ``objects`` (or
    optimizers given directly) update, in first-seen order.  Frozen tensors an optimizer was handed (e.g.
    ML-Agents' export constants such as ``version_number``) and empty ones (a discrete temperature without
    discrete branches) are left out: no update touches them."""
    import torch

    seen: Dict[int, object] = {}
    for obj in objects:
        opts = [obj] if isinstance(obj, torch.optim.Optimizer) else [
            v for v in vars(obj).values() if isinstance(v, torch.optim.Optimizer)]
        for opt in opts:
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.requires_grad and p.numel() > 0:
                        seen.setdefault(id(p), p)
    return list(seen.values())


def parameter_shapes(params: Sequence) -> List[tuple]:
    """Sorted shapes of ``params``: equal lists mean the same layers, whatever their names or order."""
    return sorted(tuple(p.shape) for p in params)


class BackwardCounter:
    """Counts ``torch.autograd.backward`` calls (what ``Tensor.backward`` runs) inside a ``with`` block."""

    def __init__(self) -> None:
        self.calls = 0

    def __enter__(self) -> "BackwardCounter":
        import torch

        self._original = torch.autograd.backward

        def counted(*args, **kwargs):
            self.calls += 1
            return self._original(*args, **kwargs)

        torch.autograd.backward = counted
        return self

    def __exit__(self, *exc) -> None:
        import torch

        torch.autograd.backward = self._original
