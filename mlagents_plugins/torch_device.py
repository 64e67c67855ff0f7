"""Keep trainer threads on the ``--torch-device`` (shared by every trainer here).

mlagents applies ``--torch-device`` with ``torch.set_default_device``, which is *thread-local*: with
``threaded: true`` the trainer thread would create tensors that name no device (normalizer updates, reward
providers, ``ModelUtils.list_to_tensor``) on the CPU next to CUDA parameters.  That is the "Expected all
tensors to be on the same device" failure of mlagents 1.1.0's built-in trainers in threaded mode.  Every
trainer base here calls ``bind_thread_to_default_device`` at the start of ``advance``.
"""
from mlagents.torch_utils import default_device, torch


def bind_thread_to_default_device() -> None:
    """Make tensors created without an explicit device in *this* thread land on ``default_device()``.

    A no-op on CPU and after the first call in a thread.
    """
    device = default_device()
    if device.type != "cpu" and torch.get_default_device() != device:
        torch.set_default_device(device)
