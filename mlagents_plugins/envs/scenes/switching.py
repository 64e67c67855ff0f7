"""Switching: a thrust-driven puck where changing the action costs reward (action-repetition role).

The puck has inertia (``vel = DRAG * vel + THRUST * a``) and must collect ``TARGETS_TO_WIN`` targets in
turn inside the arena [-1, 1]^2.  Every decision pays ``-switch_cost * mean(|a_t - a_{t-1}|)``, so a
policy that holds its action for several decisions (TAAC-style repetition) beats a jittery one with
the same aim.  ``switch_cost`` is its own environment parameter; by default it is
``0.02 + 0.18 * difficulty``.
Reward: +1 per target collected (within 0.2), shaping +1.0 x (decrease in distance), the switch cost;
leaving the arena (|x| or |y| > 1.2) fails the episode (-1).  Collecting the last target succeeds.
Time-out after 150 decisions.

Observation (8): position x/y, velocity x/y (x 2), target - position x/y, previous action x/y.
Action: continuous 2, thrust in [-1, 1].
"""
from typing import List

import numpy as np

from mlagents_envs.base_env import ActionTuple

from mlagents_plugins.envs.scenes.base import DIFFICULTY, Scene

DRAG = 0.85
THRUST = 0.03
REACH = 0.2
TARGETS_TO_WIN = 3
SHAPING = 1.0
ARENA = 1.2
SWITCH_COST = "switch_cost"


class SwitchingScene(Scene):
    behavior_name = "Switching"
    # The expert (which re-plans only every few decisions) scores ~3.6; uniform random ~ -11;
    # PPO (128x2, 2 areas) passes 2.5 at ~55k steps and ~3.1 at 100k.
    success_threshold = 2.5
    default_max_episode_steps = 150
    vector_size = 8
    actions = (2, ())
    parameter_defaults = {DIFFICULTY: 1.0, SWITCH_COST: -1.0}  # -1 = derive from difficulty

    def _allocate(self, n: int) -> None:
        self.pos = np.zeros((n, 2))
        self.vel = np.zeros((n, 2))
        self.target = np.zeros((n, 2))
        self.prev_action = np.zeros((n, 2))
        self.collected = np.zeros(n, dtype=np.int64)
        self.switch_cost = np.zeros(n)

    def _new_targets(self, idx: np.ndarray) -> None:
        self.target[idx] = self.rng.uniform(-0.8, 0.8, (len(idx), 2))

    def _reset_agents(self, idx: np.ndarray) -> None:
        k = len(idx)
        self.pos[idx] = self.rng.uniform(-0.3, 0.3, (k, 2))
        self.vel[idx] = 0.0
        self.prev_action[idx] = 0.0
        self.collected[idx] = 0
        self._new_targets(idx)
        for i in idx:
            cost = self.param(SWITCH_COST)
            self.switch_cost[i] = cost if cost >= 0 else 0.02 + 0.18 * self.difficulty[i]

    def _observe(self) -> List[np.ndarray]:
        obs = np.concatenate([self.pos, 2.0 * self.vel, self.target - self.pos, self.prev_action], axis=1)
        return [obs.astype(np.float32)]

    def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
        before = np.linalg.norm(self.target - self.pos, axis=1)
        self.vel = DRAG * self.vel + THRUST * continuous
        self.pos = self.pos + self.vel
        after = np.linalg.norm(self.target - self.pos, axis=1)
        reward = SHAPING * (before - after)
        reward -= self.switch_cost * np.mean(np.abs(continuous - self.prev_action), axis=1)
        self.prev_action = continuous.copy()
        hit = after <= REACH
        reward += hit
        self.collected += hit
        hit_idx = np.nonzero(hit)[0]
        self._new_targets(hit_idx)
        success = self.collected >= TARGETS_TO_WIN
        failure = np.any(np.abs(self.pos) > ARENA, axis=1) & ~success
        reward -= failure
        return reward, success, failure

    def heuristic(self) -> ActionTuple:
        # Aim with braking, but only change the held action when it is clearly off (saves switch cost).
        desired = np.clip(3.0 * (self.target - self.pos) - 12.0 * self.vel, -1, 1)
        change = np.max(np.abs(desired - self.prev_action), axis=1) > 0.5
        act = np.where(change[:, None], np.round(desired * 2) / 2, self.prev_action)
        return ActionTuple(continuous=act.astype(np.float32))
