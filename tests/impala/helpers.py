"""impala test wiring: its spec, settings and traceable trajectories (built with tests/builders.py)."""
import numpy as np
from mlagents.trainers.settings import NetworkSettings, RewardSignalType, TrainerSettings
from mlagents.trainers.trajectory import Trajectory
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.impala.settings import ImpalaSettings
from tests.builders import behavior_spec, trajectory

OBS_SIZE = 5


def impala_spec(continuous: int, branches=()) -> BehaviorSpec:
    """One vector observation of OBS_SIZE values."""
    return behavior_spec(((OBS_SIZE,),), continuous, branches)


def trainer_settings(streams=(("extrinsic", 0.9),), **hyperparameters) -> TrainerSettings:
    return TrainerSettings(
        trainer_type="impala",
        hyperparameters=ImpalaSettings(**hyperparameters),
        network_settings=NetworkSettings(hidden_units=16, num_layers=1),
        reward_signals={RewardSignalType(name): RewardSignalType(name).to_settings()(gamma=g) for name, g in streams},
        max_steps=10000,
    )


def make_trajectory(
    length: int,
    spec: BehaviorSpec,
    done: bool,
    interrupted: bool,
    rng: np.random.Generator,
    agent_id: str = "agent_0-0",
    obs_offset: float = 0.0,
) -> Trajectory:
    """Observation of step k is ``obs_offset + k`` in every entry, so pieces are easy to trace; rewards and
    behaviour log-probabilities are standard normal."""
    return trajectory(
        spec, length, rng, done=done, interrupted=interrupted, agent_id=agent_id,
        reward=lambda t: float(rng.normal()),
        observe=lambda t: [np.full(OBS_SIZE, obs_offset + t, dtype=np.float32)],
        random_log_probs=True,
    )
