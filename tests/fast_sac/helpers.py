"""Builders for fast_sac / off-policy tests: specs, synthetic trajectories, a trainer wired without an env."""
from typing import List, Optional, Sequence

import numpy as np

from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import EncoderType, TrainerSettings
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.trajectory import AgentExperience, Trajectory
from mlagents_envs.base_env import ActionSpec, ActionTuple, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import FastSACTrainer


def make_spec(obs_shapes: Sequence[tuple] = ((3,),), cont: int = 2, branches: Sequence[int] = ()) -> BehaviorSpec:
    obs = [
        ObservationSpec(
            shape=tuple(s),
            dimension_property=tuple(DimensionProperty.UNSPECIFIED for _ in s),
            observation_type=ObservationType.DEFAULT,
            name=f"obs{i}",
        )
        for i, s in enumerate(obs_shapes)
    ]
    return BehaviorSpec(obs, ActionSpec(cont, tuple(branches)))


def make_trajectory(
    spec: BehaviorSpec,
    length: int,
    rng: np.random.Generator,
    done: bool = False,
    interrupted: bool = False,
    agent_id: str = "agent0",
    masks: Optional[List[np.ndarray]] = None,
) -> Trajectory:
    a = spec.action_spec
    steps = []
    for t in range(length):
        obs = [rng.random(o.shape).astype(np.float32) for o in spec.observation_specs]
        if len(spec.observation_specs[0].shape) == 3:
            obs[0] = np.round(obs[0] * 255) / 255
        act = ActionTuple(
            continuous=rng.uniform(-1, 1, (a.continuous_size,)).astype(np.float32),
            discrete=np.array([rng.integers(0, b) for b in a.discrete_branches], dtype=np.int32),
        )
        mask = None
        if a.discrete_size:
            mask = masks[t] if masks is not None else [np.zeros(b, bool) for b in a.discrete_branches]
        last = t == length - 1
        steps.append(
            AgentExperience(
                obs=obs,
                reward=float(t + 1),
                done=bool(last and done),
                action=act,
                action_probs=LogProbsTuple(
                    continuous=np.zeros(a.continuous_size, np.float32), discrete=np.zeros(a.discrete_size, np.float32)
                ),
                action_mask=mask,
                prev_action=np.zeros(a.discrete_size, np.int32),
                interrupted=bool(last and interrupted),
                memory=None,
                group_status=[],
                group_reward=0.0,
            )
        )
    next_obs = [rng.random(o.shape).astype(np.float32) for o in spec.observation_specs]
    return Trajectory(steps=steps, next_obs=next_obs, next_group_obs=[], agent_id=agent_id, behavior_id="B?team=0")


def make_trainer(
    spec: BehaviorSpec,
    tmp_path,
    load: bool = False,
    seed: int = 0,
    max_steps: int = 10000,
    encoder: str = "simple",
    normalize: bool = False,
    **hyper,
) -> FastSACTrainer:
    hp = dict(batch_size=8, buffer_size=200, buffer_init_steps=0, steps_per_update=1.0)
    hp.update(hyper)
    settings = TrainerSettings(
        trainer_type="fast_sac", hyperparameters=FastSACSettings(**hp), max_steps=max_steps, summary_freq=10 ** 9
    )
    settings.network_settings.hidden_units = 16
    settings.network_settings.num_layers = 1
    settings.network_settings.vis_encode_type = EncoderType(encoder)
    settings.network_settings.normalize = normalize
    trainer = FastSACTrainer("B", 10, settings, True, load, seed, str(tmp_path / "B"))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    policy = trainer.create_policy(behavior_id, spec)
    trainer.add_policy(behavior_id, policy)
    return trainer


def filled_trainer(tmp_path, actor_min_q=False, rng_seed: int = 1, **spec_kw) -> FastSACTrainer:
    """A trainer (batch 16, never updating on its own) with 4 short trajectories in its replay."""
    spec = make_spec(**spec_kw)
    trainer = make_trainer(spec, tmp_path, batch_size=16, buffer_init_steps=10 ** 6, actor_min_q=actor_min_q)
    rng = np.random.default_rng(rng_seed)
    for i in range(4):
        trainer._process_trajectory(make_trajectory(spec, 9, rng, done=i % 2 == 0))
    return trainer
