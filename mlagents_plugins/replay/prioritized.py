"""Sum-tree for proportional prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay").

Row ``i`` is drawn with probability ``P(i) = p_i / sum_k p_k`` (paper eq. 1 with the exponent ``alpha``
already applied by the caller: pass ``p_i = (|delta_i| + eps) ** alpha``).  Importance weights follow the
paper's ``w_i = (N * P(i)) ** -beta / max_j w_j`` (normalised by the batch maximum, as in Alg. 1 line 10).

Layout: a complete binary tree in one float64 array of ``2 * P`` nodes, ``P`` the smallest power of two
``>= capacity``; node 1 is the root, node ``k`` has children ``2k`` and ``2k + 1`` and the leaves are nodes
``P .. P + capacity - 1`` (padding leaves stay 0 and are never drawn).  Both batch sampling and batch
updates work level by level over the whole batch with numpy, so the Python-level cost is ``O(log capacity)``
per call rather than per item.
"""
from typing import Tuple

import numpy as np


class SumTree:
    """Priorities of ``capacity`` rows with O(log n) vectorised batch sampling and updates."""

    def __init__(self, capacity: int, initial_max_priority: float = 1.0) -> None:
        if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"SumTree capacity must be a positive int, got {capacity!r}")
        if not np.isfinite(initial_max_priority) or initial_max_priority <= 0:
            raise ValueError(
                f"initial_max_priority must be a finite positive float, got {initial_max_priority!r}"
            )
        self._capacity = int(capacity)
        self._leaf_base = 1 << max(0, (self._capacity - 1).bit_length())
        self._depth = self._leaf_base.bit_length() - 1  # number of levels below the root
        self._tree = np.zeros(2 * self._leaf_base, dtype=np.float64)
        # Running maximum of every priority ever set: new rows get it so they are replayed at least once soon.
        self.max_priority = float(initial_max_priority)

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def total(self) -> float:
        return float(self._tree[1])

    @property
    def nbytes(self) -> int:
        return int(self._tree.nbytes)

    def priorities(self, indices: np.ndarray = None) -> np.ndarray:
        """Leaf priorities (a copy) of ``indices``, or of all ``capacity`` rows."""
        leaves = self._tree[self._leaf_base : self._leaf_base + self._capacity]
        if indices is None:
            return leaves.copy()
        return leaves[self._check_indices(indices)]

    def _check_indices(self, indices: np.ndarray) -> np.ndarray:
        idx = np.asarray(indices)
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"SumTree indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (idx.min() < 0 or idx.max() >= self._capacity):
            raise IndexError(
                f"SumTree indices must lie in [0, {self._capacity}), got min {idx.min()} max {idx.max()}"
            )
        return idx

    def update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set the priorities of rows ``indices`` (for repeated indices the last value wins).

        Parents are recomputed from their two children level by level (not by adding deltas), so rounding
        errors never accumulate in the sums however many updates are made.
        """
        idx = self._check_indices(indices).reshape(-1)
        pri = np.broadcast_to(np.asarray(priorities, dtype=np.float64), np.shape(indices)).reshape(-1)
        if pri.size and (not np.all(np.isfinite(pri)) or pri.min() < 0):
            bad = pri[~np.isfinite(pri) | (pri < 0)][0]
            raise ValueError(f"priorities must be finite and >= 0, got {bad!r}")
        if idx.size == 0:
            return
        # Keep the last occurrence of each index so duplicates resolve deterministically.
        rev_unique, rev_first = np.unique(idx[::-1], return_index=True)
        last_pri = pri[::-1][rev_first]
        nodes = rev_unique + self._leaf_base
        self._tree[nodes] = last_pri
        self.max_priority = max(self.max_priority, float(pri.max()))
        for _ in range(self._depth):
            nodes = np.unique(nodes >> 1)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]

    def set_to_max(self, indices: np.ndarray) -> None:
        """Give rows ``indices`` the current maximum priority (what freshly added rows get)."""
        idx = np.asarray(indices)
        self.update(idx, np.full(idx.shape, self.max_priority))

    def find(self, mass: np.ndarray) -> np.ndarray:
        """Leaf index whose cumulative-priority interval contains each ``mass`` in ``[0, total)``.

        At each node we go left when ``mass < left`` or when the right subtree is empty; the second rule
        keeps float rounding (``mass`` a hair above ``left`` with a zero right subtree) from ever landing on a
        zero-priority row.
        """
        m = np.asarray(mass, dtype=np.float64).copy()
        nodes = np.ones(m.shape, dtype=np.int64)
        for _ in range(self._depth):
            left = 2 * nodes
            left_sum = self._tree[left]
            go_left = (m < left_sum) | (self._tree[left + 1] <= 0.0)
            m = np.where(go_left, m, m - left_sum)
            nodes = np.where(go_left, left, left + 1)
        return nodes - self._leaf_base

    def sample(self, batch_size: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        """Draw ``batch_size`` rows i.i.d. with probability ``p_i / total``.

        Returns ``(indices, probabilities)``; the probabilities are what ``importance_weights`` needs.
        """
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        total = self.total
        if not total > 0.0:
            raise ValueError("cannot sample from a SumTree whose priorities are all zero")
        idx = self.find(rng.random(int(batch_size)) * total)
        probs = self._tree[idx + self._leaf_base] / total
        return idx, probs

    @staticmethod
    def importance_weights(probabilities: np.ndarray, size: int, beta: float) -> np.ndarray:
        return importance_weights(probabilities, size, beta)

    def state(self) -> dict:
        return {"priorities": self.priorities(), "max_priority": self.max_priority}

    def load_state(self, priorities: np.ndarray, max_priority: float) -> None:
        pri = np.asarray(priorities, dtype=np.float64)
        if pri.shape != (self._capacity,):
            raise ValueError(f"priorities must have shape ({self._capacity},), got {pri.shape}")
        self._tree[:] = 0.0
        self.update(np.arange(self._capacity), pri)
        self.max_priority = float(max_priority)


def importance_weights(probabilities: np.ndarray, size: int, beta: float) -> np.ndarray:
    """``w_i = (size * P(i)) ** -beta``, divided by the batch maximum so weights only scale updates down.

    ``size`` is the number of filled rows N (paper Sec. 3.4); ``beta`` in [0, 1] (0: no correction).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size!r}")
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta!r}")
    if p.size and (not np.all(np.isfinite(p)) or p.min() <= 0.0 or p.max() > 1.0):
        raise ValueError("probabilities must lie in (0, 1]")
    # (N p)^-beta / max_j (N p_j)^-beta == (p / min_j p_j)^-beta; computed in log space for stability.
    if p.size == 0:
        return p.astype(np.float32)
    w = np.exp(-beta * (np.log(p) - np.log(p.min())))
    return w.astype(np.float32)
