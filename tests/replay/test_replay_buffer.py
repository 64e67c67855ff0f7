"""ReplayBuffer against a naive Python-list FIFO model (contents, order, segments, sequences)."""
import numpy as np
import pytest

from mlagents_plugins.replay import FieldSpec, ReplayBuffer

SPECS = {
    "obs": FieldSpec((3,), "float32"),
    "action": FieldSpec((2,), "int64"),
    "reward": FieldSpec((), "float32"),
    "done": FieldSpec((), "bool"),
}


def make_rows(start: int, n: int) -> dict:
    """Rows whose values encode their global row number ``g`` so order mistakes show up."""
    g = np.arange(start, start + n, dtype=np.float64)
    return {
        "obs": np.stack([g, g + 0.25, -g], axis=1),  # float64 in: cast to float32
        "action": np.stack([g, 2 * g + 1], axis=1).astype(np.int32),
        "reward": g * 0.5,
        "done": (g.astype(np.int64) % 3 == 0).astype(np.int64),  # ints in: cast to bool
    }


class FifoModel:
    """Naive reference: list of (global row number, segment id), newest last, at most ``cap`` entries."""

    def __init__(self, cap: int):
        self.cap, self.rows, self.total, self.segments = cap, [], 0, 0

    def add(self, n: int) -> None:
        if n == 0:
            return
        for i in range(n):
            self.rows.append((self.total + i, self.segments))
        self.total += n
        self.segments += 1
        while len(self.rows) > self.cap:
            self.rows.pop(0)


def ring_index_of_time_pos(cap: int, total: int, size: int, p: int) -> int:
    """Ring index of the p-th oldest row, computed by a loop over all writes (no modular shortcut)."""
    owner = {}
    for g in range(total):
        owner[g % cap] = g
    newest_first = sorted(owner.items(), key=lambda kv: kv[1])
    return newest_first[len(newest_first) - size + p][0]


def check_against_model(buf: ReplayBuffer, model: FifoModel) -> None:
    assert len(buf) == buf.size == len(model.rows)
    assert buf.total_added == model.total
    assert buf.segment_counter == model.segments
    assert buf.write_pos == model.total % model.cap
    chron = buf.chronological_indices()
    for p in range(len(model.rows)):
        assert chron[p] == ring_index_of_time_pos(model.cap, model.total, len(model.rows), p)
    got = buf.gather(chron)
    expect = make_rows(0, model.total)
    g = np.array([r[0] for r in model.rows], dtype=np.int64)
    for name, spec in SPECS.items():
        assert got[name].dtype == np.dtype(spec.dtype)
        np.testing.assert_array_equal(got[name], expect[name][g].astype(spec.dtype))
    np.testing.assert_array_equal(buf.segment_ids(chron), [r[1] for r in model.rows])


def test_wraparound_uneven_chunks_matches_fifo_model():
    cap = 7
    buf, model = ReplayBuffer(cap, SPECS), FifoModel(cap)
    for n in [3, 5, 1, 9, 2, 0, 6, 7, 4, 13, 1, 1]:
        before = buf.write_pos
        idx = buf.add(make_rows(model.total, n))
        m = min(n, cap)
        assert idx.shape == (m,)
        # returned indices are the ring rows of the newest m rows, in time order
        assert list(idx) == [(before + n - m + k) % cap for k in range(m)]
        model.add(n)
        check_against_model(buf, model)


def test_add_validates_fields_and_shapes():
    buf = ReplayBuffer(4, SPECS)
    rows = make_rows(0, 2)
    bad = dict(rows)
    del bad["reward"]
    with pytest.raises(ValueError, match="missing \\['reward'\\]"):
        buf.add(bad)
    with pytest.raises(ValueError, match="unexpected \\['value'\\]"):
        buf.add({**rows, "value": np.zeros(2)})
    with pytest.raises(ValueError, match=r"'obs' expected shape \[n, 3\].*got \(2, 4\)"):
        buf.add({**rows, "obs": np.zeros((2, 4))})
    with pytest.raises(ValueError, match=r"'reward' expected shape \[n\].*got \(2, 1\)"):
        buf.add({**rows, "reward": np.zeros((2, 1))})
    with pytest.raises(ValueError, match="'done' has 3 rows but field 'obs' has 2"):
        buf.add({**rows, "done": np.zeros(3)})
    assert buf.size == 0 and buf.total_added == 0 and buf.segment_counter == 0
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0, SPECS)
    with pytest.raises(ValueError, match="dtype"):
        FieldSpec((2,), "not_a_dtype")


def naive_sequence(model: FifoModel, cap: int, start: int, length: int):
    """valid[k] for the window starting at ring row ``start`` from the model's time-ordered list."""
    size = len(model.rows)
    ring_to_pos = {}
    for p in range(size):
        ring_to_pos[ring_index_of_time_pos(cap, model.total, size, p)] = p
    valid = []
    for k in range(length):
        if start not in ring_to_pos:
            valid.append(False)
            continue
        p = ring_to_pos[start]
        ok = p + k < size and model.rows[p + k][1] == model.rows[p][1]
        if ok:
            assert ring_index_of_time_pos(cap, model.total, size, p + k) == (start + k) % cap
        valid.append(ok)
    return valid


def naive_steps_to_end(model: FifoModel, pos: int) -> int:
    steps = 0
    while pos + steps + 1 < len(model.rows) and model.rows[pos + steps + 1][1] == model.rows[pos][1]:
        steps += 1
    return steps


@pytest.mark.parametrize("chunks", [[2, 3], [4, 1, 3, 2, 5, 1], [11], [3, 9, 2, 2, 1, 6]])
def test_sequence_validity_and_segment_end_across_wrap(chunks):
    cap, length = 8, 4
    buf, model = ReplayBuffer(cap, SPECS), FifoModel(cap)
    for n in chunks:
        buf.add(make_rows(model.total, n))
        model.add(n)
    starts = np.arange(cap)
    idx, valid = buf.sequence_indices(starts, length)
    assert idx.shape == valid.shape == (cap, length)
    for s in range(cap):
        assert list(idx[s]) == [(s + k) % cap for k in range(length)]
        assert list(valid[s]) == naive_sequence(model, cap, s, length), (s, chunks)
    chron = buf.chronological_indices()
    steps = buf.steps_to_segment_end(chron)
    assert list(steps) == [naive_steps_to_end(model, p) for p in range(len(model.rows))]
    # a [B, L] start array keeps its shape
    idx2, valid2 = buf.sequence_indices(np.array([[0, 1], [2, 3]]), length)
    assert idx2.shape == valid2.shape == (2, 2, length)
    np.testing.assert_array_equal(valid2.reshape(4, length), valid[:4])


def test_sampling_covers_only_filled_rows():
    rng = np.random.default_rng(0)
    buf = ReplayBuffer(10, SPECS)
    with pytest.raises(ValueError, match="empty"):
        buf.sample_indices(4, rng)
    buf.add(make_rows(0, 4))
    s = buf.sample_indices(4000, rng)
    assert s.min() >= 0 and s.max() < 4
    assert set(np.unique(s)) == {0, 1, 2, 3}
    counts = np.bincount(s, minlength=4)
    assert np.all(np.abs(counts - 1000) < 150)
    buf.add(make_rows(4, 13))
    s = buf.sample_indices(5000, rng)
    assert set(np.unique(s)) == set(range(10))
    with pytest.raises(ValueError, match="batch_size"):
        buf.sample_indices(0, rng)


def test_gather_shapes_and_errors():
    buf = ReplayBuffer(6, SPECS)
    buf.add(make_rows(0, 5))
    idx, valid = buf.sequence_indices(np.array([0, 2, 4]), 3)
    out = buf.gather(idx)
    assert out["obs"].shape == (3, 3, 3) and out["obs"].dtype == np.float32
    assert out["action"].shape == (3, 3, 2) and out["reward"].shape == (3, 3)
    assert out["done"].dtype == np.bool_
    np.testing.assert_array_equal(out["reward"][:, 0], [0.0, 1.0, 2.0])
    sub = buf.gather(np.array([4, 1]), fields=["reward"])
    assert list(sub) == ["reward"]
    np.testing.assert_array_equal(sub["reward"], [2.0, 0.5])
    # gather returns copies: writing into them does not change the buffer
    sub["reward"][:] = 99
    assert buf.gather(np.array([4]))["reward"][0] == 2.0
    with pytest.raises(ValueError, match="unknown fields \\['value'\\]"):
        buf.gather(np.array([0]), fields=["value"])
    with pytest.raises(IndexError, match=r"\[0, 6\)"):
        buf.gather(np.array([6]))  # outside the ring
    # gathering a window with unwritten rows works; the mask tells which steps are real
    assert not valid[2, 1:].any()
    np.testing.assert_array_equal(out["reward"][2], [2.0, 0.0, 0.0])


def test_prioritized_buffer_new_rows_get_max_priority():
    buf = ReplayBuffer(5, SPECS, prioritized=True)
    idx = buf.add(make_rows(0, 3))
    np.testing.assert_array_equal(buf.priorities.priorities(), [1, 1, 1, 0, 0])
    buf.update_priorities(idx, np.array([0.5, 4.0, 2.0]))
    idx2 = buf.add(make_rows(3, 3))  # rows 3, 4 and overwrites row 0
    assert list(idx2) == [3, 4, 0]
    np.testing.assert_array_equal(buf.priorities.priorities(), [4.0, 4.0, 2.0, 4.0, 4.0])
    rng = np.random.default_rng(0)
    i, p = buf.sample_prioritized(10, rng)
    np.testing.assert_allclose(p, buf.priorities.priorities()[i] / 18.0)
    with pytest.raises(IndexError):
        ReplayBuffer(5, SPECS, prioritized=True).update_priorities(np.array([0]), np.array([1.0]))
    with pytest.raises(ValueError, match="prioritized=True"):
        ReplayBuffer(5, SPECS).sample_prioritized(1, rng)
