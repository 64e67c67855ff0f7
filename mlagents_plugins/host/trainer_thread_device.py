"""Keep trainer threads on the ``--torch-device`` (shared by every trainer here, and by ML-Agents' own).

mlagents applies ``--torch-device`` with ``torch.set_default_device``, which is *thread-local*: with
``threaded: true`` the trainer thread would create tensors that name no device (normalizer updates, reward
providers, ``ModelUtils.list_to_tensor``) on the CPU next to CUDA parameters.  That is the "Expected all
tensors to be on the same device" failure of mlagents 1.1.0's built-in trainers in threaded mode.  Two layers
bind the thread:

* every trainer base here calls ``bind_thread_to_default_device`` at the start of ``advance`` (so our trainers
  are right wherever they are advanced, the patch below switched off included);
* the host patch ``trainer_thread_device`` (listed in ``patches``) replaces
  ``TrainerController.trainer_update_func``, the loop each trainer thread runs, with one that binds the thread
  first, so built-in ``ppo``/``sac``/``poca`` trainers with ``threaded: true`` follow ``--torch-device`` too.
"""
import sys

from mlagents.torch_utils import default_device, torch

from mlagents_plugins.host import patches

#: ML-Agents' own ``TrainerController.trainer_update_func`` once replaced
ORIGINAL = None


def bind_thread_to_default_device() -> None:
    """Make tensors created without an explicit device in *this* thread land on ``default_device()``.

    A no-op on CPU and after the first call in a thread.
    """
    device = default_device()
    if device.type != "cpu" and torch.get_default_device() != device:
        torch.set_default_device(device)


def trainer_update_func_on_default_device(self, trainer) -> None:
    """ML-Agents' trainer-thread loop, run after binding the thread to ``--torch-device``."""
    bind_thread_to_default_device()
    ORIGINAL(self, trainer)


def install_trainer_thread_device() -> bool:
    from mlagents.trainers.trainer_controller import TrainerController

    return patches.replace_attribute("trainer_thread_device", TrainerController, "trainer_update_func",
                                     trainer_update_func_on_default_device, sys.modules[__name__])
