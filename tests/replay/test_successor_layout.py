"""Successor fields stored once (``FieldSpec.next_of``) against the per-row layout of release 0.1.0, on the same rows
and seeds: every row of every field, samples, windows, priorities, n-step batches and targets, the MuZero window
batch, save/load, in memory and memory-mapped, through wrap-arounds and chunks longer than the ring."""
import numpy as np
import pytest
import torch

from mlagents_plugins.sac import losses
from mlagents_plugins.sac.batch import window_batch
from mlagents_plugins.muzero_repr.batch import model_batch
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.replay import FieldSpec, ReplayBuffer
from mlagents_plugins.replay.persistence import load_replay, save_replay
from mlagents_plugins.replay.storage import DiskStorage
from tests.builders import behavior_spec, trajectory

SPEC = behavior_spec(obs_shapes=((3, 4, 4), (2,)), cont=1, branches=(3,))


def per_row(fields):
    """The release's layout of the same fields: every field stored per row."""
    return {name: FieldSpec(spec.shape, spec.dtype) for name, spec in fields.items()}


def chunks(seed, n, longest=9):
    """Rows of ``n`` trajectory chunks: episode ends, time-outs and plain chunk ends, random action masks."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(1, longest + 1))
        masks = [[rng.random(3) < 0.3] for _ in range(length)]
        kind = rng.integers(0, 3)
        traj = trajectory(SPEC, length, rng, done=kind > 0, interrupted=kind == 2, agent_id=f"a{i % 3}",
                          masks=masks, reward=lambda t: float(rng.normal()))
        out.append(offpolicy_rows.trajectory_to_rows(SPEC, traj))
    return out


def twins(capacity, prioritized=False, tmp_path=None, spare=0):
    """(release layout, stored once) buffers; the second memory-mapped when ``tmp_path`` is given."""
    fields = offpolicy_rows.transition_fields(SPEC)
    old = ReplayBuffer(capacity, per_row(fields), prioritized=prioritized)
    storage = DiskStorage.create(str(tmp_path), "replay") if tmp_path is not None else None
    new = ReplayBuffer(capacity, fields, prioritized=prioritized, storage=storage, physical_rows=capacity + spare)
    return old, new


def assert_same_rows(old, new):
    every = np.arange(old.capacity)
    a, b = old.gather(every), new.gather(every)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    np.testing.assert_array_equal(old.segment_ids(every), new.segment_ids(every))
    np.testing.assert_array_equal(old.steps_to_segment_end(every), new.steps_to_segment_end(every))
    for length in (1, 4):
        for x, y in zip(old.sequence_indices(every, length), new.sequence_indices(every, length)):
            np.testing.assert_array_equal(x, y)
    assert (old.size, old.write_pos, old.total_added, old.segment_counter) == (
        new.size, new.write_pos, new.total_added, new.segment_counter)


def test_next_of_must_name_a_stored_field_of_the_same_shape_and_dtype():
    ok = {"o": FieldSpec((2,), "uint8"), "n": FieldSpec((2,), "uint8", next_of="o")}
    assert ReplayBuffer(4, ok).successors == {"n": "o"}
    assert FieldSpec.from_json(ok["n"].to_json()) == ok["n"] and "next_of" not in ok["o"].to_json()
    with pytest.raises(ValueError, match="next_of 'x'"):
        ReplayBuffer(4, {"o": ok["o"], "n": FieldSpec((2,), "uint8", next_of="x")})
    with pytest.raises(ValueError, match="shape and dtype"):
        ReplayBuffer(4, {"o": ok["o"], "n": FieldSpec((2,), "float32", next_of="o")})
    with pytest.raises(ValueError, match="not itself a next_of"):
        ReplayBuffer(4, dict(ok, m=FieldSpec((2,), "uint8", next_of="n")))


def test_add_refuses_successor_rows_that_are_not_the_next_rows():
    buf = ReplayBuffer(8, offpolicy_rows.transition_fields(SPEC))
    traj = trajectory(SPEC, 3, np.random.default_rng(0))
    rows = offpolicy_rows.trajectory_to_rows(SPEC, traj)
    buf.add(rows)
    rows["next_obs_1"][1] = rows["obs_1"][2] + 1
    with pytest.raises(ValueError, match="'next_obs_1' is the next row's 'obs_1'.*row 1 of this segment"):
        buf.add(rows)
    rows["next_obs_1"][1] = rows["obs_1"][2]
    rows["next_obs_1"][2] += 1  # the last row's own value is the segment's final: anything goes
    buf.add(rows)
    assert buf.size == 6
    rows["next_obs_1"][0] = rows["obs_1"][1] + 1
    with pytest.raises(ValueError, match="row 0 of this segment differs from row 1's 'obs_1'"):
        buf.add(rows)
    assert buf.size == 6


@pytest.mark.parametrize("capacity,prioritized", [(7, False), (16, True), (33, True)])
@pytest.mark.parametrize("disk", [False, True])
def test_every_row_and_sample_equals_the_per_row_layout(tmp_path, capacity, prioritized, disk):
    old, new = twins(capacity, prioritized, tmp_path if disk else None, spare=5 if disk else 0)
    rng_old, rng_new = np.random.default_rng(1), np.random.default_rng(1)
    for rows in chunks(capacity, 40):
        np.testing.assert_array_equal(old.add(rows), new.add(rows))
        assert_same_rows(old, new)
        idx = old.sample_indices(5, rng_old)
        np.testing.assert_array_equal(idx, new.sample_indices(5, rng_new))
        if prioritized:
            pri = np.abs(np.sin(idx * 1.7)) + 0.1
            old.update_priorities(idx, pri)
            new.update_priorities(idx, pri)
            for x, y in zip(old.sample_prioritized(6, rng_old), new.sample_prioritized(6, rng_new)):
                np.testing.assert_array_equal(x, y)
    assert old.total_added > 3 * capacity  # wrapped several times
    if not disk:  # one frame per row plus one per live segment: never more than a frame per row more
        assert new.nbytes <= old.nbytes
        if new.finals_slots < capacity:
            assert new.nbytes < old.nbytes


def test_chunk_longer_than_the_ring_and_the_newest_row_before_the_oldest():
    old, new = twins(6)
    rng = np.random.default_rng(3)
    for length in (3, 4, 10, 2):  # the 10-row chunk keeps only its newest 6 rows
        traj = trajectory(SPEC, length, rng, done=True, interrupted=length == 10)
        rows = offpolicy_rows.trajectory_to_rows(SPEC, traj)
        old.add(rows)
        new.add(rows)
        assert_same_rows(old, new)
    newest = (new.write_pos - 1) % new.capacity
    assert new.size == new.capacity and new.steps_to_segment_end(np.array([newest]))[0] == 0
    # the newest row's ring successor is the oldest row: its next observation is its segment's final
    np.testing.assert_array_equal(new.gather(np.array([newest]))["next_obs_0"][0], traj.next_obs[0] * 0 +
                                  old.gather(np.array([newest]))["next_obs_0"][0])
    np.testing.assert_array_equal(new.gather(np.array([newest]))["next_obs_1"][0], traj.next_obs[1])


def test_finals_table_grows_with_many_short_segments():
    old, new = twins(40)
    slots = new.finals_slots
    for rows in chunks(9, 60, longest=1):  # one-row segments: every row is a segment's last
        old.add(rows)
        new.add(rows)
    assert new.finals_slots >= 40 > slots
    assert_same_rows(old, new)


@pytest.mark.parametrize("n_step", [1, 3])
def test_sac_windows_and_n_step_targets_equal_the_per_row_layout(n_step):
    old, new = twins(32, prioritized=True)
    for rows in chunks(11, 14):
        old.add(rows)
        new.add(rows)
    start = np.random.default_rng(2).integers(0, old.size, 24)

    def rewards(idx, window):
        return np.stack([window[offpolicy_rows.REWARD], 0.5 * window[offpolicy_rows.REWARD]], -1)

    batches = [window_batch(buf, start, None, n_step, SPEC, rewards, [0.99, 0.9], [1.0, 0.0], torch.device("cpu"))
               for buf in (old, new)]
    for key, a in batches[0]._asdict().items():
        b = batches[1]._asdict()[key]
        for x, y in zip(a, b) if isinstance(a, list) else [(a, b)]:
            assert (x is None) == (y is None), key
            if x is not None:
                assert torch.equal(x, y), key
    # targets bootstrap from a value of the window's bootstrap observation (asymmetric in both inputs)
    targets = []
    for batch in batches:
        v_t = torch.stack([batch.s_t[0].mean(dim=(1, 2, 3)) - batch.s_t[1][:, 1],
                           batch.s_t[1][:, 0] * 2.0], -1)
        targets.append(losses.n_step_targets(batch.r_t, batch.discount_t, batch.valid_t, v_t))
    for x, y in zip(*targets):
        assert torch.equal(x, y)


def test_muzero_window_batch_equals_the_per_row_layout():
    old, new = twins(30)
    for rows in chunks(12, 12):
        old.add(rows)
        new.add(rows)
    starts = np.random.default_rng(3).integers(0, old.size, 10)
    batches = []
    for buf in (old, new):
        batches.append(model_batch(buf, starts, None, SPEC, num_unroll_steps=3, td_steps=2, reward_scale=1.0,
                                   with_future_obs=True, actions_after_end="random", shift_pad=0,
                                   torch_rng=torch.Generator().manual_seed(0), device=torch.device("cpu")))
    for key, a in batches[0]._asdict().items():
        b = batches[1]._asdict()[key]
        for x, y in zip(a, b) if isinstance(a, list) else [(a, b)]:
            if isinstance(x, torch.Tensor):
                assert torch.equal(x, y), key
            else:
                np.testing.assert_array_equal(x, y, err_msg=key)


@pytest.mark.parametrize("capacity", [None, 9, 50])
def test_save_load_keeps_rows_and_a_release_file_converts(tmp_path, capacity):
    old, new = twins(20, prioritized=True)
    for rows in chunks(13, 9):
        old.add(rows)
        new.add(rows)
    save_replay(tmp_path / "new", new, {"step": 1})
    save_replay(tmp_path / "old", old, {"step": 1})
    fields = offpolicy_rows.transition_fields(SPEC)
    a, _ = load_replay(tmp_path / "old", capacity=capacity)  # per row, as saved
    b, _ = load_replay(tmp_path / "new", expected_fields=fields, capacity=capacity)
    c, _ = load_replay(tmp_path / "old", expected_fields=fields, capacity=capacity)  # per row -> stored once
    assert b.successors == c.successors == {"next_obs_0": "obs_0", "next_obs_1": "obs_1",
                                            "next_action_mask": "action_mask"}
    assert_same_rows(a, b)
    assert_same_rows(a, c)
    np.testing.assert_array_equal(a.priorities.priorities(), b.priorities.priorities())
    assert (tmp_path / "new").stat().st_size < (tmp_path / "old").stat().st_size
    for rows in chunks(14, 3):  # and they continue alike
        a.add(rows)
        b.add(rows)
    assert_same_rows(a, b)


def test_a_per_row_file_whose_next_rows_differ_is_refused(tmp_path):
    old, _ = twins(20)
    for rows in chunks(15, 5):
        old.add(rows)
    old.field_array("next_obs_1")[3] += 1.0  # not the next row's observation any more
    if old.steps_to_segment_end(np.array([3]))[0] == 0:
        old.field_array("next_obs_1")[4] += 1.0
    save_replay(tmp_path / "odd", old)
    from mlagents_plugins.replay import ReplayFileError

    with pytest.raises(ReplayFileError, match="'next_obs_1' of ring row [34] is not the next row's 'obs_1'"):
        load_replay(tmp_path / "odd", expected_fields=offpolicy_rows.transition_fields(SPEC))
