"""Sequence windows of a recurrent policy's replay (mlagents_plugins/offpolicy/sequences.py), checked against a
row-by-row walk: alignment to sequence_length inside each chunk, burn-in limited to the chunk, chunk ends, rows the
ring overwrote, and the memory columns read from a trajectory."""
import numpy as np
import pytest

from mlagents_plugins.offpolicy import sequences
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.specs import FieldSpec


def _buffer(capacity, chunk_lengths):
    fields = {"x": FieldSpec((), "int64")}
    fields.update(sequences.memory_fields(4))
    buf = ReplayBuffer(capacity, fields)
    serial = 0
    for n in chunk_lengths:
        buf.add({"x": np.arange(serial, serial + n), sequences.MEMORY: np.zeros((n, 4), np.float32),
                 sequences.SEQUENCE_POS: np.arange(n, dtype=np.int32)})
        serial += n
    return buf


def _naive(buf, row, length, burn_in):
    """The window of ``row`` by walking the chunk: (serials of the window's rows, valid, train)."""
    x = buf.gather(np.arange(buf.size), ["x"])["x"]
    seg = buf.segment_ids(np.arange(buf.size))
    chunk = [int(r) for r in buf.chronological_indices() if seg[r] == seg[row]]  # live rows, oldest first
    pos = int(buf.gather(np.array([row]), [sequences.SEQUENCE_POS])[sequences.SEQUENCE_POS][0])
    i = chunk.index(row)
    seq_start = max(i - pos % length, 0)  # the sequence's first live row
    win_start = max(seq_start - burn_in, 0)
    serials, valid, train = [], [], []
    for j in range(length + burn_in):
        k = win_start + j
        ok = k < len(chunk)
        serials.append(int(x[chunk[k]]) if ok else None)
        valid.append(ok)
        train.append(ok and seq_start <= k < seq_start + length)
    return serials, valid, train


@pytest.mark.parametrize("burn_in", [0, 2, 5])
@pytest.mark.parametrize("length", [1, 3, 4])
def test_windows_match_a_walk_along_each_chunk(length, burn_in):
    # capacity 40 with 47 rows added: the first chunk lost its 7 oldest rows to the ring
    buf = _buffer(40, [9, 2, 13, 1, 7, 15])
    assert buf.size == 40
    rows = np.arange(40)
    win = sequences.sequence_windows(buf, rows, length, burn_in)
    x = buf.gather(win.idx, ["x"])["x"]
    for r in rows:
        serials, valid, train = _naive(buf, int(r), length, burn_in)
        assert win.valid[r].tolist() == valid, r
        assert win.train[r].tolist() == train, r
        assert [int(v) if ok else None for v, ok in zip(x[r], win.valid[r])] == serials, r
        assert win.train[r][win.valid[r]].any()  # the sampled row's sequence always has a trained row
        # the sampled row is one of its window's trained rows
        assert int(buf.gather(np.array([r]), ["x"])["x"][0]) in [s for s, t in zip(serials, train) if t]


def test_sequences_are_built_in_sacs_cuts_of_a_chunk():
    """A chunk of 10 rows and sequence_length 4: rows 0-3, 4-7 and 8-9 (padded) are the sequences, whichever row
    of a sequence is drawn; burn-in 3 reaches back into the previous sequence, never before the chunk."""
    buf = _buffer(100, [10])
    win = sequences.sequence_windows(buf, np.arange(10), 4, 0)
    x = buf.gather(win.idx, ["x"])["x"]
    for r in range(10):
        start = r - r % 4
        want = [s for s in range(start, min(start + 4, 10))]
        assert x[r][win.train[r]].tolist() == want
    win = sequences.sequence_windows(buf, np.array([1, 5, 9]), 4, 3)
    x = buf.gather(win.idx, ["x"])["x"]
    assert x[0][win.valid[0]].tolist() == [0, 1, 2, 3, 4, 5, 6] and x[0][win.train[0]].tolist() == [0, 1, 2, 3]
    assert x[1][win.valid[1]].tolist() == [1, 2, 3, 4, 5, 6, 7] and x[1][win.train[1]].tolist() == [4, 5, 6, 7]
    assert x[2][win.valid[2]].tolist() == [5, 6, 7, 8, 9] and x[2][win.train[2]].tolist() == [8, 9]


def test_memory_rows_are_the_steps_memories_and_positions():
    class Step:
        def __init__(self, memory):
            self.memory = memory

    class Traj:
        steps = [Step(np.full(4, k, np.float32)) for k in range(3)]

    rows = sequences.memory_rows(Traj(), 4)
    np.testing.assert_array_equal(rows[sequences.MEMORY], np.repeat(np.arange(3, dtype=np.float32)[:, None], 4, 1))
    np.testing.assert_array_equal(rows[sequences.SEQUENCE_POS], [0, 1, 2])
    with pytest.raises(ValueError, match="expected 6"):
        sequences.memory_rows(Traj(), 6)
    Traj.steps[1] = Step(None)
    with pytest.raises(ValueError, match="without memories"):
        sequences.memory_rows(Traj(), 4)
