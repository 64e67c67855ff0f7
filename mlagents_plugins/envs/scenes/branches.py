"""Branches: a grid walk with two discrete action branches whose masks carry real validity.

A 7x7 grid with ``round(8 * difficulty)`` obstacle cells, an agent and a door of colour A or B.
Branch 0 ``move`` (5): stay / up / down / left / right.  Moves off the grid or into an obstacle are
masked; taking one anyway is a crash: -1 and the episode fails.
Branch 1 ``use`` (3): nothing / open with key A / open with key B.  Opening is masked unless the agent
stands on the door; opening elsewhere fails the episode (-1).  On the door, the key matching the door
colour (shown in the observation, *not* in the mask) succeeds (+1); the wrong key fails (-1).
A use other than "nothing" happens before the move, and a move is ignored in that decision.
Reward: -0.01 per decision.  Time-out after 40 decisions.

Observation (10): agent x/y, door x/y (scaled to [-1, 1]), door colour one-hot (2), blocked flags of
the 4 neighbouring cells (up, down, left, right).
"""
from typing import List, Optional

import numpy as np

from mlagents_envs.base_env import ActionTuple

from mlagents_plugins.envs.scenes.base import Scene
from mlagents_plugins.envs.scenes.grid import MOVES, bfs_first_move, move_mask, sample_layout

SIZE = 7
MAX_OBSTACLES = 8
STEP_PENALTY = 0.01
USE_NOTHING = 0


class BranchesScene(Scene):
    behavior_name = "Branches"
    # The expert needs ~6 decisions on average (return ~0.94); a masked random policy scores ~ -0.45;
    # PPO (128x2, 2 areas) passes 0.7 at ~40k steps and 0.8 at ~55k.
    success_threshold = 0.7
    default_max_episode_steps = 40
    vector_size = 10
    actions = (0, (5, 3))

    def _allocate(self, n: int) -> None:
        self.pos = np.zeros((n, 2), dtype=np.int64)
        self.door = np.zeros((n, 2), dtype=np.int64)
        self.color = np.zeros(n, dtype=np.int64)  # 0 = A, 1 = B
        self.blocked = np.zeros((n, SIZE, SIZE), dtype=bool)

    def _reset_agents(self, idx: np.ndarray) -> None:
        for i in idx:
            n_blocked = int(round(MAX_OBSTACLES * self.difficulty[i]))
            self.pos[i], self.door[i], self.blocked[i] = sample_layout(self.rng, SIZE, n_blocked)
            self.color[i] = self.rng.integers(2)

    def _scaled(self, cell: np.ndarray) -> np.ndarray:
        return cell / (SIZE - 1) * 2.0 - 1.0

    def _observe(self) -> List[np.ndarray]:
        neighbours = move_mask(self.pos, self.blocked)[:, 1:]
        colour = np.eye(2)[self.color]
        obs = np.concatenate([self._scaled(self.pos), self._scaled(self.door), colour, neighbours], axis=1)
        return [obs.astype(np.float32)]

    def action_mask(self) -> Optional[List[np.ndarray]]:
        on_door = np.all(self.pos == self.door, axis=1)
        use_mask = np.zeros((self.num_agents, 3), dtype=bool)
        use_mask[:, 1:] = ~on_door[:, None]
        return [move_mask(self.pos, self.blocked), use_mask]

    def _tick(self, continuous: np.ndarray, discrete: np.ndarray):
        n = self.num_agents
        move, use = discrete[:, 0], discrete[:, 1]
        invalid_move = move_mask(self.pos, self.blocked)[np.arange(n), move]
        on_door = np.all(self.pos == self.door, axis=1)
        using = use != USE_NOTHING
        right_key = use - 1 == self.color
        success = using & on_door & right_key
        failure = (using & ~(on_door & right_key)) | (~using & invalid_move)
        moving = ~using & ~invalid_move
        self.pos[moving] += MOVES[move[moving]]
        reward = np.where(success, 1.0, np.where(failure, -1.0, 0.0)) - STEP_PENALTY
        return reward, success, failure

    def heuristic(self) -> ActionTuple:
        n = self.num_agents
        act = np.zeros((n, 2), dtype=np.int32)
        for i in range(n):
            if np.all(self.pos[i] == self.door[i]):
                act[i] = (0, 1 + self.color[i])
            else:
                act[i, 0] = bfs_first_move(self.pos[i], self.door[i], self.blocked[i]) or 0
        return ActionTuple(discrete=act)
