"""A Gymnasium task as a stand-in scene: one behavior whose agents are N copies of the task (docs/gym.md).

``gym_scene("HalfCheetah-v5")`` returns a ``Scene`` subclass, so everything built on the scene contract runs it
unchanged: the in-process ``SceneEnv`` (``gym_env(...)``), the gRPC stand-in build that ``mlagents-learn --env=...``
trains on (``mlagents-plugins-scene --gym-env HalfCheetah-v5 --write-builds DIR``), the harness.

What the adapter does, per copy (one agent slot per copy; ``num_areas`` copies):

* observation: the task's ``Box`` observation flattened to one float32 vector (``VectorSensor``);
* actions: a ``Box`` action becomes that many continuous actions in [-1, 1] (clipped), scaled linearly to the
  task's bounds (-1 -> low, 1 -> high); a ``Discrete(n)`` action becomes one branch of size ``n`` (``start``
  added back);
* episode ends: ``terminated`` is a true terminal (no bootstrap); ``truncated`` (the task's time limit) is an
  interruption (ML-Agents' ``interrupted`` / ``max_step_reached``: the trainer bootstraps), as ML-Agents treats
  ``max_step``; a copy that ends is reset at once, as a Unity agent after ``EndEpisode()``;
* seeds: at every RESET copy ``i`` is reset with seed ``seed + i`` (its action space seeded the same); the
  episode starts after that continue that copy's own generator;
* ``decision_period`` > 1 repeats the action that many task steps (rewards summed, stopping at an episode end).

Gymnasium is an optional extra: without it every entry point raises ``GymExtraMissing`` naming
``pip install 'mlagents-plugins[gym]'``.
"""
import re
from typing import Any, ClassVar, Dict, List, Optional, Tuple, Type

import numpy as np

from mlagents_envs.base_env import ActionSpec, ActionTuple, ObservationSpec

from mlagents_plugins.envs.scenes.base import Scene, SceneStep, clip_unit, vector_observation

GYM_EXTRA = "gym"
INSTALL_HINT = f"pip install 'mlagents-plugins[{GYM_EXTRA}]'"


class GymExtraMissing(ImportError):
    """Gymnasium (the optional ``gym`` extra) is not installed."""


def import_gymnasium():
    """The ``gymnasium`` module, or ``GymExtraMissing`` naming the extra that installs it."""
    try:
        import gymnasium
    except ImportError as err:
        raise GymExtraMissing(
            f"Gymnasium tasks need the optional extra '{GYM_EXTRA}' (gymnasium[mujoco]): {INSTALL_HINT} "
            f"(or pip install -r requirements/gym.txt); import failed: {err}"
        ) from err
    return gymnasium


def behavior_name_of(env_id: str) -> str:
    """The ML-Agents behavior name of a task id: the part after the last ``/``, without the ``-vN`` version,
    letters and digits only (``HalfCheetah-v5`` -> ``HalfCheetah``, ``ALE/Pong-v5`` -> ``Pong``)."""
    base = str(env_id).rsplit("/", 1)[-1]
    base = re.sub(r"-v\d+$", "", base)
    name = re.sub(r"[^A-Za-z0-9]", "", base)
    if not name:
        raise ValueError(f"gym env id {env_id!r} gives no behavior name (needs letters or digits)")
    return name


class ActionScaler:
    """[-1, 1] actions <-> a ``Box`` action space's bounds (what the build applies; the bench's evaluation too)."""

    def __init__(self, low: np.ndarray, high: np.ndarray, env_id: str = "?"):
        low = np.asarray(low, dtype=np.float64).ravel()
        high = np.asarray(high, dtype=np.float64).ravel()
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError(
                f"gym env {env_id!r}: its Box action space has infinite bounds (low={low.tolist()}, "
                f"high={high.tolist()}); actions in [-1, 1] can only be scaled to finite bounds"
            )
        if np.any(high < low):
            raise ValueError(f"gym env {env_id!r}: action bound high < low ({high.tolist()} < {low.tolist()})")
        self.low, self.high = low, high
        self._span = high - low

    def to_task(self, action: np.ndarray) -> np.ndarray:
        """[-1, 1] (clipped; NaN -> 0) -> the task's bounds, rows = agents."""
        a = clip_unit(action)
        return self.low + (a + 1.0) * 0.5 * self._span


def _make(gym, env_id: str, max_episode_steps: Optional[int], make_kwargs: Dict[str, Any]):
    kwargs = dict(make_kwargs)
    if max_episode_steps is not None:
        kwargs["max_episode_steps"] = int(max_episode_steps)
    return gym.make(env_id, **kwargs)


def describe_spaces(env_id: str, **make_kwargs: Any) -> Tuple[int, ActionSpec]:
    """(observation size, ActionSpec) of a task, or a clear ValueError for spaces the adapter does not take."""
    gym = import_gymnasium()
    env = gym.make(env_id, **make_kwargs)
    try:
        return _spaces(gym, env, env_id)
    finally:
        env.close()


def _spaces(gym, env, env_id: str) -> Tuple[int, ActionSpec]:
    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(obs_space, gym.spaces.Box):
        raise ValueError(f"gym env {env_id!r}: observation space {obs_space} is not a Box; allowed: Box")
    if isinstance(act_space, gym.spaces.Box):
        ActionScaler(act_space.low, act_space.high, env_id)  # refuses infinite bounds
        return int(np.prod(obs_space.shape)), ActionSpec(int(np.prod(act_space.shape)), ())
    if isinstance(act_space, gym.spaces.Discrete):
        return int(np.prod(obs_space.shape)), ActionSpec(0, (int(act_space.n),))
    raise ValueError(f"gym env {env_id!r}: action space {act_space} is neither Box nor Discrete; allowed: Box, Discrete")


class GymScene(Scene):
    """N copies of one Gymnasium task (``gym_scene`` makes the subclass for a task id)."""

    env_id: ClassVar[str] = ""
    make_kwargs: ClassVar[Dict[str, Any]] = {}
    agents_per_area = 1
    #: no goal to reach: the academy sends no Scene/Success Rate or Scene/Difficulty for these episodes
    reports_scene_stats: ClassVar[bool] = False

    def __init__(self, num_areas: int = 1, seed: int = 0, max_episode_steps: Optional[int] = None,
                 decision_period: int = 1, parameters=None):
        if not self.env_id:
            raise TypeError("GymScene is abstract: use gym_scene(env_id) for a task's class")
        gym = import_gymnasium()
        self._envs = [_make(gym, self.env_id, max_episode_steps, self.make_kwargs) for _ in range(int(num_areas))]
        self._obs_size, self._action_spec = _spaces(gym, self._envs[0], self.env_id)
        space = self._envs[0].action_space
        self._discrete_start = int(getattr(space, "start", 0)) if self._action_spec.discrete_size else 0
        self._scaler = None if self._action_spec.discrete_size else ActionScaler(space.low, space.high, self.env_id)
        limit = max_episode_steps or getattr(self._envs[0].spec, "max_episode_steps", None)
        # Scene's own counter is unused (the task's TimeLimit decides); it only needs a valid value.
        super().__init__(num_areas=num_areas, seed=seed, max_episode_steps=int(limit or 1),
                         decision_period=decision_period, parameters=parameters)

    @property
    def observation_specs(self) -> List[ObservationSpec]:
        return [vector_observation(self._obs_size)]

    @property
    def action_spec(self) -> ActionSpec:
        return self._action_spec

    @property
    def envs(self) -> list:
        """The task copies (one per slot) - for tests and tools."""
        return self._envs

    def _allocate(self, n: int) -> None:
        self._obs = np.zeros((n, self._obs_size), dtype=np.float32)
        self._seeded_slots = [False] * n

    def _reset_one(self, slot: int) -> None:
        env = self._envs[slot]
        if not self._seeded_slots[slot]:
            obs, _ = env.reset(seed=self.seed + slot)
            env.action_space.seed(self.seed + slot)
            self._seeded_slots[slot] = True
        else:
            obs, _ = env.reset()
        self._obs[slot] = np.asarray(obs, dtype=np.float32).ravel()

    def reset(self) -> None:
        """RESET: every copy restarts from its seed (``seed + i``), so the episodes after a RESET are reproducible."""
        self._seeded_slots = [False] * self.num_agents
        super().reset()

    def _reset_agents(self, idx: np.ndarray) -> None:
        for slot in idx:
            self._reset_one(int(slot))

    def _observe(self) -> List[np.ndarray]:
        return [self._obs]

    def task_actions(self, action: ActionTuple) -> list:
        """One action per slot as the task takes it (scaled Box values or Discrete ints)."""
        cont, disc = self._sanitize(action)
        if self._scaler is not None:
            scaled = self._scaler.to_task(cont)
            shape = self._envs[0].action_space.shape
            dtype = self._envs[0].action_space.dtype
            return [scaled[i].reshape(shape).astype(dtype) for i in range(self.num_agents)]
        return [int(disc[i, 0]) + self._discrete_start for i in range(self.num_agents)]

    def step(self, action: ActionTuple) -> SceneStep:
        n = self.num_agents
        actions = self.task_actions(action)
        reward = np.zeros(n, dtype=np.float64)
        done = np.zeros(n, dtype=bool)
        interrupted = np.zeros(n, dtype=bool)
        terminal_obs = np.zeros_like(self._obs)
        for slot, env in enumerate(self._envs):
            terminated = truncated = False
            for _ in range(self.decision_period):
                obs, r, terminated, truncated, _ = env.step(actions[slot])
                reward[slot] += float(r)
                if terminated or truncated:
                    break
            terminal_obs[slot] = np.asarray(obs, dtype=np.float32).ravel()
            self._obs[slot] = terminal_obs[slot]
            done[slot] = bool(terminated or truncated)
            interrupted[slot] = bool(truncated and not terminated)
        self.episode_step += 1
        reward32 = reward.astype(np.float32)
        self.episode_return += reward32
        ended_return = self.episode_return.copy()
        self._begin_episodes(np.nonzero(done)[0])
        return SceneStep(reward32, done, np.zeros(n, dtype=bool), interrupted, [terminal_obs], ended_return)

    def close(self) -> None:
        for env in self._envs:
            env.close()


_CLASSES: Dict[Tuple[str, Tuple[Tuple[str, Any], ...]], Type[GymScene]] = {}


def gym_scene(env_id: str, **make_kwargs: Any) -> Type[GymScene]:
    """The ``Scene`` class of a Gymnasium task (made once per id and keyword set); checks the task's spaces now,
    so a task the adapter cannot take fails here with a clear message."""
    key = (str(env_id), tuple(sorted(make_kwargs.items())))
    if key not in _CLASSES:
        describe_spaces(env_id, **make_kwargs)
        name = behavior_name_of(env_id)
        _CLASSES[key] = type(f"Gym{name}Scene", (GymScene,), {
            "env_id": str(env_id), "make_kwargs": dict(make_kwargs), "behavior_name": name,
            "__doc__": f"{env_id} as a stand-in scene (gym_env.gym_scene)."})
    return _CLASSES[key]


def gym_env(env_id: str, num_copies: int = 1, seed: int = 0, max_episode_steps: Optional[int] = None,
            side_channels=None, **make_kwargs: Any):
    """An in-process ``BaseEnv`` (``SceneEnv``) of ``num_copies`` copies of a Gymnasium task, one behavior."""
    from mlagents_plugins.envs.inprocess import SceneEnv

    return SceneEnv(gym_scene(env_id, **make_kwargs), num_areas=num_copies, seed=seed,
                    max_episode_steps=max_episode_steps, side_channels=side_channels)
