"""``mlagents.trainer_type`` entry point: ``impala = mlagents_plugins.impala.plugin:get_type_and_setting``."""
from typing import Dict, Tuple

import mlagents_plugins  # noqa: F401  (installs the ONNX export fix)
from mlagents_plugins.impala.settings import ImpalaSettings
from mlagents_plugins.impala.trainer import TRAINER_NAME, ImpalaTrainer


def get_type_and_setting() -> Tuple[Dict[str, type], Dict[str, type]]:
    return {TRAINER_NAME: ImpalaTrainer}, {TRAINER_NAME: ImpalaSettings}
