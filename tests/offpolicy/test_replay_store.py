"""ReplayStore through a trainer: ``replay_storage`` memory and disk resume alike and exactly, also after a kill
between checkpoints; switching storage on --resume keeps the rows; a damaged disk state stops the run untouched."""
import logging
import os

import numpy as np
import pytest
from helpers import make_trainer
from mlagents.trainers.agent_processor import AgentManagerQueue
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.replay.errors import ReplayFileError
from tests.builders import behavior_spec, trajectory

SPEC = behavior_spec(obs_shapes=((3, 6, 6), (2,)), cont=1, branches=(2,))
KW = dict(encoder="fully_connected", batch_size=8, buffer_size=30, steps_per_update=3.0, save_replay_buffer=True,
          prioritized_replay=True, compile_update=False)


def _run(trainer, seed, n):
    rng = np.random.default_rng(seed)
    queue = AgentManagerQueue("B?team=0")
    trainer.subscribe_trajectory_queue(queue)
    for i in range(n):
        queue.put(trajectory(SPEC, 7, rng, done=i % 2 == 0, interrupted=i % 4 == 0, agent_id=f"a{i % 2}"))
        trainer.advance()
    trainer.trajectory_queues.remove(queue)


def _rows(trainer):
    state = trainer.replay.state()
    return state, {k: v.copy() for k, v in state["arrays"].items()}


def _assert_same(trainer, saved):
    state, arrays = _rows(trainer)
    ref_state, ref_arrays = saved
    for key in ("size", "write_pos", "total_added", "segment_counter"):
        assert state[key] == ref_state[key], key
    for name, a in ref_arrays.items():
        np.testing.assert_array_equal(arrays[name], a, err_msg=name)
    np.testing.assert_array_equal(state["priorities"], ref_state["priorities"])


def test_replay_storage_accepts_memory_and_disk_only():
    assert FastSACSettings().replay_storage == "memory"
    assert FastSACSettings(replay_storage="disk").replay_storage == "disk"
    with pytest.raises(TrainerConfigError,
                       match=r"hyperparameters.replay_storage = 'ssd' is invalid: it must be 'memory' or 'disk'\."):
        FastSACSettings(replay_storage="ssd")


@pytest.mark.parametrize("storage", ["memory", "disk"])
def test_resume_after_a_kill_between_checkpoints_is_the_last_checkpoint_exactly(tmp_path, storage, caplog):
    first = make_trainer(SPEC, tmp_path, replay_storage=storage, **KW)
    _run(first, 0, 7)  # 49 rows into a 30-row ring
    first._checkpoint()
    saved, step, updates = _rows(first), first.get_step, first.num_updates
    batch = first.sample_batch()  # the first batch after the checkpoint: the resumed run's first batch
    _run(first, 1, 2)  # steps after the checkpoint: a kill -9 now loses them
    behavior = tmp_path / "B"
    folders = [n for n in os.listdir(behavior) if ".rows-" in n]
    assert len(folders) == (1 if storage == "disk" else 0)
    del first
    with caplog.at_level(logging.INFO, logger="mlagents_plugins.offpolicy.trainer"):
        second = make_trainer(SPEC, tmp_path, load=True, replay_storage=storage, **KW)
    assert "Loaded replay buffer" in caplog.text
    assert second.get_step == step and second.num_updates == updates
    _assert_same(second, saved)
    again = second.sample_batch()
    for key, value in batch._asdict().items():
        for x, y in zip(value, again._asdict()[key]) if isinstance(value, list) else [(value, again._asdict()[key])]:
            assert (x is None and y is None) or bool((x == y).all()), key
    _run(second, 2, 1)
    assert second.num_updates == second.get_step // 3


def test_switching_storage_on_resume_keeps_the_rows_and_cleans_up(tmp_path):
    first = make_trainer(SPEC, tmp_path, replay_storage="disk", **KW)
    _run(first, 0, 6)
    first.save_model()
    saved = _rows(first)
    behavior = tmp_path / "B"
    on_disk = [n for n in os.listdir(behavior) if ".rows-" in n]
    second = make_trainer(SPEC, tmp_path, load=True, replay_storage="memory", **KW)
    _assert_same(second, saved)
    second.save_model()  # a self-contained file: the rows folder is no longer referred to
    assert not [n for n in os.listdir(behavior) if ".rows-" in n]
    third = make_trainer(SPEC, tmp_path, load=True, replay_storage="disk", **KW)
    _assert_same(third, saved)
    assert third.replay.storage.persistent and os.path.basename(third.replay.storage.folder) not in on_disk


def test_disk_storage_without_saving_removes_its_rows_at_exit(tmp_path):
    trainer = make_trainer(SPEC, tmp_path, replay_storage="disk", **dict(KW, save_replay_buffer=False))
    assert trainer.replay.physical_rows == trainer.replay.capacity  # nothing saved: no spare rows
    _run(trainer, 0, 3)
    folder = trainer.replay.storage.folder
    assert os.path.isdir(folder)
    trainer.save_model()
    assert not os.path.exists(folder) and not os.path.exists(trainer.replay_path)


def test_a_damaged_disk_state_stops_the_resume_and_nothing_is_replaced(tmp_path, caplog):
    first = make_trainer(SPEC, tmp_path, replay_storage="disk", **KW)
    _run(first, 0, 5)
    first.save_model()
    behavior = tmp_path / "B"
    folder = first.replay.storage.folder
    del first
    os.remove(os.path.join(folder, "row-obs_0.bin"))
    before = {n: os.path.getmtime(behavior / n) for n in os.listdir(behavior)}
    with pytest.raises(ReplayFileError, match="(?s)row-obs_0.bin.*missing.*--resume stopped"):
        make_trainer(SPEC, tmp_path, load=True, replay_storage="disk", **KW)
    after = {n: os.path.getmtime(behavior / n) for n in os.listdir(behavior)}
    assert after == before  # no new rows folder left behind, nothing rewritten
