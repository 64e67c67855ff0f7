"""Entry point for ``mlagents.trainer_type``: ``taac = mlagents_plugins.taac.plugin:get_type_and_setting``."""
from typing import Any, Dict, Tuple

from mlagents_plugins.taac.settings import TaacSettings
from mlagents_plugins.taac.trainer import TRAINER_NAME, TaacTrainer


def get_type_and_setting() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    return {TRAINER_NAME: TaacTrainer}, {TRAINER_NAME: TaacSettings}
