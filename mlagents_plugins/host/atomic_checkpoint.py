"""Model checkpoints are written atomically: a crash or a full disk mid-save keeps the last good checkpoint.

ML-Agents 1.1.0's ``TorchModelSaver.save_checkpoint`` writes ``<Behavior>-<step>.pt`` and then
``checkpoint.pt`` - the file ``--resume`` loads - with ``torch.save`` straight onto the final path.  A kill
(``kill -9``, the OOM killer) or ``ENOSPC`` in the middle leaves a truncated ``checkpoint.pt`` and the run
cannot be resumed.  The replacement writes each file to ``<file>.tmp-<pid>`` in the same folder, fsyncs it and
``os.replace``s it over the old one (atomic on POSIX), so the folder always holds either the previous or the new
complete file.  A failed write removes its temporary file and raises ``CheckpointSaveError``, which names the
file, the cause and says that the previous checkpoint is unchanged.  Otherwise it is ML-Agents' method line
for line (same files, same export, same return value).  ``MLAGENTS_PLUGINS_INPLACE_CHECKPOINTS=1`` keeps
ML-Agents' in-place writes (``patches`` lists it).
"""
import os
import sys

from mlagents.trainers.exception import UnityTrainerException

from mlagents_plugins.host import patches
from mlagents_plugins.util.fsync import fsync_dir

#: ML-Agents' own ``TorchModelSaver.save_checkpoint`` once replaced (kept so a test can check the guards)
ORIGINAL = None
CHECKPOINT_NAME = "checkpoint.pt"  # mlagents' DEFAULT_CHECKPOINT_NAME


class CheckpointSaveError(UnityTrainerException):
    """A checkpoint file could not be written; the previous one at that path is unchanged."""



def atomic_torch_save(obj, path: str) -> None:
    """``torch.save(obj, path)`` that leaves either the old or the new complete file at ``path``."""
    from mlagents.torch_utils import torch

    tmp = f"{path}.tmp-{os.getpid()}"
    existed = os.path.exists(path)
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        _remove_quietly(tmp)
        before = (f"the previous {os.path.basename(path)} is unchanged" if existed
                  else f"no {os.path.basename(path)} was written")
        latest = os.path.join(os.path.dirname(path), CHECKPOINT_NAME)
        if os.path.basename(path) != CHECKPOINT_NAME and os.path.exists(latest):
            before += f" and {CHECKPOINT_NAME}, the checkpoint --resume loads, is unchanged"
        raise CheckpointSaveError(
            f"could not write the checkpoint {path}: {err.strerror or err} ({type(err).__name__}); {before}. Free "
            "disk space (or fix the folder's permissions) and run again with --resume to continue from the last "
            "complete checkpoint."
        ) from err
    except BaseException:
        _remove_quietly(tmp)
        raise
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def save_checkpoint_atomically(self, behavior_name: str, step: int):
    """``TorchModelSaver.save_checkpoint`` of ML-Agents 1.1.0, with atomic writes."""
    if not os.path.exists(self.model_path):
        os.makedirs(self.model_path)
    checkpoint_path = os.path.join(self.model_path, f"{behavior_name}-{step}")
    state_dict = {name: module.state_dict() for name, module in self.modules.items()}
    pytorch_ckpt_path = f"{checkpoint_path}.pt"
    export_ckpt_path = f"{checkpoint_path}.onnx"
    atomic_torch_save(state_dict, pytorch_ckpt_path)
    atomic_torch_save(state_dict, os.path.join(self.model_path, CHECKPOINT_NAME))
    self.export(checkpoint_path, behavior_name)
    return export_ckpt_path, [pytorch_ckpt_path]


def install_atomic_checkpoint() -> bool:
    """Replace ``TorchModelSaver.save_checkpoint`` (once); returns whether the patch is active."""
    try:
        from mlagents.trainers.model_saver.torch_model_saver import TorchModelSaver
    except ImportError:
        return False
    return patches.replace_attribute("atomic_checkpoint", TorchModelSaver, "save_checkpoint", save_checkpoint_atomically, sys.modules[__name__])
