"""In-process ML-Agents training on a stand-in scene, for fast learning tests.

``train_in_process`` does what ``mlagents-learn`` does in ``learn.run_training`` - RunOptions from a
config dict, TrainerFactory, TrainerController, EnvironmentParameterManager (curricula work), model
checkpoints and ``.onnx`` export into ``output_dir/run_id`` - but drives one ``SceneEnv`` through
``SimpleEnvManager`` in the calling process instead of Unity processes over gRPC.  Trainer plugins are
registered through ``mlagents.plugins.trainer_type.register_trainer_plugins()`` so built-in and plugin
trainers both work.  A ``StatsWriter`` captures every summary of the behavior
("Environment/Cumulative Reward", "Scene/Success Rate", losses, ...) into the returned result.
"""
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from mlagents.plugins.trainer_type import register_trainer_plugins
from mlagents.trainers.environment_parameter_manager import EnvironmentParameterManager
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions
from mlagents.trainers.simple_env_manager import SimpleEnvManager
from mlagents.trainers.stats import StatsReporter, StatsSummary, StatsWriter
from mlagents.trainers.trainer import TrainerFactory
from mlagents.trainers.trainer_controller import TrainerController
from mlagents.trainers.training_status import GlobalTrainingStatus
from mlagents_envs.side_channel.environment_parameters_channel import (
    EnvironmentParametersChannel,
)
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from mlagents_plugins.envs.academy import STAT_SUCCESS_RATE
from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.envs.scenes import SceneRef, scene_class
from mlagents_plugins.host import patches

STAT_CUMULATIVE_REWARD = "Environment/Cumulative Reward"
TRAINING_STATUS_FILE = "training_status.json"


@dataclass
class TrainingResult:
    behavior_name: str
    #: (trainer step, mean episode reward) per summary that had finished episodes
    reward_curve: List[Tuple[int, float]]
    #: mean of the last ``final_window`` points of reward_curve (nan if no episode finished)
    final_mean_reward: float
    #: trainer steps at the end
    steps: int
    wall_seconds: float
    #: mean "Scene/Success Rate" over the last ``final_window`` summaries that reported it (nan if none)
    success_rate: float
    #: output_dir/run_id: checkpoints (.pt/.onnx), the final <Behavior>.onnx, run_logs/
    results_path: str
    success_curve: List[Tuple[int, float]] = field(default_factory=list)
    #: every captured summary key -> [(step, mean)]
    stats: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)


class _CaptureWriter(StatsWriter):
    """Collects the summaries of one stats category (the behavior name)."""

    def __init__(self, category: str):
        self.category = category
        self.curves: Dict[str, List[Tuple[int, float]]] = defaultdict(list)

    def write_stats(self, category: str, values: Dict[str, StatsSummary], step: int) -> None:
        if category != self.category:
            return
        for key, summary in values.items():
            if summary.num > 0:
                self.curves[key].append((int(step), float(summary.mean)))


class _SceneEnvManager(SimpleEnvManager):
    """SimpleEnvManager that also forwards the scene's stats side channel, like the subprocess manager."""

    def __init__(self, env: SceneEnv, env_params: EnvironmentParametersChannel, stats: StatsSideChannel):
        super().__init__(env, env_params)
        self._stats_channel = stats

    def _with_stats(self, steps):
        stats = self._stats_channel.get_and_reset_stats()
        out = [s._replace(environment_stats=stats) for s in steps]
        self.previous_step = out[-1]
        return out

    def _step(self):
        return self._with_stats(super()._step())

    def _reset_env(self, config=None):
        return self._with_stats(super()._reset_env(config))


def _tail_mean(curve: List[Tuple[int, float]], window: int) -> float:
    if not curve:
        return float("nan")
    return float(np.mean([v for _, v in curve[-window:]]))


def _drop_pending_stats(category: str) -> None:
    """Forget the values ML-Agents' process-wide ``StatsReporter`` holds for ``category`` and has not written yet
    (episodes that ended after a run's last summary), so they do not enter the next run's first summary."""
    with StatsReporter.lock:
        StatsReporter.stats_dict.pop(category, None)
        StatsReporter.stats_aggregation.pop(category, None)


def train_in_process(
    config: Dict[str, Any],
    scene: SceneRef,
    *,
    max_steps: int,
    seed: int = 0,
    num_areas: int = 1,
    output_dir: str,
    run_id: str = "run",
    resume: bool = False,
    environment_parameters: Optional[Dict[str, Any]] = None,
    scene_kwargs: Optional[Dict[str, Any]] = None,
    final_window: int = 3,
) -> TrainingResult:
    """Train ``config`` (one behavior's trainer settings, as in a YAML file) on ``scene``.

    ``max_steps`` overrides ``config['max_steps']``; ``environment_parameters`` is the YAML section of
    the same name (floats, samplers or curricula); ``scene_kwargs`` go to the scene (e.g.
    ``max_episode_steps``, ``decision_period``); ``resume`` continues a run found in
    ``output_dir/run_id`` (checkpoints and training_status.json), as ``mlagents-learn --resume``.
    """
    _check_arguments(config, max_steps=max_steps, num_areas=num_areas, final_window=final_window)
    behavior = scene_class(scene).behavior_name
    register_trainer_plugins()
    patches.install_all()  # what mlagents-learn's start-up does through our stats-writer entry point
    options = _run_options(config, behavior, max_steps=max_steps, seed=seed, num_areas=num_areas,
                           output_dir=output_dir, run_id=run_id, resume=resume,
                           environment_parameters=environment_parameters)
    status_file = _start_training_status(options.checkpoint_settings.run_logs_dir, resume)
    env_manager = _scene_env_manager(scene, num_areas=num_areas, seed=seed, scene_kwargs=scene_kwargs)
    controller = _trainer_controller(options, seed=seed, run_id=run_id, resume=resume)
    writer, wall = _run(controller, env_manager, behavior, status_file)
    steps = max((int(t.get_step) for t in controller.trainers.values()), default=0)
    return _result(writer, behavior, steps=steps, wall=wall, results_path=options.checkpoint_settings.write_path,
                   final_window=final_window)


def _check_arguments(config: Any, **counts: Any) -> None:
    """``TrainerConfigError`` naming the argument: counts must be positive integers, ``config`` a behavior block."""
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TrainerConfigError(f"train_in_process: {name}={value!r} is invalid; must be a positive integer")
    if not isinstance(config, dict) or "trainer_type" not in config:
        raise TrainerConfigError(
            f"train_in_process: config must be one behavior's trainer settings as a dict with a trainer_type, "
            f"got {config!r}"
        )


def _run_options(
    config: Dict[str, Any],
    behavior: str,
    *,
    max_steps: int,
    seed: int,
    num_areas: int,
    output_dir: str,
    run_id: str,
    resume: bool,
    environment_parameters: Optional[Dict[str, Any]],
) -> RunOptions:
    """``RunOptions`` as ``mlagents-learn`` builds them from a YAML file and its command line."""
    behavior_config = dict(config)
    behavior_config["max_steps"] = max_steps
    return RunOptions.from_dict(
        {
            "behaviors": {behavior: behavior_config},
            "environment_parameters": environment_parameters,
            "checkpoint_settings": {
                "run_id": run_id,
                "results_dir": os.path.abspath(output_dir),
                "resume": resume,
                "force": not resume,
            },
            "env_settings": {"seed": seed, "num_areas": num_areas},
        }
    )


def _start_training_status(run_logs: str, resume: bool) -> str:
    """The run's ``training_status.json`` path; ML-Agents' process-wide training status starts clean (runs in one
    process never share it) and, with ``resume``, from that file."""
    os.makedirs(run_logs, exist_ok=True)
    status_file = os.path.join(run_logs, TRAINING_STATUS_FILE)
    GlobalTrainingStatus.saved_state.clear()
    if resume:
        GlobalTrainingStatus.load_state(status_file)
    return status_file


def _scene_env_manager(
    scene: str, *, num_areas: int, seed: int, scene_kwargs: Optional[Dict[str, Any]]
) -> "_SceneEnvManager":
    """The scene in this process, with the side channels a Unity build has (environment parameters, stats)."""
    params_channel = EnvironmentParametersChannel()
    stats_channel = StatsSideChannel()
    env = SceneEnv(
        scene, num_areas=num_areas, seed=seed, side_channels=[params_channel, stats_channel], **(scene_kwargs or {})
    )
    return _SceneEnvManager(env, params_channel, stats_channel)


def _trainer_controller(options: RunOptions, *, seed: int, run_id: str, resume: bool) -> TrainerController:
    """ML-Agents' trainer factory and controller for ``options`` (curricula through its parameter manager)."""
    write_path = options.checkpoint_settings.write_path
    param_manager = EnvironmentParameterManager(options.environment_parameters, seed, restore=resume)
    factory = TrainerFactory(
        trainer_config=options.behaviors,
        output_path=write_path,
        train_model=True,
        load_model=resume,
        seed=seed,
        param_manager=param_manager,
        init_path=None,
        multi_gpu=False,
    )
    return TrainerController(factory, write_path, run_id, param_manager, True, seed)


def _run(
    controller: TrainerController, env_manager: "_SceneEnvManager", behavior: str, status_file: str
) -> Tuple[_CaptureWriter, float]:
    """Trains to the end with a writer capturing ``behavior``'s summaries; afterwards (also after an error) the writer
    is removed, values no summary took are dropped, the scene is closed and the training status saved.  Returns
    the writer and the wall seconds of training."""
    writer = _CaptureWriter(behavior)
    _drop_pending_stats(behavior)  # an earlier run in this process may have left values after its last summary
    StatsReporter.add_writer(writer)
    start = time.time()
    try:
        controller.start_learning(env_manager)
    finally:
        with StatsReporter.lock:
            if writer in StatsReporter.writers:
                StatsReporter.writers.remove(writer)
        _drop_pending_stats(behavior)
        env_manager.close()
        GlobalTrainingStatus.save_state(status_file)
    return writer, time.time() - start


def _result(
    writer: _CaptureWriter, behavior: str, *, steps: int, wall: float, results_path: str, final_window: int
) -> TrainingResult:
    rewards = list(writer.curves.get(STAT_CUMULATIVE_REWARD, []))
    success = list(writer.curves.get(STAT_SUCCESS_RATE, []))
    return TrainingResult(
        behavior_name=behavior,
        reward_curve=rewards,
        final_mean_reward=_tail_mean(rewards, final_window),
        steps=steps,
        wall_seconds=wall,
        success_rate=_tail_mean(success, final_window),
        results_path=results_path,
        success_curve=success,
        stats={k: list(v) for k, v in writer.curves.items()},
    )
