"""A checkpoint save that fails mid-way (a full disk, simulated with ENOSPC from fsync) keeps the previous
``checkpoint.pt`` loadable, leaves no temporary file and says so; a good save replaces it."""
import errno
import os

import pytest
import torch
from mlagents.trainers.model_saver.torch_model_saver import TorchModelSaver
from mlagents.trainers.settings import TrainerSettings

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.host import atomic_checkpoint


@pytest.fixture
def saver(tmp_path, monkeypatch):
    monkeypatch.setattr(TorchModelSaver, "save_checkpoint", atomic_checkpoint.save_checkpoint_atomically)
    s = TorchModelSaver(TrainerSettings(trainer_type="fast_sac", hyperparameters=FastSACSettings()), str(tmp_path / "Balance"))
    s.modules = {"Policy": torch.nn.Linear(3, 2)}  # no policy registered: nothing to export
    return s


def _weights(path):
    return torch.load(path, map_location="cpu")["Policy"]["weight"]


def test_disk_full_mid_save_keeps_the_last_good_checkpoint(saver, monkeypatch):
    onnx, [pt] = saver.save_checkpoint("Balance", 1000)
    assert pt.endswith("Balance-1000.pt") and onnx.endswith("Balance-1000.onnx")
    latest = os.path.join(saver.model_path, "checkpoint.pt")
    good = _weights(latest).clone()
    with torch.no_grad():
        saver.modules["Policy"].weight.add_(1.0)

    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_checkpoint.os, "fsync", disk_full)
    with pytest.raises(atomic_checkpoint.CheckpointSaveError) as info:
        saver.save_checkpoint("Balance", 2000)
    message = str(info.value)
    assert "Balance-2000.pt" in message and "No space left on device" in message
    assert "no Balance-2000.pt was written" in message and "--resume" in message
    assert sorted(os.listdir(saver.model_path)) == ["Balance-1000.pt", "checkpoint.pt"]
    assert torch.equal(_weights(latest), good)

    monkeypatch.undo()
    monkeypatch.setattr(TorchModelSaver, "save_checkpoint", atomic_checkpoint.save_checkpoint_atomically)
    saver.save_checkpoint("Balance", 2000)
    assert torch.equal(_weights(latest), good + 1.0)
    assert sorted(os.listdir(saver.model_path)) == ["Balance-1000.pt", "Balance-2000.pt", "checkpoint.pt"]


def test_failing_write_of_checkpoint_pt_names_the_unchanged_previous_file(saver, monkeypatch):
    saver.save_checkpoint("Balance", 1000)
    real_replace = os.replace

    def replace(src, dst):
        if dst.endswith("checkpoint.pt"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)

    monkeypatch.setattr(atomic_checkpoint.os, "replace", replace)
    with pytest.raises(atomic_checkpoint.CheckpointSaveError, match="the previous checkpoint.pt is unchanged"):
        saver.save_checkpoint("Balance", 2000)
    assert not [f for f in os.listdir(saver.model_path) if ".tmp-" in f]
