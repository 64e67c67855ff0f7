"""Builders for muzero_repr tests: specs, synthetic trajectories, a trainer wired without an environment."""
from typing import Sequence

import numpy as np
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.trajectory import AgentExperience, Trajectory
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer


def spec_with(obs_shapes: Sequence[tuple] = ((4,),), cont: int = 2, branches: Sequence[int] = ()) -> BehaviorSpec:
    obs = []
    for i, s in enumerate(obs_shapes):
        if len(s) == 3:
            props = (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
                     DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
        else:
            props = (DimensionProperty.NONE,)
        obs.append(ObservationSpec(tuple(s), props, ObservationType.DEFAULT, f"obs{i}"))
    return BehaviorSpec(obs, ActionSpec(cont, tuple(branches)))


def trajectory(spec: BehaviorSpec, length: int, rng: np.random.Generator, done: bool, interrupted: bool = False,
               agent_id: str = "a0") -> Trajectory:
    a = spec.action_spec
    steps = []
    for t in range(length):
        obs = [rng.random(o.shape).astype(np.float32) for o in spec.observation_specs]
        obs = [np.round(o * 255) / 255 if o.ndim == 3 else o for o in obs]
        last = t == length - 1
        steps.append(AgentExperience(
            obs=obs,
            reward=float(0.5 * t - 1.0),
            done=bool(last and done),
            action=ActionTuple(
                continuous=rng.uniform(-1, 1, (a.continuous_size,)).astype(np.float32),
                discrete=np.array([rng.integers(0, b) for b in a.discrete_branches], dtype=np.int32),
            ),
            action_probs=LogProbsTuple(continuous=np.zeros(a.continuous_size, np.float32),
                                       discrete=np.zeros(a.discrete_size, np.float32)),
            action_mask=[np.zeros(b, bool) for b in a.discrete_branches] if a.discrete_size else None,
            prev_action=np.zeros(a.discrete_size, np.int32),
            interrupted=bool(last and interrupted),
            memory=None,
            group_status=[],
            group_reward=0.0,
        ))
    next_obs = [rng.random(o.shape).astype(np.float32) for o in spec.observation_specs]
    return Trajectory(steps=steps, next_obs=next_obs, next_group_obs=[], agent_id=agent_id, behavior_id="B?team=0")


def make_trainer(spec: BehaviorSpec, tmp_path, load: bool = False, seed: int = 0, normalize: bool = False, **hyper) -> MuZeroReprTrainer:
    hp = dict(batch_size=8, buffer_size=300, buffer_init_steps=0, steps_per_update=1.0, latent_size=8,
              model_hidden_units=16, model_num_layers=1, head_hidden_units=16, head_num_layers=1,
              num_unroll_steps=3, td_steps=4, support_size=3)
    hp.update(hyper)
    settings = TrainerSettings(trainer_type="muzero_repr", hyperparameters=MuZeroReprSettings(**hp),
                               max_steps=10000, summary_freq=10**9)
    settings.network_settings.hidden_units = 16
    settings.network_settings.num_layers = 1
    settings.network_settings.normalize = normalize
    trainer = MuZeroReprTrainer("B", 10, settings, True, load, seed, str(tmp_path / "B"))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    policy = trainer.create_policy(bid, spec)
    trainer.add_policy(bid, policy)
    return trainer


def fill(trainer: MuZeroReprTrainer, spec: BehaviorSpec, rng: np.random.Generator, n_traj: int = 6) -> None:
    for i in range(n_traj):
        trainer._process_trajectory(trajectory(spec, 5 + i, rng, done=(i % 2 == 0), interrupted=(i % 3 == 1),
                                               agent_id=f"a{i % 2}"))
