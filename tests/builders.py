"""Specs and synthetic trajectories for every trainer's tests (one copy; the per-trainer helpers wire trainers).

A trajectory here is what ML-Agents' AgentProcessor hands a trainer: ``AgentExperience`` rows plus the
observation after the last one.  Each test picks what its rows must carry (rewards, observations, behaviour
log-probabilities, masks) and leaves the rest random.
"""
from typing import Callable, List, Optional, Sequence

import numpy as np
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

#: the behavior id every synthetic trajectory carries (``BehaviorIdentifiers.from_name_behavior_id`` of it: "B")
BEHAVIOR_ID = "B?team=0"


def behavior_spec(obs_shapes: Sequence[tuple] = ((3,),), cont: int = 2, branches: Sequence[int] = ()) -> BehaviorSpec:
    """Vector observations are plain; [C, H, W] ones are images (translational equivariance on H and W)."""
    obs = []
    for i, shape in enumerate(obs_shapes):
        if len(shape) == 3:
            props = (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
                     DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
        else:
            props = (DimensionProperty.NONE,)
        obs.append(ObservationSpec(tuple(shape), props, ObservationType.DEFAULT, f"obs{i}"))
    return BehaviorSpec(obs, ActionSpec(cont, tuple(branches)))


def random_observations(spec: BehaviorSpec, rng: np.random.Generator) -> List[np.ndarray]:
    """Uniform [0, 1) values; images quantised to 1/255 as a uint8 camera would give (replay stores them so)."""
    obs = [rng.random(o.shape).astype(np.float32) for o in spec.observation_specs]
    return [np.round(o * 255) / 255 if o.ndim == 3 else o for o in obs]


def trajectory(
    spec: BehaviorSpec,
    length: int,
    rng: np.random.Generator,
    done: bool = False,
    interrupted: bool = False,
    agent_id: str = "agent0",
    masks: Optional[List[List[np.ndarray]]] = None,
    reward: Callable[[int], float] = lambda t: float(t + 1),
    observe: Optional[Callable[[int], List[np.ndarray]]] = None,
    random_log_probs: bool = False,
) -> Trajectory:
    """``length`` rows; the last ends the episode if ``done`` (a time-out too if ``interrupted``).

    ``reward(t)`` is row t's reward; ``observe(t)`` its observations (t == length: the next observation), random
    by default; ``masks[t]`` its action masks (all allowed by default).  Continuous actions are uniform in
    [-1, 1]; behaviour log-probabilities are zero unless ``random_log_probs``.
    """
    action_spec = spec.action_spec
    n_cont, branches = action_spec.continuous_size, action_spec.discrete_branches
    observe = observe or (lambda t: random_observations(spec, rng))
    steps = []
    for t in range(length):
        obs = observe(t)
        action = ActionTuple(
            continuous=rng.uniform(-1, 1, (n_cont,)).astype(np.float32),
            discrete=np.array([rng.integers(0, b) for b in branches], dtype=np.int32),
        )
        if random_log_probs:
            log_probs = LogProbsTuple(continuous=rng.normal(size=n_cont).astype(np.float32),
                                      discrete=rng.normal(size=len(branches)).astype(np.float32))
        else:
            log_probs = LogProbsTuple(continuous=np.zeros(n_cont, np.float32),
                                      discrete=np.zeros(len(branches), np.float32))
        mask = None
        if branches:
            mask = masks[t] if masks is not None else [np.zeros(b, bool) for b in branches]
        last = t == length - 1
        steps.append(AgentExperience(
            obs=obs,
            reward=reward(t),
            done=bool(last and done),
            action=action,
            action_probs=log_probs,
            action_mask=mask,
            prev_action=np.zeros(len(branches), np.int32),
            interrupted=bool(last and interrupted),
            memory=None,
            group_status=[],
            group_reward=0.0,
        ))
    return Trajectory(steps=steps, next_obs=observe(length), next_group_obs=[], agent_id=agent_id,
                      behavior_id=BEHAVIOR_ID)


def assert_same_state(loaded, saved, path: str = "") -> None:
    """Nested state (dicts, lists, tensors, numbers) equal exactly; the message names the first path that differs."""
    import torch

    if isinstance(saved, dict):
        assert set(loaded) == set(saved), f"{path}: keys {sorted(set(loaded) ^ set(saved), key=str)} differ"
        for key in saved:
            assert_same_state(loaded[key], saved[key], f"{path}/{key}")
    elif isinstance(saved, (list, tuple)):
        assert len(loaded) == len(saved), path
        for i, (a, b) in enumerate(zip(loaded, saved)):
            assert_same_state(a, b, f"{path}[{i}]")
    elif isinstance(saved, torch.Tensor):
        assert torch.equal(loaded.cpu(), saved.cpu()), path
    else:
        assert loaded == saved, path


NONFINITE_PLACES = ("obs", "reward", "next_obs")


def make_nonfinite(traj, where: str) -> str:
    """Put a NaN or inf into ``traj`` (in place) at ``where`` (one of ``NONFINITE_PLACES``: an observation mid-chunk,
    a reward, the observation after the last step); returns the words the drop warning must name."""
    if where == "obs":
        traj.steps[4].obs[0][1] = np.nan
        return "observation 0 holds"
    if where == "reward":
        traj.steps[2] = traj.steps[2]._replace(reward=float("inf"))
        return "reward holds"
    if where == "next_obs":
        traj.next_obs[0][0] = np.inf
        return "observation 0 (after the last step) holds"
    raise ValueError(f"where={where!r}: expected one of {NONFINITE_PLACES}")
