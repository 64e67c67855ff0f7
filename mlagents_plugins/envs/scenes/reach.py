"""Reach: a grid reach steered by two discrete branches of 3 and no action masks.

A 9x9 grid (cells -4..4 on each axis) with an agent and a target at Chebyshev distance >= 2.
Branch 0 moves along x, branch 1 along y, each with 0 = stay, 1 = minus one cell, 2 = plus one cell, so a
diagonal step needs both branches to agree with the goal.  Nothing is masked: a step off the grid fails the
episode (-1), which a policy must learn from the observation alone.  Reaching the target is a success (+1).
Shaping: +0.1 x (decrease in Chebyshev distance to the target); -0.01 per decision.  Time-out after 30
decisions.  ``difficulty`` widens the start distance range (2..2+4d cells, clipped to the grid).

Observation (6): agent x/y and (target - agent) x/y (scaled by 1/4), plus the distance to the grid edge
along the direction the target lies in, x and y (scaled by 1/8).
"""
from typing import List

import numpy as np

from mlagents_envs.base_env import ActionTuple

from mlagents_plugins.envs.scenes.base import Scene

HALF = 4  # cells -HALF..HALF on each axis
STEP = np.array([0, -1, 1], dtype=np.int64)  # action index -> cell delta, per branch
SHAPING = 0.1
STEP_PENALTY = 0.01


class ReachScene(Scene):
    behavior_name = "Reach"
    # The expert scores ~1.3 (+1, plus 0.1 per cell of the ~4-cell start distance, minus step penalties);
    # a uniform random policy mostly walks off the grid (~ -0.9).
    success_threshold = 1.2
    default_max_episode_steps = 30
    vector_size = 6
    actions = (0, (3, 3))

    def _allocate(self, n: int) -> None:
        self.pos = np.zeros((n, 2), dtype=np.int64)
        self.target = np.zeros((n, 2), dtype=np.int64)

    def _reset_agents(self, idx: np.ndarray) -> None:
        for i in idx:
            reach = 2 + int(round(4 * self.difficulty[i]))
            while True:
                pos = self.rng.integers(-HALF, HALF + 1, 2)
                target = self.rng.integers(-HALF, HALF + 1, 2)
                if 2 <= np.abs(target - pos).max() <= reach:
                    break
            self.pos[i], self.target[i] = pos, target

    def _distance(self) -> np.ndarray:
        return np.abs(self.target - self.pos).max(axis=1)

    def _observe(self) -> List[np.ndarray]:
        delta = self.target - self.pos
        toward = np.where(delta >= 0, 1, -1)
        edge = HALF - toward * self.pos  # cells left to the edge in the target's direction
        obs = np.concatenate([self.pos / HALF, delta / HALF, edge / (2 * HALF)], axis=1)
        return [obs.astype(np.float32)]

    def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
        before = self._distance()
        self.pos = self.pos + STEP[discrete]
        off_grid = np.any(np.abs(self.pos) > HALF, axis=1)
        self.pos = np.clip(self.pos, -HALF, HALF)
        after = self._distance()
        success = ~off_grid & (after == 0)
        reward = SHAPING * (before - after) - STEP_PENALTY
        reward = reward + np.where(success, 1.0, 0.0) + np.where(off_grid, -1.0, 0.0)
        return reward, success, off_grid

    def heuristic(self) -> ActionTuple:
        delta = np.sign(self.target - self.pos)  # -1, 0, 1 per axis
        act = np.where(delta < 0, 1, np.where(delta > 0, 2, 0))
        return ActionTuple(discrete=act.astype(np.int32))
