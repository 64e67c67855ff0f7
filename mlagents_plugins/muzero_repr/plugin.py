"""``mlagents.trainer_type`` entry point: ``muzero_repr = mlagents_plugins.muzero_repr.plugin:get_type_and_setting``."""
from typing import Any, Dict, Tuple

import mlagents_plugins  # noqa: F401  (installs the TorchScript ONNX export fix)
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer


def get_type_and_setting() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    name = MuZeroReprTrainer.get_trainer_name()
    return {name: MuZeroReprTrainer}, {name: MuZeroReprSettings}
