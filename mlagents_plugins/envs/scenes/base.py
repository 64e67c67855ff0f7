"""The scene contract shared by the five stand-in scenes.

A scene is pure numpy: it owns ``num_agents = agents_per_area * num_areas`` agents whose state lives in
arrays, one row per agent *slot*.  ``step`` advances every agent by one decision (``decision_period``
physics ticks with the action held, like Unity's DecisionRequester), reports rewards and episode ends,
and immediately starts a new episode in every slot that ended - the same thing a Unity agent does after
``EndEpisode()``.  Agent ids, side channels and wire formats are *not* the scene's business (see
``academy.py``), so the in-process env and the gRPC stand-in drive exactly the same code.

Determinism: one ``numpy.random.Generator`` seeded from ``seed`` drives the whole scene, so equal seeds,
parameters and actions give equal trajectories.
"""
from typing import ClassVar, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from mlagents_envs.base_env import ActionSpec, ActionTuple, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.envs.params import ParameterStore

#: Name of the environment parameter every scene reads at each episode start (clipped to [0, 1]).
DIFFICULTY = "difficulty"


def clip_unit(values) -> np.ndarray:
    """``np.clip(np.nan_to_num(values as float64), -1, 1)`` (a new array: NaN -> 0, +-inf -> +-1), the same values
    with ``nan_to_num`` only when something is not finite and ``clip`` as two in-place ufuncs: a build applies this
    to every step's actions, where numpy's generic paths cost more than the arithmetic (issue #55)."""
    out = np.array(values, dtype=np.float64)
    if not np.isfinite(out).all():
        out = np.nan_to_num(out)
    np.maximum(out, -1.0, out=out)
    np.minimum(out, 1.0, out=out)
    return out


def vector_observation(size: int) -> ObservationSpec:
    """The spec of a flat ``size``-float vector observation, as Unity's VectorSensor sends it."""
    return ObservationSpec((size,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "VectorSensor")


def visual_observation(channels: int, height: int, width: int) -> ObservationSpec:
    """The spec of a camera image: CHW, as Unity's ObservationSpec.Visual(channels, height, width) since ML-Agents 2.0
    and as mlagents' rpc_utils decodes PNGs; height and width are translation-equivariant dimensions."""
    return ObservationSpec(
        (channels, height, width),
        (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
         DimensionProperty.TRANSLATIONAL_EQUIVARIANCE),
        ObservationType.DEFAULT,
        "CameraSensor",
    )


class SceneStep(NamedTuple):
    """What one decision produced, per slot (arrays of length ``num_agents``)."""

    reward: np.ndarray  # float32, reward earned during this decision (all ticks of the period summed)
    done: np.ndarray  # bool, the episode ended at this decision (success, failure or time-out)
    success: np.ndarray  # bool, ended by reaching the goal (scene-specific, see each scene)
    interrupted: np.ndarray  # bool, ended only because max_episode_steps was reached
    terminal_obs: List[np.ndarray]  # observations at the end of the decision, before any reset
    episode_return: np.ndarray  # float64, cumulative reward of the episode that just ended (done rows)


class Scene:
    """Base class; subclasses implement the ``_`` methods and the class constants."""

    behavior_name: ClassVar[str] = ""
    #: mean episode reward that counts as solved at the default difficulty
    success_threshold: ClassVar[float] = 0.0
    agents_per_area: ClassVar[int] = 4
    default_max_episode_steps: ClassVar[int] = 100
    #: parameters read from EnvironmentParametersChannel at every episode start, with defaults
    parameter_defaults: ClassVar[Dict[str, float]] = {DIFFICULTY: 1.0}
    #: whether every episode end sends Scene/Success Rate and Scene/Difficulty (tasks without a goal, such as
    #: Gymnasium's, send neither)
    reports_scene_stats: ClassVar[bool] = True

    def __init__(
        self,
        num_areas: int = 1,
        seed: int = 0,
        max_episode_steps: Optional[int] = None,
        decision_period: int = 1,
        parameters: Optional[ParameterStore] = None,
    ):
        for name, value, low in (("num_areas", num_areas, 1), ("decision_period", decision_period, 1)):
            if not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{type(self).__name__}: {name}={value!r} is invalid; must be an integer >= {low}")
        if max_episode_steps is not None and (
            not isinstance(max_episode_steps, (int, np.integer)) or max_episode_steps < 1
        ):
            raise ValueError(
                f"{type(self).__name__}: max_episode_steps={max_episode_steps!r} is invalid; "
                "must be None or an integer >= 1"
            )
        self.num_areas = int(num_areas)
        self.num_agents = self.agents_per_area * self.num_areas
        self.seed = int(seed)
        self.decision_period = int(decision_period)
        self.max_episode_steps = int(max_episode_steps or self.default_max_episode_steps)
        self.parameters = parameters if parameters is not None else ParameterStore()
        self.rng = np.random.default_rng(self.seed)
        n = self.num_agents
        self.episode_step = np.zeros(n, dtype=np.int64)
        self.episode_return = np.zeros(n, dtype=np.float64)
        self.difficulty = np.zeros(n, dtype=np.float64)
        self._allocate(n)
        self.reset()

    # ----- subclass API -------------------------------------------------------------------------
    #: size of the one flat vector observation of the default ``observation_specs`` (scenes with other
    #: observations override the property)
    vector_size: ClassVar[int] = 0
    #: ``(continuous actions, discrete branches)`` of the default ``action_spec``
    actions: ClassVar[Tuple[int, Tuple[int, ...]]] = (0, ())

    @property
    def observation_specs(self) -> List[ObservationSpec]:
        if not self.vector_size:
            raise NotImplementedError(f"{type(self).__name__} sets neither vector_size nor observation_specs")
        return [vector_observation(self.vector_size)]

    @property
    def action_spec(self) -> ActionSpec:
        return ActionSpec(*self.actions)

    def _allocate(self, n: int) -> None:
        """Create the state arrays for ``n`` slots."""
        raise NotImplementedError

    def _reset_agents(self, idx: np.ndarray) -> None:
        """Start a new episode in slots ``idx`` (``self.difficulty[idx]`` is already drawn)."""
        raise NotImplementedError

    def _observe(self) -> List[np.ndarray]:
        """Observations of every slot, one float32 array per ObservationSpec, leading dim num_agents."""
        raise NotImplementedError

    def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
        """One physics tick for all slots -> (reward, success, failure) arrays."""
        raise NotImplementedError

    def action_mask(self) -> Optional[List[np.ndarray]]:
        """Per discrete branch a (num_agents, branch_size) bool array, True = action not allowed."""
        return None

    def heuristic(self) -> ActionTuple:
        """The scripted expert's action for every slot (reads the true scene state, like Unity's
        ``Heuristic()``); used to record demonstrations and as a sanity bound for thresholds."""
        raise NotImplementedError

    # ----- driver -------------------------------------------------------------------------------
    def param(self, key: str) -> float:
        return self.parameters.get(key, self.parameter_defaults[key])

    def reset(self) -> None:
        """New episodes in every slot (what a RESET command from Python does)."""
        self._begin_episodes(np.arange(self.num_agents))

    def observe(self) -> List[np.ndarray]:
        return [np.ascontiguousarray(o, dtype=np.float32) for o in self._observe()]

    def _begin_episodes(self, idx: np.ndarray) -> None:
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return
        self.episode_step[idx] = 0
        self.episode_return[idx] = 0.0
        # One read per agent episode, so a sampler gives every episode its own draw (Unity semantics).
        self.difficulty[idx] = [min(1.0, max(0.0, self.param(DIFFICULTY))) for _ in idx]
        self._reset_agents(idx)

    def _sanitize(self, action: ActionTuple):
        spec = self.action_spec
        n = self.num_agents
        if spec.continuous_size and action.continuous is not None and action.continuous.size:
            cont = clip_unit(action.continuous)
        else:
            cont = np.zeros((n, spec.continuous_size), dtype=np.float64)
        if spec.discrete_size and action.discrete is not None and action.discrete.size:
            disc = np.asarray(action.discrete, dtype=np.int64).copy()
            for b, size in enumerate(spec.discrete_branches):
                disc[:, b] = np.clip(disc[:, b], 0, size - 1)
        else:
            disc = np.zeros((n, spec.discrete_size), dtype=np.int64)
        return cont.reshape(n, spec.continuous_size), disc.reshape(n, spec.discrete_size)

    def step(self, action: ActionTuple) -> SceneStep:
        """Apply one decision's actions (rows = slots), then restart every slot whose episode ended."""
        cont, disc = self._sanitize(action)
        n = self.num_agents
        reward = np.zeros(n, dtype=np.float64)
        done = np.zeros(n, dtype=bool)
        success = np.zeros(n, dtype=bool)
        terminal_obs: Optional[List[np.ndarray]] = None
        for _ in range(self.decision_period):
            r, s, f = self._tick(cont, disc)
            active = ~done
            reward[active] += r[active]
            ended = active & (s | f)
            if ended.any():
                snap = self.observe()
                if terminal_obs is None:
                    terminal_obs = [o.copy() for o in snap]
                else:
                    for t, o in zip(terminal_obs, snap):
                        t[ended] = o[ended]
                success |= ended & s
                done |= ended
            if done.all():
                break
        self.episode_step += 1
        interrupted = ~done & (self.episode_step >= self.max_episode_steps)
        current = self.observe()
        if terminal_obs is None:
            terminal_obs = current
        else:
            for t, o in zip(terminal_obs, current):
                t[~done] = o[~done]
        done = done | interrupted
        reward = np.nan_to_num(reward).astype(np.float32)
        self.episode_return += reward
        ended_return = self.episode_return.copy()
        success = success | (interrupted & self._success_on_timeout())
        self._begin_episodes(np.nonzero(done)[0])
        return SceneStep(reward, done, success, interrupted, terminal_obs, ended_return)

    def _success_on_timeout(self) -> np.ndarray:
        """Slots whose time-out counts as a success (e.g. surviving the whole episode); default none."""
        return np.zeros(self.num_agents, dtype=bool)
