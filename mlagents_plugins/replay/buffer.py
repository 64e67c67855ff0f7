"""Preallocated FIFO ring replay buffer with per-add segments.

Why a ring: ML-Agents' own ``AgentBuffer`` grows Python lists and, when full, drops the oldest 20% at
once (``truncate``), which both reallocates and makes the effective buffer size jump.  Here every field is
one numpy array ``[capacity, *shape]`` allocated up front; rows are written at ``write_pos`` and the oldest
row is overwritten one by one, so the buffer always holds exactly the ``min(total_added, capacity)``
newest rows.

Segments: each ``add`` call is one segment (a time-contiguous trajectory chunk of one agent).  A per-row
int64 segment id lets sequence sampling (recurrent/n-step/unroll training) refuse to stitch together rows
from different agents or chunks, and ``steps_to_segment_end`` gives the distance to the chunk's last row,
used to truncate n-step returns at chunk ends.
"""
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from mlagents_plugins.replay.prioritized import SumTree
from mlagents_plugins.replay.specs import FieldSpec, ReplaySpec, as_replay_spec


class ReplayBuffer:
    """Fixed-capacity FIFO of rows with named fields (see module docstring).

    :param capacity: number of rows kept; older rows are overwritten one by one.
    :param fields: ``{name: FieldSpec}`` (or ``(shape, dtype)`` pairs).
    :param prioritized: keep a ``SumTree`` of priorities (``self.priorities``); new rows get its current
        max priority.
    """

    def __init__(self, capacity: int, fields: Mapping[str, FieldSpec], prioritized: bool = False) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ValueError(f"ReplayBuffer capacity must be a positive int, got {capacity!r}")
        self._capacity = int(capacity)
        self._fields: ReplaySpec = as_replay_spec(fields)
        self._data: Dict[str, np.ndarray] = {
            name: np.zeros((self._capacity,) + spec.shape, dtype=spec.np_dtype)
            for name, spec in self._fields.items()
        }
        # Segment id of every row (-1: never written) and ring index of the last row of that segment.  The
        # last row of a segment is the newest one, so it is overwritten last: it stays valid while any row
        # of the segment is still in the buffer.
        self._segment = np.full(self._capacity, -1, dtype=np.int64)
        self._segment_last = np.zeros(self._capacity, dtype=np.int64)
        self._size = 0
        self._write_pos = 0
        self._total_added = 0
        self._segment_counter = 0
        self.priorities: Optional[SumTree] = SumTree(self._capacity) if prioritized else None

    # ------------------------------------------------------------------ properties
    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def fields(self) -> ReplaySpec:
        return dict(self._fields)

    @property
    def size(self) -> int:
        """Number of filled rows, ``min(total_added, capacity)``."""
        return self._size

    def __len__(self) -> int:
        return self._size

    @property
    def write_pos(self) -> int:
        """Ring index of the next row to write (when full: the oldest row)."""
        return self._write_pos

    @property
    def total_added(self) -> int:
        """Rows ever added, including overwritten ones."""
        return self._total_added

    @property
    def segment_counter(self) -> int:
        """Number of segments (non-empty ``add`` calls) ever made; the next segment gets this id."""
        return self._segment_counter

    @property
    def prioritized(self) -> bool:
        return self.priorities is not None

    @property
    def oldest_pos(self) -> int:
        """Ring index of the oldest filled row."""
        return self._write_pos if self._size == self._capacity else 0

    @property
    def nbytes(self) -> int:
        """Memory held by the preallocated arrays (fields, segment bookkeeping, priorities)."""
        n = sum(a.nbytes for a in self._data.values()) + self._segment.nbytes + self._segment_last.nbytes
        return int(n + (self.priorities.nbytes if self.priorities is not None else 0))

    # ------------------------------------------------------------------ writing
    def _check_rows(self, rows: Mapping[str, np.ndarray]) -> Tuple[Dict[str, np.ndarray], int]:
        missing = [k for k in self._fields if k not in rows]
        extra = [k for k in rows if k not in self._fields]
        if missing or extra:
            raise ValueError(
                f"ReplayBuffer.add: fields must be exactly {sorted(self._fields)}; "
                f"missing {missing}, unexpected {extra}"
            )
        arrays: Dict[str, np.ndarray] = {}
        n: Optional[int] = None
        first = ""
        for name, spec in self._fields.items():
            a = np.asarray(rows[name])
            if a.ndim != 1 + len(spec.shape) or a.shape[1:] != spec.shape:
                raise ValueError(
                    f"ReplayBuffer.add: field {name!r} expected shape [n, {', '.join(map(str, spec.shape))}]"
                    .replace(", ]", "]")
                    + f" (rows of {spec.shape}), got {a.shape}"
                )
            if n is None:
                n, first = a.shape[0], name
            elif a.shape[0] != n:
                raise ValueError(
                    f"ReplayBuffer.add: field {name!r} has {a.shape[0]} rows but field {first!r} has {n}; "
                    "every field needs the same number of rows"
                )
            arrays[name] = a
        return arrays, int(n or 0)

    def add(self, rows: Mapping[str, np.ndarray]) -> np.ndarray:
        """Append ``n`` rows (one segment) at ``write_pos``, wrapping around and overwriting the oldest.

        Values are cast to each field's dtype.  Returns the ring indices written, in time order.  If
        ``n > capacity`` only the newest ``capacity`` rows are stored (and returned); ``total_added`` still
        grows by ``n``.  ``n == 0`` is a no-op that does not use a segment id.
        """
        arrays, n = self._check_rows(rows)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        m = min(n, self._capacity)
        start = (self._write_pos + n - m) % self._capacity
        first_len = min(m, self._capacity - start)
        for name, a in arrays.items():
            dst = self._data[name]
            src = a[n - m :]
            dst[start : start + first_len] = src[:first_len]
            if first_len < m:
                dst[: m - first_len] = src[first_len:]
        indices = (start + np.arange(m, dtype=np.int64)) % self._capacity
        self._segment[indices] = self._segment_counter
        self._segment_last[indices] = indices[-1]
        self._segment_counter += 1
        self._write_pos = (self._write_pos + n) % self._capacity
        self._size = min(self._size + n, self._capacity)
        self._total_added += n
        if self.priorities is not None:
            self.priorities.set_to_max(indices)
        return indices

    # ------------------------------------------------------------------ reading
    def _check_filled(self, what: str) -> None:
        if self._size == 0:
            raise ValueError(f"ReplayBuffer.{what}: the buffer is empty")

    def sample_indices(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """``batch_size`` ring indices drawn uniformly (with replacement) over the filled rows."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self._check_filled("sample_indices")
        # Filled rows are always ring indices 0 .. size-1 (rows are written from 0 and only ever overwritten).
        return rng.integers(0, self._size, size=int(batch_size), dtype=np.int64)

    def sample_prioritized(
        self, batch_size: int, rng: np.random.Generator
    ) -> Tuple[np.ndarray, np.ndarray]:
        """``(indices, probabilities)`` drawn proportionally to the stored priorities."""
        if self.priorities is None:
            raise ValueError("sample_prioritized needs a buffer created with prioritized=True")
        self._check_filled("sample_prioritized")
        return self.priorities.sample(batch_size, rng)

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        if self.priorities is None:
            raise ValueError("update_priorities needs a buffer created with prioritized=True")
        self._check_written(indices, "update_priorities")
        self.priorities.update(indices, priorities)

    def _check_written(self, indices: np.ndarray, what: str, limit: Optional[int] = None) -> np.ndarray:
        """Integer indices in ``[0, limit)`` (default: the filled rows ``[0, size)``)."""
        limit = self._size if limit is None else limit
        idx = np.asarray(indices)
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"ReplayBuffer.{what}: indices must be integers, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= limit):
            raise IndexError(
                f"ReplayBuffer.{what}: indices must lie in [0, {limit}), "
                f"got min {idx.min()} max {idx.max()}"
            )
        return idx.astype(np.int64, copy=False)

    def gather(self, indices: np.ndarray, fields: Optional[Sequence[str]] = None) -> Dict[str, np.ndarray]:
        """Rows at ``indices`` (any shape ``S``) as ``{name: array[*S, *shape]}`` (copies).

        Any ring index in ``[0, capacity)`` is accepted so the ``[B, L]`` output of ``sequence_indices``
        can be gathered directly; rows never written read as zeros and are masked by ``valid``.
        """
        idx = self._check_written(indices, "gather", self._capacity)
        names = list(self._fields) if fields is None else list(fields)
        unknown = [f for f in names if f not in self._fields]
        if unknown:
            raise ValueError(f"ReplayBuffer.gather: unknown fields {unknown}; known {sorted(self._fields)}")
        return {name: self._data[name][idx] for name in names}

    def segment_ids(self, indices: np.ndarray) -> np.ndarray:
        """Segment id of each row (-1 for rows never written)."""
        return self._segment[np.asarray(indices, dtype=np.int64)]

    def _age_order(self, indices: np.ndarray) -> np.ndarray:
        """Position of each ring index in time order: 0 for the oldest filled row, size-1 for the newest."""
        return (np.asarray(indices, dtype=np.int64) - self.oldest_pos) % self._capacity

    def sequence_indices(self, start: np.ndarray, length: int) -> Tuple[np.ndarray, np.ndarray]:
        """Ring indices ``idx[..., k] = (start + k) % capacity`` for ``k < length`` and their validity.

        ``valid[..., k]`` is True when row ``k`` is filled, comes after the start row in time without
        crossing the write position (no wrap from newest to oldest) and has the start row's segment id.
        Invalid steps still carry an in-range index so ``gather`` works; mask them in the loss.
        """
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise ValueError(f"length must be a positive int, got {length!r}")
        s = np.asarray(start)
        if s.size and not np.issubdtype(s.dtype, np.integer):
            raise ValueError(f"start must be integer ring indices, got dtype {s.dtype}")
        s = s.astype(np.int64, copy=False)
        if s.size and (s.min() < 0 or s.max() >= self._capacity):
            raise IndexError(f"start indices must lie in [0, {self._capacity}), got {s.min()}..{s.max()}")
        k = np.arange(int(length), dtype=np.int64)
        idx = (s[..., None] + k) % self._capacity
        age0 = self._age_order(s)[..., None]
        start_filled = (age0 < self._size)
        valid = (
            start_filled
            & (age0 + k < self._size)
            & (self._segment[idx] == self._segment[s][..., None])
        )
        return idx, valid

    def steps_to_segment_end(self, indices: np.ndarray) -> np.ndarray:
        """Rows from each index to the last row of its segment: 0 for the last row.

        Meaningful for filled rows; indices in ``[0, capacity)`` are accepted (so masked sequence steps can
        be passed as they are) and give an arbitrary value for rows never written.
        """
        idx = self._check_written(indices, "steps_to_segment_end", self._capacity)
        return (self._segment_last[idx] - idx) % self._capacity

    # ------------------------------------------------------------------ state (persistence)
    def chronological_indices(self) -> np.ndarray:
        """Ring indices of the filled rows, oldest first."""
        return (self.oldest_pos + np.arange(self._size, dtype=np.int64)) % self._capacity

    def field_array(self, name: str) -> np.ndarray:
        """The preallocated ``[capacity, *shape]`` array of ``name`` (a view; do not resize)."""
        return self._data[name]

    def segment_array(self) -> np.ndarray:
        """Per-row segment ids ``[capacity]`` (a view, -1 for unwritten rows)."""
        return self._segment

    def state(self) -> dict:
        """Everything needed to rebuild this buffer exactly (arrays are views of the filled rows)."""
        n = self._size  # filled rows are always ring indices 0 .. size-1
        st = {
            "capacity": self._capacity,
            "fields": dict(self._fields),
            "size": n,
            "write_pos": self._write_pos,
            "total_added": self._total_added,
            "segment_counter": self._segment_counter,
            "arrays": {name: a[:n] for name, a in self._data.items()},
            "segments": self._segment[:n],
            "priorities": None,
            "max_priority": None,
        }
        if self.priorities is not None:
            st["priorities"] = self.priorities.priorities()[:n]
            st["max_priority"] = self.priorities.max_priority
        return st

    def restore_counters(
        self, size: int, write_pos: int, total_added: int, segment_counter: int
    ) -> None:
        """Set the counters after the arrays (``field_array``/``segment_array``) were filled in place.

        Used by the loader, which reads file payloads straight into the preallocated arrays; recomputes the
        per-row segment ends and checks the counters are consistent.
        """
        cap = self._capacity
        if not 0 <= size <= cap:
            raise ValueError(f"size must be in [0, {cap}], got {size}")
        if not (0 <= write_pos < cap) or (size < cap and write_pos != size):
            raise ValueError(f"write_pos {write_pos} is inconsistent with size {size} and capacity {cap}")
        if total_added < size:
            raise ValueError(f"total_added {total_added} is smaller than size {size}")
        if segment_counter < (1 if size else 0):
            raise ValueError(f"segment_counter {segment_counter} is inconsistent with size {size}")
        self._size, self._write_pos = int(size), int(write_pos)
        self._total_added, self._segment_counter = int(total_added), int(segment_counter)
        self._segment[size:] = -1
        self._rebuild_segment_last()

    def _rebuild_segment_last(self) -> None:
        """Recompute ``_segment_last`` from the segment ids: in time order each segment is one run."""
        order = self.chronological_indices()
        if order.size == 0:
            return
        seg = self._segment[order]
        if seg.min() < 0 or seg.max() >= max(self._segment_counter, 1) or np.any(np.diff(seg) < 0):
            raise ValueError("segment ids must be in [0, segment_counter) and non-decreasing in time order")
        is_last = np.ones(order.size, dtype=bool)
        is_last[:-1] = seg[1:] != seg[:-1]
        last_pos = np.flatnonzero(is_last)
        # run number of each row -> the ring index of its run's last row
        run = np.cumsum(np.concatenate(([0], is_last[:-1].astype(np.int64))))
        self._segment_last[order] = order[last_pos[run]]
