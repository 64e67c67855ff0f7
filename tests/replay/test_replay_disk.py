"""Disk-backed replay buffers: memory-mapped rows behave as in memory; a save flushes them and writes only the small
state; reopening is exact after a crash at any moment, refuses a state whose rows were overwritten, and reports a
damaged or replaced rows folder without touching it."""
import os

import numpy as np
import pytest

from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.replay import ReplayBuffer, ReplayFileError
from mlagents_plugins.replay import persistence
from mlagents_plugins.replay.cli import main as replay_cli
from mlagents_plugins.replay.persistence import OVERWRITTEN_SUFFIX, inspect_replay, load_replay, save_replay_state
from mlagents_plugins.replay.storage import DiskStorage
from tests.builders import behavior_spec, trajectory

SPEC = behavior_spec(obs_shapes=((3, 8, 8), (2,)), cont=1, branches=(2,))
FIELDS = offpolicy_rows.transition_fields(SPEC)
STATE = "replay_buffer.mlreplay"


def chunk_rows(rng, length):
    traj = trajectory(SPEC, length, rng, done=bool(rng.integers(0, 2)), interrupted=bool(rng.integers(0, 2)),
                      reward=lambda t: float(rng.normal()))
    return offpolicy_rows.trajectory_to_rows(SPEC, traj)


def disk_buffer(folder, capacity=24, spare=12, prioritized=True):
    storage = DiskStorage.create(str(folder), STATE)
    return ReplayBuffer(capacity, FIELDS, prioritized=prioritized, storage=storage, physical_rows=capacity + spare)


def fill(buffers, rng, n, length=5):
    for _ in range(n):
        rows = chunk_rows(rng, int(rng.integers(1, length + 1)))
        idx = [b.add(rows) for b in buffers]
        for b in buffers:
            if b.prioritized:
                b.update_priorities(idx[0], 0.5 + (idx[0] % 5))


def snapshot(buf):
    every = np.arange(buf.capacity)
    out = {f"row:{k}": v for k, v in buf.gather(every).items()}
    out["segments"] = buf.segment_ids(every)
    out["counters"] = np.array([buf.size, buf.write_pos, buf.total_added, buf.segment_counter])
    if buf.prioritized:
        out["priorities"] = buf.priorities.priorities()
    return out


def assert_snapshot(buf, snap):
    got = snapshot(buf)
    assert sorted(got) == sorted(snap)
    for k, v in snap.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def reopen(folder, **kw):
    return load_replay(os.path.join(folder, STATE), expected_fields=FIELDS, reopen=True, **kw)


def test_reopen_after_a_crash_is_the_last_save_exactly_and_continues_like_memory(tmp_path):
    rng = np.random.default_rng(0)
    mem = ReplayBuffer(24, FIELDS, prioritized=True)
    disk = disk_buffer(tmp_path)
    fill([mem, disk], rng, 12)  # wrapped
    save_replay_state(tmp_path / STATE, disk, {"step": 7})
    saved = snapshot(mem)
    rows_folder = disk.storage.folder
    inode = os.stat(os.path.join(rows_folder, "row-obs_0.bin")).st_ino
    fill([disk], rng, 2)  # rows after the save, then the process dies without saving
    del disk
    again, extra = reopen(tmp_path)
    assert extra == {"step": 7} and again.storage.folder == rows_folder
    assert os.stat(os.path.join(rows_folder, "row-obs_0.bin")).st_ino == inode  # rows were never rewritten
    assert_snapshot(again, saved)
    fill([mem, again], np.random.default_rng(5), 9)  # continues exactly as the memory twin
    assert_snapshot(again, snapshot(mem))
    save_replay_state(tmp_path / STATE, again, {"step": 8})
    assert_snapshot(reopen(tmp_path)[0], snapshot(mem))


def test_the_state_file_holds_no_rows(tmp_path):
    disk = disk_buffer(tmp_path, capacity=200, spare=20, prioritized=False)
    fill([disk], np.random.default_rng(1), 30)
    nbytes = save_replay_state(tmp_path / STATE, disk, {"step": 1})
    assert nbytes < 8 * 1024  # counters and where the rows are; rows stay in the mapped files
    info = inspect_replay(tmp_path / STATE, verify=True)
    assert info["storage"]["kind"] == "disk" and info["storage"]["physical_rows"] == 220
    assert info["count"] == disk.size and info["payload_bytes"] == 0


def test_a_crash_between_flushing_the_rows_and_writing_the_state_leaves_the_previous_save(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    disk = disk_buffer(tmp_path)
    fill([disk], rng, 6)
    save_replay_state(tmp_path / STATE, disk, {"step": 1})
    first = snapshot(disk)
    fill([disk], rng, 2)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process ends after the rows' msync, before the state is replaced

    monkeypatch.setattr(persistence, "_write_atomically", killed)
    with pytest.raises(KeyboardInterrupt):
        save_replay_state(tmp_path / STATE, disk, {"step": 2})
    monkeypatch.undo()
    del disk
    again, extra = reopen(tmp_path)
    assert extra == {"step": 1}
    assert_snapshot(again, first)


def test_more_rows_than_the_spare_ones_mark_the_save_and_reopening_it_refuses(tmp_path):
    rng = np.random.default_rng(3)
    disk = disk_buffer(tmp_path, capacity=24, spare=6)
    fill([disk], rng, 10)
    save_replay_state(tmp_path / STATE, disk, {"step": 1})
    mark = tmp_path / (STATE + OVERWRITTEN_SUFFIX)
    while disk.total_added < 48:
        fill([disk], rng, 1)
    assert mark.exists()
    state_bytes = (tmp_path / STATE).read_bytes()
    with pytest.raises(ReplayFileError, match="written past this save.*rows came after the save"):
        reopen(tmp_path)
    assert (tmp_path / STATE).read_bytes() == state_bytes  # reported, not replaced
    save_replay_state(tmp_path / STATE, disk, {"step": 2})  # the next save is good again
    assert not mark.exists()
    assert_snapshot(reopen(tmp_path)[0], snapshot(disk))


def test_finals_of_the_save_survive_a_finals_table_that_grows_after_it(tmp_path):
    rng = np.random.default_rng(4)
    disk = disk_buffer(tmp_path, capacity=64, spare=64, prioritized=False)
    fill([disk], rng, 10, length=3)
    save_replay_state(tmp_path / STATE, disk, {})
    saved, slots = snapshot(disk), disk.finals_slots
    for _ in range(40):  # one-row segments: the finals table must grow
        disk.add(chunk_rows(rng, 1))
    assert disk.finals_slots > slots
    del disk
    assert_snapshot(reopen(tmp_path)[0], saved)


def test_copies_into_memory_another_capacity_or_another_store(tmp_path):
    rng = np.random.default_rng(5)
    mem = ReplayBuffer(24, FIELDS, prioritized=True)
    disk = disk_buffer(tmp_path)
    fill([mem, disk], rng, 12)
    save_replay_state(tmp_path / STATE, disk, {})
    copy, _ = load_replay(tmp_path / STATE, expected_fields=FIELDS)  # into memory
    assert not copy.storage.persistent
    assert_snapshot(copy, snapshot(mem))
    smaller, _ = load_replay(tmp_path / STATE, expected_fields=FIELDS, capacity=10)
    chron = mem.chronological_indices()[-10:]
    np.testing.assert_array_equal(smaller.gather(np.arange(10))["next_obs_0"], mem.gather(chron)["next_obs_0"])
    other = tmp_path / "other"
    other.mkdir()
    made, _ = load_replay(tmp_path / STATE, expected_fields=FIELDS, reopen=False,
                          new_buffer=lambda c, f, p: disk_buffer(other, c, 3, p))
    assert made.storage.folder.startswith(str(other))
    assert_snapshot(made, snapshot(mem))


def test_a_damaged_or_replaced_rows_folder_is_reported_and_left_alone(tmp_path):
    disk = disk_buffer(tmp_path)
    fill([disk], np.random.default_rng(6), 6)
    save_replay_state(tmp_path / STATE, disk, {})
    folder = disk.storage.folder
    del disk
    row_file = os.path.join(folder, "row-obs_0.bin")
    data = open(row_file, "rb").read()
    with open(row_file, "r+b") as f:
        f.truncate(len(data) - 1)
    with pytest.raises(ReplayFileError, match="row-obs_0.bin.*bytes, expected"):
        reopen(tmp_path)
    assert os.path.getsize(row_file) == len(data) - 1
    with open(row_file, "r+b") as f:
        f.truncate(len(data))
    meta = os.path.join(folder, "meta.json")
    text = open(meta).read()
    with open(meta, "w") as f:
        f.write(text.replace('"store_id": "', '"store_id": "x'))
    with pytest.raises(ReplayFileError, match="the folder was replaced"):
        reopen(tmp_path)
    os.rename(folder, folder + "-moved")
    with pytest.raises(ReplayFileError, match="missing or not a replay rows folder"):
        reopen(tmp_path)
    assert os.path.isdir(folder + "-moved")


def test_cli_inspects_a_disk_state(tmp_path, capsys):
    disk = disk_buffer(tmp_path)
    fill([disk], np.random.default_rng(7), 4)
    save_replay_state(tmp_path / STATE, disk, {"step": 3})
    assert replay_cli(["inspect", str(tmp_path / STATE), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "storage:        disk" in out and os.path.basename(disk.storage.folder) in out
    assert "next_obs_0" in out and "next row of obs_0" in out
