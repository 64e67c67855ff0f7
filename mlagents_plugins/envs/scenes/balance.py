"""Balance: keep a ball on a tilting plate and roll it to a target (the 3DBall role).

Per agent: the plate tilt follows the commanded tilt with a first-order lag (inertia), the ball rolls
with acceleration ``G_EFF * sin(tilt)`` and a little rolling friction.  The ball falling off the plate
(|x| or |z| > 1) is a failure (-1).  Surviving to the time-out counts as a success.

Observation (8): tilt x/z (scaled to [-1, 1]), ball position x/z, ball velocity x/z, target x/z.
Action: continuous 2, the commanded tilt about x and z in [-1, 1] (x MAX_TILT radians).
Reward per decision: ``0.1 * (1 - min(|ball - target|, 1))`` while on the plate, -1 on falling.
``difficulty`` widens the initial ball offset/velocity and the target range.
"""
from typing import List

import numpy as np

from mlagents_envs.base_env import ActionTuple

from mlagents_plugins.envs.scenes.base import Scene

MAX_TILT = 0.35  # rad, tilt reached with action +-1
TILT_LAG = 0.5  # fraction of the gap to the commanded tilt closed per tick
G_EFF = 7.0  # m/s^2, 5/7 g for a rolling ball
DT = 0.1  # s per tick
FRICTION = 0.98  # velocity kept per tick
HALF_SIZE = 1.0  # plate half-width (m)


class BalanceScene(Scene):
    behavior_name = "Balance"
    # Max return is ~10 (100 decisions x 0.1).  Measured (seed 0, 2 areas): scripted controller ~9.1,
    # random policy ~ -0.1, PPO (docs/scenes.md config) ~5 after ~20k steps and ~6 after 30k.
    success_threshold = 5.0
    default_max_episode_steps = 100
    vector_size = 8
    actions = (2, ())

    def _allocate(self, n: int) -> None:
        self.tilt = np.zeros((n, 2))
        self.pos = np.zeros((n, 2))
        self.vel = np.zeros((n, 2))
        self.target = np.zeros((n, 2))

    def _reset_agents(self, idx: np.ndarray) -> None:
        d = self.difficulty[idx][:, None]
        k = len(idx)
        self.tilt[idx] = 0.0
        self.pos[idx] = self.rng.uniform(-1, 1, (k, 2)) * (0.15 + 0.45 * d)
        self.vel[idx] = self.rng.uniform(-1, 1, (k, 2)) * (0.05 + 0.35 * d)
        self.target[idx] = self.rng.uniform(-1, 1, (k, 2)) * (0.5 * d)

    def _observe(self) -> List[np.ndarray]:
        obs = np.concatenate([self.tilt / MAX_TILT, self.pos, self.vel, self.target], axis=1)
        return [obs.astype(np.float32)]

    def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
        self.tilt += TILT_LAG * (MAX_TILT * continuous - self.tilt)
        self.vel = FRICTION * (self.vel + DT * G_EFF * np.sin(self.tilt))
        self.pos = self.pos + DT * self.vel
        fell = np.any(np.abs(self.pos) > HALF_SIZE, axis=1)
        dist = np.linalg.norm(self.pos - self.target, axis=1)
        reward = np.where(fell, -1.0, 0.1 * (1.0 - np.minimum(dist, 1.0)))
        return reward, np.zeros_like(fell), fell

    def _success_on_timeout(self) -> np.ndarray:
        return np.ones(self.num_agents, dtype=bool)

    def heuristic(self) -> ActionTuple:
        # PD controller on the ball: desired acceleration -> desired tilt -> action.
        acc = -2.0 * (self.pos - self.target) - 2.5 * self.vel
        tilt = np.arcsin(np.clip(acc / G_EFF, -1, 1))
        return ActionTuple(continuous=np.clip(tilt / MAX_TILT, -1, 1).astype(np.float32))
