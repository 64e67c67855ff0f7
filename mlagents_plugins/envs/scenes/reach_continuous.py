"""Reach continuous: steer a body with two continuous accelerations to random targets (goal reaching).

A body with inertia (``vel = DRAG * vel + ACCEL * a`` per tick, ``pos += vel``) moves in the arena [-1, 1]^2 and
must come within ``REACH_RADIUS`` of its target; reaching it pays the success bonus +1 and draws a new target (at
least ``_min_distance(difficulty)`` away), so an episode is a run of targets.  8 agents per area.
Reward: shaping ``SHAPING`` x (decrease in distance to the target), +1 per target reached, ``-FAIL_PENALTY`` on
leaving the arena (failure, the episode ends).  Time-out after 60 decisions; a time-out after at least one target
counts as a success.  ``difficulty`` widens the distance to each new target.

The targets follow one another instead of ending the episode at the first one: an episode that ended at the goal
would end SAC's entropy bonus with it (alpha starts at 1 with the built-in defaults, far above rewards of a few
hundredths per decision).  With the episode ending at the goal, fast_sac with the defaults benchmark's config
reached no success rate above 0.27 in 12k steps in any of 10 runs over four reward designs (with and without a
step cost, walls instead of a failure); docs/scenes.md.

Observation (8): position x/y, velocity x/y (scaled by 1 / ``MAX_SPEED``, so within [-1, 1]), target x/y,
target - position x/y.  Action: continuous 2, the acceleration in [-1, 1].

Camera (``camera_size`` set, as the camera variants do): a ``3 x size x size`` top-down image of the arena and its
margin (``VIEW_HALF`` around the centre) with the body in the red channel and the target in the green one, each a
soft disc so sub-pixel positions change the pixels, the floor dark and everything outside the arena grey, in 8-bit
steps like a Unity CameraSensor's PNG; plus a vector of 2, the velocity (an image shows no velocity).  The target
and the position are only in the image.
"""
from typing import ClassVar, List, Optional

import numpy as np

from mlagents_envs.base_env import ActionTuple, ObservationSpec

from mlagents_plugins.envs.scenes.base import Scene, vector_observation, visual_observation

DRAG = 0.8  # velocity kept per tick
ACCEL = 0.03  # velocity added per tick by an action of 1
MAX_SPEED = ACCEL / (1.0 - DRAG)  # terminal speed per axis under a held action of +-1
ARENA = 1.0  # half-width of the arena; leaving it fails the episode
REACH_RADIUS = 0.15  # distance to the target that counts as reaching it
SHAPING = 1.0
FAIL_PENALTY = 0.5
START_HALF = 0.6  # start positions uniform in [-START_HALF, START_HALF]^2
TARGET_HALF = 0.8  # targets uniform in [-TARGET_HALF, TARGET_HALF]^2
VIEW_HALF = 1.1  # the camera sees [-VIEW_HALF, VIEW_HALF]^2
FLOOR = 0.15
OUTSIDE = 0.5
DISC_RADIUS = 0.09  # world units; a disc's pixels fade to 0 over one more pixel


def _min_distance(difficulty: np.ndarray) -> np.ndarray:
    return 0.2 + 0.4 * difficulty


class ReachContinuousScene(Scene):
    behavior_name = "ReachContinuous"
    # Measured (seed 0, 2 areas): the PD expert ~8.8 (4-5 targets per episode), uniform random ~ -0.40; fast_sac with
    # the defaults benchmark's drop-in config (1 area = 8 agents) passed 1.0 at 14.4k steps and ended at 1.66 at 24k.
    success_threshold = 1.0
    agents_per_area = 8
    default_max_episode_steps = 60
    vector_size = 8
    actions = (2, ())
    #: height and width of the top-down camera image; None: the 8-float vector observation (set by variants)
    camera_size: ClassVar[Optional[int]] = None

    @property
    def observation_specs(self) -> List[ObservationSpec]:
        if self.camera_size is None:
            return [vector_observation(self.vector_size)]
        size = int(self.camera_size)
        visual = visual_observation(3, size, size)
        return [visual, vector_observation(2)]

    def _allocate(self, n: int) -> None:
        self.pos = np.zeros((n, 2))
        self.vel = np.zeros((n, 2))
        self.target = np.zeros((n, 2))
        self.reached = np.zeros(n, dtype=np.int64)

    def _reset_agents(self, idx: np.ndarray) -> None:
        k = len(idx)
        self.pos[idx] = self.rng.uniform(-START_HALF, START_HALF, (k, 2))
        self.vel[idx] = 0.0
        self.reached[idx] = 0
        self.target[idx] = self._draw_targets(idx)

    def _draw_targets(self, idx: np.ndarray) -> np.ndarray:
        """New targets for slots ``idx``, at least ``_min_distance(difficulty)`` from the body."""
        k = len(idx)
        target = self.rng.uniform(-TARGET_HALF, TARGET_HALF, (k, 2))
        # Redraw targets that start too close: a fixed number of rounds keeps the draws per episode bounded,
        # and a last too-close one is pushed out along its direction.
        need = _min_distance(self.difficulty[idx])
        for _ in range(4):
            close = np.linalg.norm(target - self.pos[idx], axis=1) < need
            if not close.any():
                break
            target[close] = self.rng.uniform(-TARGET_HALF, TARGET_HALF, (int(close.sum()), 2))
        delta = target - self.pos[idx]
        dist = np.linalg.norm(delta, axis=1)
        short = dist < need
        if short.any():
            direction = np.where(dist[:, None] > 1e-9, delta / np.maximum(dist, 1e-9)[:, None], [1.0, 0.0])
            target[short] = np.clip(self.pos[idx][short] + need[short, None] * direction[short], -ARENA, ARENA)
        return target

    def _observe(self) -> List[np.ndarray]:
        velocity = self.vel / MAX_SPEED
        if self.camera_size is None:
            obs = np.concatenate([self.pos, velocity, self.target, self.target - self.pos], axis=1)
            return [obs.astype(np.float32)]
        return [self.render(int(self.camera_size)), velocity.astype(np.float32)]

    def render(self, size: int) -> np.ndarray:
        """(n, 3, size, size) float32 images in 1/255 steps; row 0 is the top (largest y), column 0 the left."""
        centres = (np.arange(size) + 0.5) / size * (2 * VIEW_HALF) - VIEW_HALF  # pixel centres, world units
        px = 2 * VIEW_HALF / size
        xs = centres[None, None, :]  # columns: x
        ys = centres[::-1][None, :, None]  # rows: y, top first
        inside = (np.abs(xs) <= ARENA) & (np.abs(ys) <= ARENA)
        n = self.num_agents
        image = np.empty((n, 3, size, size))
        image[:] = np.where(inside, FLOOR, OUTSIDE)[None, None]
        for channel, where in ((0, self.pos), (1, self.target)):
            dist = np.sqrt((xs - where[:, 0, None, None]) ** 2 + (ys - where[:, 1, None, None]) ** 2)
            disc = np.clip(1.0 - (dist - DISC_RADIUS) / px, 0.0, 1.0)
            image[:, channel] = np.maximum(image[:, channel], disc)
        return (np.round(image * 255.0) / 255.0).astype(np.float32)

    def _distance(self) -> np.ndarray:
        return np.linalg.norm(self.target - self.pos, axis=1)

    def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
        before = self._distance()
        self.vel = DRAG * self.vel + ACCEL * continuous
        self.pos = self.pos + self.vel
        after = self._distance()
        reached = after <= REACH_RADIUS
        failure = np.any(np.abs(self.pos) > ARENA, axis=1) & ~reached
        reward = SHAPING * (before - after) + reached - FAIL_PENALTY * failure
        self.reached += reached
        idx = np.nonzero(reached)[0]
        if idx.size:
            self.target[idx] = self._draw_targets(idx)
        return reward, np.zeros_like(failure), failure

    def _success_on_timeout(self) -> np.ndarray:
        return self.reached > 0

    def heuristic(self) -> ActionTuple:
        # PD controller: accelerate towards the target, brake in proportion to the velocity.
        act = np.clip(4.0 * (self.target - self.pos) - 16.0 * self.vel, -1.0, 1.0)
        return ActionTuple(continuous=act.astype(np.float32))
