"""Replay files written by release 0.1.0 (tests/data/release-0.1.0/replay, made by the release code) load with the same
rows, samples, windows and priorities the release read from them, and a run resumes from them and trains on."""
import importlib.util
import os
import shutil

import numpy as np
import pytest
from mlagents.trainers.agent_processor import AgentManagerQueue

from mlagents_plugins.replay.persistence import inspect_replay, load_replay
from tests.builders import behavior_spec, trajectory

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "release-0.1.0",
                           "replay")
_spec = importlib.util.spec_from_file_location("release_fixture", os.path.join(FIXTURE_DIR, "make_fixture.py"))
release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release)  # the fixture's settings and seeds; puts tests/fast_sac on sys.path
from helpers import make_trainer  # noqa: E402

NAMES = sorted(release.FIXTURES)


def _expected(name):
    with np.load(os.path.join(FIXTURE_DIR, name, "expected.npz")) as z:
        return {k: z[k] for k in z.files}


def _run_folder(tmp_path, name):
    """A run folder holding the fixture's behavior files, as ``--resume`` finds them."""
    os.makedirs(tmp_path / "B")
    for f in release.FILES:
        shutil.copyfile(os.path.join(FIXTURE_DIR, name, f), tmp_path / "B" / f)
    return tmp_path


def _trainer(name, folder, **kw):
    fx = release.FIXTURES[name]
    # release 0.1.0 did not shift camera frames (DrQ came with 0.2.0): with the shifts off a resumed run's batch is
    # the release's batch bit for bit
    return make_trainer(behavior_spec(**fx["spec"]), folder, seed=3, **dict(fx["hyper"], random_shift_pad=0, **kw))


def _assert_rows(replay, exp):
    every = np.arange(replay.capacity)
    got = replay.gather(every)
    fields = sorted(k[len("rows/"):] for k in exp if k.startswith("rows/"))
    assert sorted(got) == fields
    for field in fields:
        assert got[field].dtype == exp[f"rows/{field}"].dtype, field
        np.testing.assert_array_equal(got[field], exp[f"rows/{field}"], err_msg=field)
    np.testing.assert_array_equal(replay.segment_ids(every), exp["segments"])


@pytest.mark.parametrize("name", NAMES)
def test_release_file_loads_with_the_rows_samples_and_windows_the_release_read(tmp_path, name):
    exp = _expected(name)
    layout = _trainer(name, tmp_path / "fresh").replay_layout(behavior_spec(**release.FIXTURES[name]["spec"]))
    replay, extra = load_replay(os.path.join(FIXTURE_DIR, name, release.FILES[0]), expected_fields=layout)
    assert (replay.size, replay.write_pos, replay.total_added, replay.segment_counter) == (
        exp["size"], exp["write_pos"], exp["total_added"], exp["segment_counter"])
    assert replay.size == replay.capacity and replay.total_added > replay.capacity  # the ring has wrapped
    assert (extra["step"], extra["num_updates"]) == (exp["step"], exp["num_updates"])
    _assert_rows(replay, exp)
    np.testing.assert_array_equal(replay.steps_to_segment_end(np.arange(replay.size)), exp["steps_to_end"])
    idx = replay.sample_indices(release.BATCH, np.random.default_rng(release.SAMPLE_SEED))
    np.testing.assert_array_equal(idx, exp["uniform_idx"])
    seq, valid = replay.sequence_indices(idx, release.WINDOW)
    np.testing.assert_array_equal(seq, exp["seq_idx"])
    np.testing.assert_array_equal(valid, exp["seq_valid"])
    for field, a in replay.gather(seq).items():
        np.testing.assert_array_equal(a, exp[f"rows/{field}"][seq], err_msg=field)
    assert replay.prioritized == ("priorities" in exp)
    if replay.prioritized:
        np.testing.assert_array_equal(replay.priorities.priorities(), exp["priorities"])
        per_idx, per_prob = replay.sample_prioritized(release.BATCH, np.random.default_rng(release.PER_SEED))
        np.testing.assert_array_equal(per_idx, exp["per_idx"])
        np.testing.assert_array_equal(per_prob, exp["per_prob"])
    info = inspect_replay(os.path.join(FIXTURE_DIR, name, release.FILES[0]), verify=True)
    assert info["verified"] and info["count"] == exp["size"]


# SACBatch field -> the name release 0.1.0's fixture stored it under (the fields were renamed by time index)
RELEASE_BATCH_NAMES = {"s_tm1": "obs", "s_t": "next_obs", "a_tm1_cont": "cont_actions", "a_tm1_disc": "disc_actions",
                       "mask_tm1": "action_mask", "mask_t": "next_action_mask"}


@pytest.mark.parametrize("name", NAMES)
def test_resume_from_a_release_run_folder_gives_the_release_batch_and_trains_on(tmp_path, name):
    exp = _expected(name)
    folder = _run_folder(tmp_path, name)
    trainer = _trainer(name, folder, load=True)
    assert trainer.get_step == exp["step"] and trainer.num_updates == exp["num_updates"]
    _assert_rows(trainer.replay, exp)
    batch = trainer.sample_batch()  # the rng state came back from the file: the release's first batch
    np.testing.assert_array_equal(trainer._last_indices, exp["batch/start"])
    for key, value in batch._asdict().items():
        stored = RELEASE_BATCH_NAMES.get(key, key)  # the release named the batch fields differently
        if value is None:
            assert not any(k.startswith(f"batch/{stored}") for k in exp), key
            continue
        for i, t in enumerate(value) if isinstance(value, list) else [(None, value)]:
            ref = exp[f"batch/{stored}" if i is None else f"batch/{stored}/{i}"]
            np.testing.assert_array_equal(t.numpy(), ref, err_msg=key)

    # trains on: more chunks, updates at the saved ratio, a save, and a second resume reads what it saved
    spec = behavior_spec(**release.FIXTURES[name]["spec"])
    queue = AgentManagerQueue("B?team=0")
    trainer.subscribe_trajectory_queue(queue)
    rng = np.random.default_rng(5)
    for i in range(3):
        queue.put(trajectory(spec, 6, rng, done=i == 1, agent_id=f"a{i % 2}",
                             masks=release.masks_for(spec, 6, rng)))
        trainer.advance()
    hp = trainer.hyperparameters
    assert trainer.num_updates == int((trainer.get_step - hp.buffer_init_steps) / hp.steps_per_update)
    trainer.save_model()
    again = _trainer(name, folder, load=True)
    every = np.arange(trainer.replay.capacity)
    for field, a in trainer.replay.gather(every).items():
        np.testing.assert_array_equal(again.replay.gather(every)[field], a, err_msg=field)
    assert again.num_updates == trainer.num_updates and again.replay.write_pos == trainer.replay.write_pos
