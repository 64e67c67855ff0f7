"""mlagents writes ``training_status.json`` with plain ``json.dump``; under numpy 2 it holds numpy scalars.

numpy 2 keeps float32 arithmetic in float32 (NEP 50), so the checkpoint rewards mlagents stores in its training
status (``np.mean`` over float32 episode rewards) are ``np.float32``, which ``json`` cannot write: every run
ended with ``TypeError: Object of type float32 is not JSON serializable`` at its final checkpoint.  With numpy
1.23 the same values came out as float64 (a ``float`` subclass).  The replacement writes the same JSON with
numpy scalars turned into the Python numbers they hold; anything json could write before is written as before
(``default`` is only consulted for objects json does not know).
"""
import json

from mlagents.trainers.training_status import (
    GlobalTrainingStatus,
    StatusMetaData,
    StatusType,
)

ORIGINAL = GlobalTrainingStatus.__dict__["save_state"]


def _numpy_scalar(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def save_state(path: str) -> None:
    """``GlobalTrainingStatus.save_state`` (mlagents 1.1.0), writing numpy scalars as numbers."""
    GlobalTrainingStatus.saved_state[StatusType.STATS_METADATA.value] = StatusMetaData().to_dict()
    with open(path, "w") as f:
        json.dump(GlobalTrainingStatus.saved_state, f, indent=4, default=_numpy_scalar)


def install_status_json() -> bool:
    """Idempotently replace ``GlobalTrainingStatus.save_state``; returns whether the replacement is active."""
    from mlagents_plugins.host import patches

    current = GlobalTrainingStatus.__dict__["save_state"]
    if not patches.allowed("status_json"):
        if current is not ORIGINAL:
            GlobalTrainingStatus.save_state = ORIGINAL
        return False
    if getattr(current, "__func__", None) is not save_state:
        GlobalTrainingStatus.save_state = staticmethod(save_state)
    return True
