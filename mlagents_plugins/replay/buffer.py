"""Preallocated FIFO ring replay buffer with per-add segments; successor fields stored once.

Why a ring: ML-Agents' own ``AgentBuffer`` grows Python lists and, when full, drops the oldest 20% at
once (``truncate``), which both reallocates and makes the effective buffer size jump.  Here every field is
one array allocated up front; rows are written at ``write_pos`` and the oldest row is overwritten one by one,
so the buffer always holds exactly the ``min(total_added, capacity)`` newest rows.

Segments: each ``add`` call is one segment (a time-contiguous trajectory chunk of one agent).  A per-row
int64 segment id lets sequence sampling (recurrent/n-step/unroll training) refuse to stitch together rows
from different agents or chunks, and ``steps_to_segment_end`` gives the distance to the chunk's last row,
used to truncate n-step returns at chunk ends.

Successor fields (``FieldSpec.next_of``, e.g. ``next_obs_0`` of ``obs_0``): a row's value is its source field
at the next row of the segment, so it is not stored per row.  Only each segment's last row keeps its own value,
in a table of "finals" indexed by segment id modulo its size (segments leave the ring oldest first, so the
live ones are consecutive ids); the table grows when more segments are live than it has slots.  ``gather``
reads a successor field from the next row, or from the finals for a segment's last row: the same values a
per-row copy would hold, at one stored frame per transition plus one per segment.

Ring indices vs physical rows: everything above and every index the buffer hands out or accepts is a ring
index in ``[0, capacity)``.  The arrays may have more physical rows than ``capacity`` (a disk-backed buffer
saved with checkpoints keeps the rows of its last save intact until the next one, see ``mark_saved``); ring
index ``i`` then lives at physical row ``(phys_next - size + age(i)) % physical_rows``, ``age`` counting from the
oldest row.  With as many physical rows as the capacity this is the identity.
"""
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from mlagents_plugins.replay.prioritized import SumTree
from mlagents_plugins.replay.specs import FieldSpec, ReplaySpec, as_replay_spec, successor_fields
from mlagents_plugins.replay.storage import MemoryStorage

SEGMENTS_KEY = "segments"
_SEGMENT_SPEC = FieldSpec((), "int64")
# Finals slots to start with, per row of capacity (grown as needed); trajectory chunks are tens of rows long.
_INITIAL_FINALS_PER_ROW = 1.0 / 64.0
_FINALS_GROWTH = 1.5


def row_key(name: str) -> str:
    return f"row:{name}"


def finals_key(name: str, slots: int) -> str:
    return f"final:{name}:{slots}"


class ReplayBuffer:
    """Fixed-capacity FIFO of rows with named fields (see module docstring).

    :param capacity: number of rows kept; older rows are overwritten one by one.
    :param fields: ``{name: FieldSpec}`` (or ``(shape, dtype)`` pairs); ``next_of`` fields are stored once.
    :param prioritized: keep a ``SumTree`` of priorities (``self.priorities``); new rows get its current
        max priority.
    :param storage: where the arrays live (``replay.storage``; default ``MemoryStorage()``).
    :param physical_rows: rows of the row arrays, at least ``capacity`` (default ``capacity``).
    :param existing: ``storage`` already holds the arrays (a saved disk-backed buffer being reopened): map them
        instead of creating them; the loader then sets the counters (``set_counters``).
    :param finals_slots: slots of the finals table to start with (default from the capacity).
    """

    def __init__(
        self,
        capacity: int,
        fields: Mapping[str, FieldSpec],
        prioritized: bool = False,
        storage=None,
        physical_rows: Optional[int] = None,
        existing: bool = False,
        finals_slots: Optional[int] = None,
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ValueError(f"ReplayBuffer capacity must be a positive int, got {capacity!r}")
        self._capacity = int(capacity)
        self._physical_rows = self._capacity if physical_rows is None else int(physical_rows)
        if self._physical_rows < self._capacity:
            raise ValueError(f"physical_rows {physical_rows} must be at least the capacity {capacity}")
        self._fields: ReplaySpec = as_replay_spec(fields)
        self._successors = successor_fields(self._fields)
        self._storage = MemoryStorage() if storage is None else storage
        self._rows: Dict[str, np.ndarray] = {
            name: self._storage.array(row_key(name), spec, self._physical_rows, existing)
            for name, spec in self._fields.items()
            if name not in self._successors
        }
        # Segment id of every row (-1: never written) and ring index of the last row of that segment.  The
        # last row of a segment is the newest one, so it is overwritten last: it stays valid while any row
        # of the segment is still in the buffer.  A persistent storage also keeps the ids per physical row
        # (what a reopened buffer reads them back from).
        self._segment = np.full(self._capacity, -1, dtype=np.int64)
        self._segment_last = np.zeros(self._capacity, dtype=np.int64)
        self._physical_segment: Optional[np.ndarray] = None
        if self._storage.persistent:
            self._physical_segment = self._storage.array(SEGMENTS_KEY, _SEGMENT_SPEC, self._physical_rows, existing)
        if finals_slots is None:
            finals_slots = min(self._capacity, max(16, int(self._capacity * _INITIAL_FINALS_PER_ROW)))
        self._finals_slots = int(finals_slots)
        self._finals: Dict[str, np.ndarray] = {}
        if self._successors:
            if not 1 <= self._finals_slots <= self._physical_rows:
                raise ValueError(f"finals_slots must be in [1, {self._physical_rows}], got {finals_slots}")
            self._finals = {
                name: self._storage.array(finals_key(name, self._finals_slots), self._fields[name].values,
                                          self._finals_slots, existing)
                for name in self._successors
            }
        self._size = 0
        self._write_pos = 0
        self._phys_next = 0
        self._total_added = 0
        self._segment_counter = 0
        self.priorities: Optional[SumTree] = SumTree(self._capacity) if prioritized else None
        # The region of the last save (see ``mark_saved``) and what to call when a write must overwrite it.
        self._saved: Optional[dict] = None
        self.on_saved_rows_overwritten: Optional[Callable[[str], None]] = None

    # ------------------------------------------------------------------ properties
    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def fields(self) -> ReplaySpec:
        return dict(self._fields)

    @property
    def successors(self) -> Dict[str, str]:
        """``{field: the field it succeeds}`` for the fields stored once (``FieldSpec.next_of``)."""
        return dict(self._successors)

    @property
    def storage(self):
        return self._storage

    @property
    def physical_rows(self) -> int:
        return self._physical_rows

    @property
    def phys_next(self) -> int:
        """Physical row the next added row goes to."""
        return self._phys_next

    @property
    def finals_slots(self) -> int:
        return self._finals_slots

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
    def first_live_segment(self) -> int:
        """Id of the oldest segment with a row in the buffer (``segment_counter`` when empty); the live
        segments are the ids from here to ``segment_counter - 1``."""
        return int(self._segment[self.oldest_pos]) if self._size else self._segment_counter

    @property
    def nbytes(self) -> int:
        """Bytes of the preallocated arrays (rows, finals, segment bookkeeping, priorities), wherever they live."""
        n = sum(a.nbytes for a in self._rows.values()) + sum(a.nbytes for a in self._finals.values())
        n += self._segment.nbytes + self._segment_last.nbytes
        if self._physical_segment is not None:
            n += self._physical_segment.nbytes
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

    def _check_successor_rows(self, arrays: Dict[str, np.ndarray]) -> None:
        """A successor field is stored once, so its rows must be bit for bit its source's next rows."""
        for name, source in self._successors.items():
            spec = self._fields[name]
            if len(arrays[name]) < 2 or spec.np_dtype.itemsize * int(np.prod(spec.shape)) == 0:
                continue
            succ = np.ascontiguousarray(arrays[name][:-1], dtype=spec.np_dtype)
            succ = succ.view(np.uint8).reshape(len(succ), -1)
            nxt = np.ascontiguousarray(arrays[source][1:], dtype=spec.np_dtype).view(np.uint8).reshape(succ.shape)
            if not np.array_equal(succ, nxt):
                bad = int(np.flatnonzero((succ != nxt).any(axis=1))[0])
                raise ValueError(
                    f"ReplayBuffer.add: field {name!r} is the next row's {source!r} within a segment (stored "
                    f"once), but row {bad} of this segment differs from row {bad + 1}'s {source!r}"
                )

    def _put(self, dst: np.ndarray, start: int, src: np.ndarray) -> None:
        """``dst[(start + k) % len(dst)] = src[k]`` as at most two slice copies."""
        m = len(src)
        first_len = min(m, len(dst) - start)
        dst[start : start + first_len] = src[:first_len]
        if first_len < m:
            dst[: m - first_len] = src[first_len:]

    def add(self, rows: Mapping[str, np.ndarray]) -> np.ndarray:
        """Append ``n`` rows (one segment) at ``write_pos``, wrapping around and overwriting the oldest.

        Values are cast to each field's dtype; a successor field's rows must equal its source's next rows (all
        but the last row, whose value is kept as the segment's final).  Returns the ring indices written, in time
        order.  If ``n > capacity`` only the newest ``capacity`` rows are stored (and returned); ``total_added``
        still grows by ``n``.  ``n == 0`` is a no-op that does not use a segment id.
        """
        arrays, n = self._check_rows(rows)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        self._check_successor_rows(arrays)
        if self._saved is not None:
            self._keep_or_release_saved_rows(n)
        m = min(n, self._capacity)
        start = (self._write_pos + n - m) % self._capacity
        phys_start = (self._phys_next + n - m) % self._physical_rows
        for name, dst in self._rows.items():
            self._put(dst, phys_start, arrays[name][n - m :])
        indices = (start + np.arange(m, dtype=np.int64)) % self._capacity
        segment = self._segment_counter
        self._segment[indices] = segment
        self._segment_last[indices] = indices[-1]
        if self._physical_segment is not None:
            self._put(self._physical_segment, phys_start, np.full(m, segment, dtype=np.int64))
        self._segment_counter += 1
        self._write_pos = (self._write_pos + n) % self._capacity
        self._phys_next = (self._phys_next + n) % self._physical_rows
        self._size = min(self._size + n, self._capacity)
        self._total_added += n
        if self._successors:
            self._reserve_finals(segment)
            slot = segment % self._finals_slots
            for name in self._successors:
                self._finals[name][slot] = arrays[name][n - 1]
        if self.priorities is not None:
            self.priorities.set_to_max(indices)
        return indices

    # ------------------------------------------------------------------ finals table
    def _reserve_finals(self, newest: int) -> None:
        """Grow the finals table so segment ``newest`` gets a slot that no live segment uses, nor (while the table
        is the one the last save refers to) a saved one."""
        oldest = self.first_live_segment
        if self._saved is not None and self._saved["finals_slots"] == self._finals_slots:
            oldest = min(oldest, self._saved["first_segment"])
        needed = newest - oldest + 1
        if needed <= self._finals_slots:
            return
        slots = min(self._physical_rows, max(needed, int(self._finals_slots * _FINALS_GROWTH) + 1))
        live = np.arange(self.first_live_segment, newest, dtype=np.int64)
        saved_table = self._saved is not None and self._saved["finals_slots"] == self._finals_slots
        for name in self._successors:
            grown = self._storage.array(finals_key(name, slots), self._fields[name].values, slots)
            grown[live % slots] = self._finals[name][live % self._finals_slots]
            if not saved_table:
                self._storage.discard(finals_key(name, self._finals_slots))
            self._finals[name] = grown
        self._finals_slots = slots

    def finals(self, name: str, segments: np.ndarray) -> np.ndarray:
        """Final values of successor field ``name`` for live segment ids ``segments`` (copies)."""
        return self._finals[name][np.asarray(segments, dtype=np.int64) % self._finals_slots]

    # ------------------------------------------------------------------ saved region (disk-backed buffers)
    def mark_saved(self) -> None:
        """Call after a save that refers to these arrays in place (a disk-backed buffer's state file): until the
        next ``mark_saved``, ``add`` never overwrites the physical rows or finals that save refers to, so a crash
        at any moment leaves that save exact.  When it has to (more rows since the save than the physical rows
        beyond the capacity), it first calls ``on_saved_rows_overwritten`` with the reason, and that save is gone.
        """
        if not self._storage.persistent:
            return
        self._saved = {
            "rows": self._size,
            "since": 0,
            "first_segment": self.first_live_segment,
            "finals_slots": self._finals_slots,
        }

    def _keep_or_release_saved_rows(self, n: int) -> None:
        saved = self._saved
        if saved["rows"] + saved["since"] + n > self._physical_rows:
            self._saved = None
            if self.on_saved_rows_overwritten is not None:
                self.on_saved_rows_overwritten(
                    f"{saved['since'] + n} rows came after the save, more than the "
                    f"{self._physical_rows - saved['rows']} physical rows the buffer keeps beyond the saved ones"
                )
            return
        saved["since"] += n

    def flush(self) -> None:
        """Make every written row durable where the storage is a file (a no-op in memory)."""
        self._storage.flush()

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

    def physical(self, indices: np.ndarray) -> np.ndarray:
        """Physical rows of ring indices (the identity unless the arrays have more rows than the capacity)."""
        if self._physical_rows == self._capacity:
            return indices
        age = (indices - self.oldest_pos) % self._capacity
        return (self._phys_next - self._size + age) % self._physical_rows

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
        unwritten = np.flatnonzero(idx.reshape(-1) >= self._size) if self._size < self._capacity else None
        phys: Optional[np.ndarray] = None
        out: Dict[str, np.ndarray] = {}
        for name in names:
            if name in self._successors:
                out[name] = self._gather_successor(name, idx)
                continue
            if phys is None:
                phys = self.physical(idx)
            out[name] = self._rows[name][phys]
            if unwritten is not None and unwritten.size:  # a reopened file may hold rows written after its save
                out[name].reshape((-1,) + self._fields[name].shape)[unwritten] = 0
        return out

    def _gather_successor(self, name: str, idx: np.ndarray) -> np.ndarray:
        """``name`` at ring indices ``idx``: the source field at the next row, a segment's final at its last row,
        zeros at rows never written."""
        flat = idx.reshape(-1)
        is_last = self._segment_last[flat] == flat
        full = self._size == self._capacity  # then every row is written
        written = None if full else self._segment[flat] >= 0
        if not full:
            is_last &= written
        take = flat + 1
        take[take == self._capacity] = 0
        ends = np.flatnonzero(is_last)
        take[ends] = flat[ends]  # read below, then replaced by the segment's final
        out = self._rows[self._successors[name]][self.physical(take)]
        if ends.size:
            out[ends] = self._finals[name][self._segment[flat[ends]] % self._finals_slots]
        if written is not None:
            blank = np.flatnonzero(~written)
            if blank.size:
                out[blank] = 0
        return out.reshape(idx.shape + self._fields[name].shape)

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
        """The preallocated ``[physical_rows, *shape]`` array of stored field ``name`` (a view; do not resize)."""
        if name in self._successors:
            raise ValueError(f"field {name!r} is stored once as the next row's {self._successors[name]!r}; gather it")
        return self._rows[name]

    def segment_array(self) -> np.ndarray:
        """Per-row segment ids ``[capacity]`` by ring index (a view, -1 for unwritten rows)."""
        return self._segment

    def rows_of(self, name: str, start: int, stop: int) -> np.ndarray:
        """Stored field ``name`` at ring indices ``start .. stop-1`` (a view where they are physical rows too)."""
        if self._physical_rows == self._capacity:
            return self._rows[name][start:stop]
        return self._rows[name][self.physical(np.arange(start, stop, dtype=np.int64))]

    def write_rows(self, name: str, indices: np.ndarray, values: np.ndarray) -> None:
        """Put ``values`` into stored field ``name`` at ring indices ``indices`` (loaders, after ``set_counters``)."""
        indices = np.asarray(indices, dtype=np.int64)
        if self._physical_rows == self._capacity and indices.size and np.all(np.diff(indices) == 1):
            self._rows[name][indices[0] : indices[-1] + 1] = values
        else:
            self._rows[name][self.physical(indices)] = values

    def write_finals(self, name: str, segments: np.ndarray, values: np.ndarray) -> None:
        """Final values of successor field ``name`` for live segment ids ``segments`` (loaders, after the counters
        and segment ids are in place; the table is grown to hold every live segment)."""
        if self._successors and self._segment_counter > 0:
            self._reserve_finals(self._segment_counter - 1)
        self._finals[name][np.asarray(segments, dtype=np.int64) % self._finals_slots] = values

    def state(self) -> dict:
        """Counters and every field of the filled rows in ring order (successor fields as ``gather`` reads them):
        a snapshot for checks, as large as the rows (copies where fields are stored once or on other rows)."""
        n = self._size  # filled rows are always ring indices 0 .. size-1
        st = {
            "capacity": self._capacity,
            "fields": dict(self._fields),
            "size": n,
            "write_pos": self._write_pos,
            "total_added": self._total_added,
            "segment_counter": self._segment_counter,
            "arrays": self.gather(np.arange(n, dtype=np.int64)),
            "segments": self._segment[:n],
            "priorities": None,
            "max_priority": None,
        }
        if self.priorities is not None:
            st["priorities"] = self.priorities.priorities()[:n]
            st["max_priority"] = self.priorities.max_priority
        return st

    def set_counters(
        self, size: int, write_pos: int, total_added: int, segment_counter: int, phys_next: Optional[int] = None
    ) -> None:
        """Set the counters of a buffer being loaded (the segment ids of the filled rows go into
        ``segment_array()[:size]``, before or after; ``rebuild_segments`` then checks them).

        ``phys_next`` defaults to the ring layout's own: ``write_pos`` when the arrays have as many rows as the
        capacity, else ``size`` (the filled rows at physical rows ``0..size-1`` in time order).
        """
        cap, rows = self._capacity, self._physical_rows
        if not 0 <= size <= cap:
            raise ValueError(f"size must be in [0, {cap}], got {size}")
        if not (0 <= write_pos < cap) or (size < cap and write_pos != size):
            raise ValueError(f"write_pos {write_pos} is inconsistent with size {size} and capacity {cap}")
        if total_added < size:
            raise ValueError(f"total_added {total_added} is smaller than size {size}")
        if segment_counter < (1 if size else 0):
            raise ValueError(f"segment_counter {segment_counter} is inconsistent with size {size}")
        if phys_next is None:
            phys_next = write_pos if rows == cap else size % rows
        if not 0 <= phys_next < rows or (rows == cap and phys_next != write_pos):
            raise ValueError(f"phys_next {phys_next} is inconsistent with write_pos {write_pos} and {rows} rows")
        self._size, self._write_pos, self._phys_next = int(size), int(write_pos), int(phys_next)
        self._total_added, self._segment_counter = int(total_added), int(segment_counter)

    def rebuild_segments(self) -> None:
        """After loading: mark the rows past ``size`` unwritten and recompute each row's segment end, checking
        that the segment ids are consistent with the counters."""
        self._segment[self._size :] = -1
        self._rebuild_segment_last()

    def store_physical_segments(self) -> None:
        """Write the ring's segment ids to the persistent storage's per-physical-row copy (loading, after
        ``set_counters``)."""
        if self._physical_segment is not None and self._size:
            ring = np.arange(self._size, dtype=np.int64)
            self._physical_segment[self.physical(ring)] = self._segment[: self._size]

    def read_physical_segments(self) -> None:
        """Fill the ring's segment ids from the persistent storage's copy (reopening, after ``set_counters``)."""
        if self._physical_segment is not None and self._size:
            ring = np.arange(self._size, dtype=np.int64)
            self._segment[: self._size] = self._physical_segment[self.physical(ring)]

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
