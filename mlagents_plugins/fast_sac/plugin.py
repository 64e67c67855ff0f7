"""``mlagents.trainer_type`` entry point of ``fast_sac``."""
from typing import Any, Dict, Tuple

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import TRAINER_NAME, FastSACTrainer


def get_type_and_setting() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    return {TRAINER_NAME: FastSACTrainer}, {TRAINER_NAME: FastSACSettings}
