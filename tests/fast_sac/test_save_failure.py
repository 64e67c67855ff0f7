"""A full disk during a checkpoint (ENOSPC, simulated at fsync): the trainer's error says the last good files
are unchanged, they are byte-identical afterwards, and the exit-time save does not try again over them."""
import errno
import os

import numpy as np
import pytest
from helpers import make_trainer
from mlagents.trainers.model_saver.torch_model_saver import TorchModelSaver

from mlagents_plugins.host import atomic_checkpoint
from tests.builders import behavior_spec, trajectory


def _files(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("failing", ["checkpoint", "replay"])
def test_disk_full_during_checkpoint_keeps_the_last_good_files(tmp_path, monkeypatch, caplog, failing):
    monkeypatch.setattr(TorchModelSaver, "save_checkpoint", atomic_checkpoint.save_checkpoint_atomically)
    spec = behavior_spec()
    trainer = make_trainer(spec, tmp_path, save_replay_buffer=True, buffer_init_steps=10 ** 6)
    rng = np.random.default_rng(0)
    trainer._process_trajectory(trajectory(spec, 9, rng))
    trainer._checkpoint()
    folder = tmp_path / "B"
    before = _files(folder)
    assert "replay_buffer.mlreplay" in before and "checkpoint.pt" in before
    trainer._process_trajectory(trajectory(spec, 9, rng))
    trainer._step += 9

    real_fsync = os.fsync
    calls = []

    def disk_full(fd):
        calls.append(fd)
        # the model files are written first (two .pt files), then the replay buffer
        if failing == "checkpoint" or len(calls) > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(Exception) as info:
        trainer._checkpoint()
    message = str(info.value)
    assert "No space left on device" in message and "unchanged" in message and "--resume" in message
    with caplog.at_level("WARNING"):
        trainer.save_model()  # ML-Agents' exit-time save
    assert "Not saving B on exit" in caplog.text
    monkeypatch.setattr(os, "fsync", real_fsync)
    after = _files(folder)
    assert not [name for name in after if ".tmp-" in name]
    for name in ("replay_buffer.mlreplay", "checkpoint.pt"):
        if failing == "checkpoint" or name == "replay_buffer.mlreplay":
            assert after[name] == before[name], name
