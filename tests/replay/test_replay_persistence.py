"""save_replay / load_replay / inspect_replay: round trips, damaged files, spec mismatch, capacity change."""
import os
import struct

import numpy as np
import pytest

from mlagents_plugins.replay import (
    FieldSpec,
    ReplayBuffer,
    ReplayFileError,
    ReplayFileNotFoundError,
    ReplaySpecMismatchError,
)
from mlagents_plugins.replay.persistence import (
    FORMAT_VERSION,
    MAGIC,
    inspect_replay,
    load_replay,
    save_replay,
)

SPECS = {
    "obs": FieldSpec((4,), "float32"),
    "action": FieldSpec((2,), "int64"),
    "reward": FieldSpec((), "float32"),
    "done": FieldSpec((), "bool"),
    "image": FieldSpec((2, 3), "uint8"),
}


def rows(start: int, n: int) -> dict:
    g = np.arange(start, start + n)
    return {
        "obs": np.stack([g, -g, g * 0.5, g + 0.125], axis=1).astype(np.float32),
        "action": np.stack([g, 7 - g], axis=1),
        "reward": (g * 1.5).astype(np.float32),
        "done": g % 4 == 1,
        "image": (g[:, None, None] * np.arange(1, 7).reshape(2, 3)) % 251,
    }


def filled(capacity: int, chunks, prioritized: bool = False) -> ReplayBuffer:
    buf = ReplayBuffer(capacity, SPECS, prioritized=prioritized)
    total = 0
    for n in chunks:
        idx = buf.add(rows(total, n))
        total += n
        if prioritized:
            buf.update_priorities(idx, 0.5 + (idx * 37 % 11) / 3.0)
    return buf


def assert_same(a: ReplayBuffer, b: ReplayBuffer) -> None:
    assert (a.capacity, a.size, a.write_pos, a.total_added, a.segment_counter) == (
        b.capacity, b.size, b.write_pos, b.total_added, b.segment_counter)
    assert a.fields == b.fields
    for name in SPECS:
        np.testing.assert_array_equal(a.field_array(name), b.field_array(name))
        assert a.field_array(name).dtype == b.field_array(name).dtype
    np.testing.assert_array_equal(a.segment_array(), b.segment_array())
    all_rows = np.arange(a.capacity)
    for L in (1, 3, 6):
        np.testing.assert_array_equal(a.sequence_indices(all_rows, L)[1], b.sequence_indices(all_rows, L)[1])
    if a.size:
        filled_rows = np.arange(a.size)
        np.testing.assert_array_equal(a.steps_to_segment_end(filled_rows), b.steps_to_segment_end(filled_rows))
    assert a.prioritized == b.prioritized
    if a.prioritized:
        np.testing.assert_array_equal(a.priorities.priorities(), b.priorities.priorities())
        assert a.priorities.max_priority == b.priorities.max_priority
        assert a.priorities.total == pytest.approx(b.priorities.total)


@pytest.mark.parametrize(
    "capacity,chunks,prioritized",
    [(10, [], False), (10, [3, 4], False), (10, [3, 4, 6, 2, 9], False), (16, [5, 7, 30, 3], True),
     (9, [4, 2, 5], True)],
)
def test_round_trip_restores_everything(tmp_path, capacity, chunks, prioritized):
    buf = filled(capacity, chunks, prioritized)
    path = tmp_path / "replay.bin"
    extra = {"step": 12345, "updates": 77, "behavior": "Walker?team=0", "obs_spec": [[4], "float32"]}
    nbytes = save_replay(path, buf, extra)
    assert nbytes == os.path.getsize(path)
    loaded, got_extra = load_replay(path, expected_fields=SPECS)
    assert got_extra == extra
    assert_same(buf, loaded)
    # resume continues identically: same rows added to both give the same buffers
    for n in (2, 5, 11):
        ia, ib = buf.add(rows(1000 + n, n)), loaded.add(rows(1000 + n, n))
        np.testing.assert_array_equal(ia, ib)
    assert_same(buf, loaded)
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_file_contains_only_filled_rows(tmp_path):
    row_bytes = 4 * 4 + 2 * 8 + 4 + 1 + 6 + 8  # fields + int64 segment id
    for n in (0, 10, 20):
        path = tmp_path / f"r{n}"
        nbytes = save_replay(path, filled(1000, [n] if n else []))
        info = inspect_replay(path)
        assert info["payload_bytes"] == n * row_bytes
        header_len = struct.unpack("<Q", path.read_bytes()[12:20])[0]
        assert nbytes == 20 + header_len + n * row_bytes + 40  # prefix + header + payload + trailer


def test_capacity_change_keeps_newest_rows_in_order(tmp_path):
    buf = filled(10, [4, 3, 6, 5], prioritized=True)  # 18 rows added, newest 10 kept
    path = tmp_path / "r"
    save_replay(path, buf)
    chron = buf.chronological_indices()
    old_rows = buf.gather(chron)
    old_seg = buf.segment_ids(chron)
    old_pri = buf.priorities.priorities()[chron]
    for cap in (4, 7, 10, 25):
        new, _ = load_replay(path, capacity=cap)
        m = min(10, cap)
        # same capacity: exact ring layout; otherwise newest rows at ring rows 0..m-1
        assert (new.capacity, new.size, new.write_pos) == (cap, m, buf.write_pos if cap == 10 else m % cap)
        assert new.total_added == 18 and new.segment_counter == 4
        got = new.gather(new.chronological_indices())
        for name in SPECS:
            np.testing.assert_array_equal(got[name], old_rows[name][10 - m:])
        np.testing.assert_array_equal(new.segment_ids(new.chronological_indices()), old_seg[10 - m:])
        np.testing.assert_array_equal(new.priorities.priorities()[new.chronological_indices()], old_pri[10 - m:])
        # the oldest kept segment may be cut; windows never cross segments
        _, valid = new.sequence_indices(new.chronological_indices(), 3)
        ref_seg = old_seg[10 - m:]
        for s in range(m):
            for k in range(3):
                expect = s + k < m and ref_seg[s + k] == ref_seg[s]
                assert valid[s, k] == expect
        new.add(rows(500, 3))
        assert new.size == min(m + 3, cap)
    with pytest.raises(ValueError, match="capacity"):
        load_replay(path, capacity=0)


def test_missing_file(tmp_path):
    path = tmp_path / "nope"
    with pytest.raises(ReplayFileNotFoundError, match="does not exist") as e:
        load_replay(path)
    assert str(path) in str(e.value) and isinstance(e.value, FileNotFoundError)


def test_bad_extra_is_rejected_and_nothing_written(tmp_path):
    path = tmp_path / "r"
    with pytest.raises(ValueError, match="JSON-serialisable"):
        save_replay(path, filled(5, [2]), {"obj": object()})
    with pytest.raises(ValueError, match="dict"):
        save_replay(path, filled(5, [2]), [1, 2])
    assert os.listdir(tmp_path) == []


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.replay"
    save_replay(path, filled(12, [5, 4, 6], prioritized=True), {"step": 3})
    return path


def test_truncated_files_raise(good_file):
    data = good_file.read_bytes()
    header_len = struct.unpack("<Q", data[12:20])[0]
    # inside prefix, header, payload, trailer, and one byte short
    for cut in (0, 5, 19, 20 + header_len // 2, 20 + header_len + 7, len(data) - 20, len(data) - 1):
        good_file.write_bytes(data[:cut])
        with pytest.raises(ReplayFileError, match="truncated") as e:
            load_replay(good_file)
        assert str(good_file) in str(e.value)
        with pytest.raises(ReplayFileError, match="truncated"):
            inspect_replay(good_file)
    good_file.write_bytes(data + b"\0")
    with pytest.raises(ReplayFileError, match="1 more than"):
        load_replay(good_file)


def test_flipped_bytes_detected(good_file):
    data = good_file.read_bytes()
    header_len = struct.unpack("<Q", data[12:20])[0]
    payload_start = 20 + header_len
    positions = [payload_start, payload_start + 33, len(data) - 41, len(data) - 1]
    for pos in positions:
        bad = bytearray(data)
        bad[pos] ^= 0x01
        good_file.write_bytes(bytes(bad))
        with pytest.raises(ReplayFileError, match="checksum mismatch|end marker") as e:
            load_replay(good_file)
        assert str(good_file) in str(e.value)
        inspect_replay(good_file)  # header only: still readable
        with pytest.raises(ReplayFileError, match="checksum mismatch|end marker"):
            inspect_replay(good_file, verify=True)
    # a digit in the header changed (still valid JSON): caught by the checksum or header checks
    text = data[20:payload_start].decode()
    i = text.index('"step": 3')
    bad = data[: 20 + i] + text[i:].replace('"step": 3', '"step": 4', 1).encode() + data[payload_start:]
    good_file.write_bytes(bad)
    with pytest.raises(ReplayFileError, match="checksum mismatch"):
        load_replay(good_file)
    # header damaged into invalid JSON
    bad = bytearray(data)
    bad[21] = ord("}")
    good_file.write_bytes(bytes(bad))
    with pytest.raises(ReplayFileError, match="corrupt header"):
        load_replay(good_file)


def test_wrong_magic_and_version(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(b"NOTREPLY" + data[8:])
    with pytest.raises(ReplayFileError, match="magic bytes b'NOTREPLY'") as e:
        load_replay(good_file)
    assert str(good_file) in str(e.value)
    good_file.write_bytes(MAGIC + struct.pack("<I", FORMAT_VERSION + 1) + data[12:])
    with pytest.raises(ReplayFileError, match=f"format version {FORMAT_VERSION + 1}; this reader supports "
                                              f"version {FORMAT_VERSION}"):
        load_replay(good_file)
    good_file.write_bytes(b"")
    with pytest.raises(ReplayFileError, match="truncated or not a replay file"):
        inspect_replay(good_file)


def test_spec_mismatch_names_fields_and_path(good_file):
    expected = dict(SPECS)
    expected["obs"] = FieldSpec((5,), "float32")
    expected["reward"] = FieldSpec((), "float64")
    del expected["image"]
    expected["value"] = FieldSpec((), "float32")
    with pytest.raises(ReplaySpecMismatchError) as e:
        load_replay(good_file, expected_fields=expected)
    msg = str(e.value)
    assert str(good_file) in msg
    assert "field 'obs': file has shape (4,) dtype float32, expected shape (5,) dtype float32" in msg
    assert "field 'reward': file has shape () dtype float32, expected shape () dtype float64" in msg
    assert "field 'image': file has shape (2, 3) dtype uint8, expected not expected" in msg
    assert "field 'value': file has missing, expected shape () dtype float32" in msg
    assert "'action'" not in msg and "'done'" not in msg
    assert isinstance(e.value, ReplayFileError)
    # equivalent spellings of the same spec are accepted
    same = {k: FieldSpec(list(v.shape), np.dtype(v.dtype).str) for k, v in SPECS.items()}
    buf, extra = load_replay(good_file, expected_fields=same)
    assert extra == {"step": 3} and buf.size == 12


def test_inspect_reports_header(good_file):
    info = inspect_replay(good_file)
    assert info["count"] == 12 and info["capacity"] == 12 and info["total_added"] == 15
    assert info["write_pos"] == 3 and info["segment_counter"] == 3 and info["prioritized"] is True
    assert info["fields"]["image"] == {"shape": [2, 3], "dtype": "uint8"}
    assert info["bytes"] == os.path.getsize(good_file) and info["extra"] == {"step": 3}
    assert info["verified"] is None
    assert inspect_replay(good_file, verify=True)["verified"] is True


@pytest.mark.parametrize("capacity", [None, 6])
def test_load_switches_priorities_on_and_off(tmp_path, capacity):
    plain = filled(12, [5, 4, 6])
    with_pri = filled(12, [5, 4, 6], prioritized=True)
    save_replay(tmp_path / "plain", plain)
    save_replay(tmp_path / "pri", with_pri)
    on, _ = load_replay(tmp_path / "plain", capacity=capacity, prioritized=True)
    m = on.size
    assert on.prioritized and on.priorities.max_priority == 1.0
    np.testing.assert_array_equal(on.priorities.priorities()[:m], np.ones(m))
    np.testing.assert_array_equal(on.priorities.priorities()[m:], np.zeros(on.capacity - m))
    off, _ = load_replay(tmp_path / "pri", capacity=capacity, prioritized=False)
    assert not off.prioritized
    ref, _ = load_replay(tmp_path / "plain", capacity=capacity)
    assert_same(ref, off)
    kept, _ = load_replay(tmp_path / "pri", capacity=capacity)
    assert kept.prioritized and kept.priorities.max_priority == with_pri.priorities.max_priority
    with pytest.raises(ValueError, match="prioritized"):
        load_replay(tmp_path / "pri", prioritized="yes")
