"""Small helpers shared by the grid scenes (branches, camera): moves, random free cells, BFS."""
from collections import deque
from typing import Optional

import numpy as np

# move index -> (dx, dy): 0 stay, 1 up, 2 down, 3 left, 4 right
MOVES = np.array([[0, 0], [0, 1], [0, -1], [-1, 0], [1, 0]], dtype=np.int64)


def move_mask(pos: np.ndarray, blocked: np.ndarray) -> np.ndarray:
    """(n, 5) True where a move would leave the grid or enter a blocked cell (stay is always allowed)."""
    n, size = pos.shape[0], blocked.shape[1]
    padded = np.ones((n, size + 2, size + 2), dtype=bool)  # a blocked border stands for "off the grid"
    padded[:, 1:-1, 1:-1] = blocked
    nxt = pos[:, None, :] + MOVES[None, :, :] + 1  # (n, 5, 2) in padded coordinates
    mask = padded[np.arange(n)[:, None], nxt[..., 0], nxt[..., 1]]
    mask[:, 0] = False
    return mask


def bfs_first_move(start, goal, blocked: np.ndarray) -> Optional[int]:
    """First move of a shortest path from start to goal on one (size, size) grid, None if unreachable."""
    size = blocked.shape[0]
    start, goal = (int(start[0]), int(start[1])), (int(goal[0]), int(goal[1]))
    if start == goal:
        return 0
    first = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        for m in range(1, len(MOVES)):
            nx, ny = cell[0] + int(MOVES[m, 0]), cell[1] + int(MOVES[m, 1])
            nxt = (nx, ny)
            if not (0 <= nx < size and 0 <= ny < size) or blocked[nx, ny] or nxt in first:
                continue
            first[nxt] = m if cell == start else first[cell]
            if nxt == goal:
                return first[nxt]
            queue.append(nxt)
    return None


def sample_layout(rng: np.random.Generator, size: int, n_blocked: int):
    """Random agent cell, goal cell and ``n_blocked`` obstacle cells with the goal reachable."""
    while True:
        cells = rng.permutation(size * size)[: n_blocked + 2]
        xy = np.stack([cells // size, cells % size], axis=1)
        blocked = np.zeros((size, size), dtype=bool)
        blocked[xy[2:, 0], xy[2:, 1]] = True
        if bfs_first_move(xy[0], xy[1], blocked) is not None:
            return xy[0], xy[1], blocked
