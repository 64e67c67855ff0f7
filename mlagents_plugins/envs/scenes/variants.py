"""Named variants of the base scenes: what breaks defaults tuned on one set of scenes.

A default that learns only on the scenes it was tuned on says little about a user's game.  Each variant below
changes one or two things that commonly differ between games - reward scale, success-only reward, episode
length, observation noise, extra observation and action dimensions the task ignores, image size and channel
count - on top of an existing scene's dynamics.  Every variant is a full scene: it has its own behavior name and
threshold, runs in-process (``SceneEnv``, ``train_in_process``) and as a stand-in build (``--scene NAME``).

``split`` divides every scene into a **tuning** set (defaults and shipped configs may be chosen on it; the
base scenes belong here, since every shipped config was tuned on them) and a **validation** set
(only reported on).  docs/scenes.md lists both.

Thresholds are per variant (mean episode reward that counts as solved); ``tests/envs/test_variants.py`` checks
that the scripted expert clears each one and a random policy does not.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Type

import numpy as np

from mlagents_envs.base_env import ActionSpec, ActionTuple, ObservationSpec

from mlagents_plugins.envs.scenes.base import Scene

TUNING = "tuning"
VALIDATION = "validation"


@dataclass(frozen=True)
class VariantSpec:
    name: str  # scene name (``--scene``), lower case
    behavior_name: str  # behavior and build name
    base: str  # the scene whose dynamics it keeps
    split: str  # TUNING or VALIDATION
    threshold: float  # mean episode reward that counts as solved
    reward_scale: float = 1.0  # every reward multiplied by this
    success_reward_only: bool = False  # reward 1 at success and 0 otherwise (sparse)
    max_episode_steps: Optional[int] = None  # decisions before a time-out (None: the base scene's)
    obs_noise_std: float = 0.0  # Gaussian noise added to every vector observation
    distractor_obs: int = 0  # extra vector observation values of uniform noise in [-1, 1]
    ignored_actions: int = 0  # extra continuous actions that do nothing
    image_size: Optional[int] = None  # visual observations resampled (nearest) to this height and width
    image_channels: Optional[int] = None  # 1: luminance; None: the base scene's channels
    camera_size: Optional[int] = None  # observe through the base scene's top-down camera at this size (scenes with ``camera_size``)


VARIANT_SPECS: Tuple[VariantSpec, ...] = (
    # --- tuning ---
    VariantSpec("balance_small_reward", "BalanceSmallReward", "balance", TUNING, threshold=0.5, reward_scale=0.1),
    VariantSpec("branches_sparse", "BranchesSparse", "branches", TUNING, threshold=0.7, success_reward_only=True),
    VariantSpec("camera_gray18", "CameraGray18", "camera", TUNING, threshold=0.6, image_size=18, image_channels=1),
    VariantSpec("reach_continuous_camera24", "ReachContinuousCamera24", "reach_continuous", TUNING, threshold=1.0,
                camera_size=24),
    # --- validation ---
    VariantSpec("balance_big_reward_long", "BalanceBigRewardLong", "balance", VALIDATION, threshold=150.0,
                reward_scale=10.0, max_episode_steps=300),
    VariantSpec("balance_distractors", "BalanceDistractors", "balance", VALIDATION, threshold=5.0,
                distractor_obs=8, ignored_actions=2),
    VariantSpec("switching_noisy", "SwitchingNoisy", "switching", VALIDATION, threshold=2.5, obs_noise_std=0.05),
    VariantSpec("hybrid_sparse", "HybridSparse", "hybrid", VALIDATION, threshold=0.7, success_reward_only=True),
    VariantSpec("branches_short", "BranchesShort", "branches", VALIDATION, threshold=0.6, max_episode_steps=20),
    VariantSpec("camera36", "Camera36", "camera", VALIDATION, threshold=0.6, image_size=36),
    # Where a learned model should pay (issue #15): success-only reward and observation values the task ignores.
    VariantSpec("reach_sparse_distractors", "ReachSparseDistractors", "reach", VALIDATION, threshold=0.8,
                success_reward_only=True, distractor_obs=8),
    # Continuous goal reaching (issue #41): sensor noise on the 8-float vector, and a larger camera image.
    VariantSpec("reach_continuous_noisy", "ReachContinuousNoisy", "reach_continuous", VALIDATION, threshold=1.0,
                obs_noise_std=0.05),
    VariantSpec("reach_continuous_camera32", "ReachContinuousCamera32", "reach_continuous", VALIDATION,
                threshold=1.0, camera_size=32),
)


def make_variant(spec: VariantSpec, base: Type[Scene]) -> Type[Scene]:
    """A ``Scene`` subclass of ``base`` with ``spec``'s changes (see ``VariantSpec``)."""

    if spec.camera_size is not None and not hasattr(base, "camera_size"):
        raise ValueError(f"variant {spec.name}: camera_size={spec.camera_size!r}, but {base.__name__} has no camera")

    class VariantScene(base):  # type: ignore[valid-type, misc]
        behavior_name = spec.behavior_name
        success_threshold = spec.threshold
        default_max_episode_steps = spec.max_episode_steps or base.default_max_episode_steps
        variant = spec
        if spec.camera_size is not None:
            camera_size = spec.camera_size

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # A generator of its own, so the base scene's draws (layouts, dynamics) stay those of its seed.
            self._noise_rng = np.random.default_rng([self.seed, 0x5EED])

        @property
        def observation_specs(self) -> List[ObservationSpec]:
            out = []
            for obs in base.observation_specs.fget(self):  # type: ignore[attr-defined]
                shape = tuple(obs.shape)
                if len(shape) == 1:
                    shape = (shape[0] + spec.distractor_obs,)
                elif len(shape) == 3:
                    c, h, w = shape
                    size = spec.image_size
                    shape = (spec.image_channels or c, size or h, size or w)
                out.append(ObservationSpec(shape, obs.dimension_property, obs.observation_type, obs.name))
            return out

        @property
        def action_spec(self) -> ActionSpec:
            a = base.action_spec.fget(self)  # type: ignore[attr-defined]
            return ActionSpec(a.continuous_size + spec.ignored_actions, a.discrete_branches)

        def _observe(self) -> List[np.ndarray]:
            rng = self._noise_rng
            out = []
            for o in super()._observe():
                if o.ndim == 2:
                    if spec.obs_noise_std:
                        o = o + rng.normal(0.0, spec.obs_noise_std, o.shape)
                    if spec.distractor_obs:
                        o = np.concatenate([o, rng.uniform(-1.0, 1.0, (o.shape[0], spec.distractor_obs))], axis=1)
                elif o.ndim == 4:
                    o = _resample_image(o, spec.image_size, spec.image_channels)
                out.append(o.astype(np.float32))
            return out

        def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
            n_used = continuous.shape[1] - spec.ignored_actions
            reward, success, failure = super()._tick(continuous[:, :n_used], discrete)
            if spec.success_reward_only:
                reward = np.where(success, 1.0, 0.0)
            return reward * spec.reward_scale, success, failure

        def heuristic(self) -> ActionTuple:
            act = super().heuristic()
            if spec.ignored_actions:
                cont = act.continuous
                act = ActionTuple(
                    continuous=np.concatenate([cont, np.zeros((cont.shape[0], spec.ignored_actions), cont.dtype)], 1),
                    discrete=act.discrete,
                )
            return act

    VariantScene.__name__ = VariantScene.__qualname__ = f"{spec.behavior_name}Scene"
    return VariantScene


def _resample_image(images: np.ndarray, size: Optional[int], channels: Optional[int]) -> np.ndarray:
    """``images[n, C, H, W]`` -> nearest-neighbour ``size`` x ``size``, and luminance when ``channels`` is 1."""
    if channels == 1 and images.shape[1] == 3:
        # 8-bit luminance, as a grayscale camera renders it (and so PNG on the wire keeps it exactly)
        images = np.round(255.0 * (0.299 * images[:, 0:1] + 0.587 * images[:, 1:2] + 0.114 * images[:, 2:3])) / 255.0
    if size is not None:
        h, w = images.shape[2:]
        rows = (np.arange(size) * h) // size
        cols = (np.arange(size) * w) // size
        images = images[:, :, rows][:, :, :, cols]
    return images


def build_variants(base_scenes: Dict[str, Type[Scene]]) -> Dict[str, Type[Scene]]:
    for spec in VARIANT_SPECS:
        if spec.split not in (TUNING, VALIDATION):
            raise ValueError(f"variant {spec.name}: split={spec.split!r}; allowed: {TUNING}, {VALIDATION}")
    return {spec.name: make_variant(spec, base_scenes[spec.base]) for spec in VARIANT_SPECS}
