"""--torch-device in trainer threads: torch's default device is thread-local, so every trainer base binds
its own thread (the `meta` device stands in for CUDA, which these machines lack)."""
import threading

import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.trainer.rl_trainer import RLTrainer

from mlagents_plugins.fast_sac.trainer import FastSACTrainer
from mlagents_plugins.host import trainer_thread_device
from mlagents_plugins.impala.trainer import ImpalaTrainer
from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer
from mlagents_plugins.taac.trainer import TaacTrainer


def _in_thread(fn):
    seen = {}

    def body():
        seen["before"] = torch.zeros(1).device.type
        try:
            fn()
            seen["after"] = torch.zeros(1).device.type
        finally:
            torch.set_default_device(None)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return seen


def test_bind_moves_only_the_calling_thread(monkeypatch):
    # On a CUDA machine mlagents.torch_utils has already moved the main thread's default to the GPU: compare
    # with what it is, not with "cpu".
    calling_thread_device = torch.zeros(1).device.type
    monkeypatch.setattr(trainer_thread_device, "default_device", lambda: torch.device("meta"))
    seen = _in_thread(trainer_thread_device.bind_thread_to_default_device)
    assert seen == {"before": "cpu", "after": "meta"}
    assert torch.zeros(1).device.type == calling_thread_device  # the calling thread is untouched


def test_bind_is_a_no_op_on_cpu(monkeypatch):
    monkeypatch.setattr(trainer_thread_device, "default_device", lambda: torch.device("cpu"))
    assert _in_thread(trainer_thread_device.bind_thread_to_default_device) == {"before": "cpu", "after": "cpu"}


@pytest.mark.parametrize("trainer_cls", [FastSACTrainer, TaacTrainer, MuZeroReprTrainer, ImpalaTrainer])
def test_every_trainer_binds_its_thread_in_advance(trainer_cls, monkeypatch):
    monkeypatch.setattr(trainer_thread_device, "default_device", lambda: torch.device("meta"))
    monkeypatch.setattr(RLTrainer, "advance", lambda self: None)  # only the binding is under test
    trainer = object.__new__(trainer_cls)
    trainer.replay = None
    seen = _in_thread(lambda: trainer_cls.advance(trainer))
    assert seen == {"before": "cpu", "after": "meta"}, trainer_cls.__name__


def test_the_host_patch_binds_every_trainer_thread_built_ins_included(monkeypatch):
    """``trainer_thread_device``: the loop ML-Agents runs in each ``threaded: true`` trainer's thread binds it
    first, so a trainer that never calls the binding itself (a built-in one) makes its tensors on the device."""
    from mlagents.trainers.trainer_controller import TrainerController

    assert trainer_thread_device.install_trainer_thread_device()
    assert TrainerController.trainer_update_func is trainer_thread_device.trainer_update_func_on_default_device
    monkeypatch.setattr(trainer_thread_device, "default_device", lambda: torch.device("meta"))

    class BuiltInLikeTrainer:  # advances once, recording where an untyped tensor lands, then stops the loop
        def advance(self):
            self.made_on = torch.zeros(1).device.type
            controller.kill_trainers = True

    controller = object.__new__(TrainerController)
    controller.kill_trainers = False
    trainer = BuiltInLikeTrainer()
    seen = _in_thread(lambda: controller.trainer_update_func(trainer))
    assert trainer.made_on == "meta" and seen == {"before": "cpu", "after": "meta"}
