"""Small builders shared by the impala tests (specs, settings, hand-made trajectories)."""
from typing import List, Optional

import numpy as np
from mlagents.trainers.settings import NetworkSettings, RewardSignalType, TrainerSettings
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.trajectory import AgentExperience, Trajectory
from mlagents_envs.base_env import ActionSpec, ActionTuple, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.impala.settings import ImpalaSettings

OBS_SIZE = 5


def behavior_spec(continuous: int, branches=()) -> BehaviorSpec:
    obs = ObservationSpec((OBS_SIZE,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vec")
    return BehaviorSpec([obs], ActionSpec(continuous, tuple(branches)))


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
    """Observation of step k is ``obs_offset + k`` in every entry, so pieces are easy to trace."""
    c, branches = spec.action_spec.continuous_size, spec.action_spec.discrete_branches
    steps: List[AgentExperience] = []
    for k in range(length):
        last = k == length - 1
        mask: Optional[List[np.ndarray]] = [np.zeros(b, dtype=bool) for b in branches] if branches else None
        steps.append(
            AgentExperience(
                obs=[np.full(OBS_SIZE, obs_offset + k, dtype=np.float32)],
                reward=float(rng.normal()),
                done=done and last,
                action=ActionTuple(
                    continuous=rng.normal(size=c).astype(np.float32),
                    discrete=np.array([rng.integers(b) for b in branches], dtype=np.int32),
                ),
                action_probs=LogProbsTuple(
                    continuous=rng.normal(size=c).astype(np.float32),
                    discrete=rng.normal(size=len(branches)).astype(np.float32),
                ),
                action_mask=mask,
                prev_action=np.zeros(len(branches), dtype=np.float32),
                interrupted=interrupted and last,
                memory=None,
                group_status=[],
                group_reward=0.0,
            )
        )
    next_obs = [np.full(OBS_SIZE, obs_offset + length, dtype=np.float32)]
    return Trajectory(steps=steps, next_obs=next_obs, next_group_obs=[], agent_id=agent_id, behavior_id="B?team=0")
