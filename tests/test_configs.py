"""Every YAML in configs/ loads through mlagents' own parser with our trainer plugins registered.

A config that names an unknown trainer type, a misspelt hyperparameter or a value our validators reject fails
here, before a user meets it at the start of a run.
"""
import glob
import os

import pytest
from mlagents.plugins.trainer_type import register_trainer_plugins
from mlagents.trainers.cli_utils import load_config
from mlagents.trainers.settings import RunOptions, TrainerSettings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "configs", "**", "*.yaml"), recursive=True))


def test_there_are_configs():
    assert CONFIGS, "configs/ holds no YAML"


@pytest.mark.parametrize("path", CONFIGS, ids=[os.path.basename(p) for p in CONFIGS])
def test_config_loads(path):
    trainer_types, trainer_settings = register_trainer_plugins()
    raw = load_config(path)
    assert raw.get("behaviors"), f"{path} has no behaviors section"
    try:
        options = RunOptions.from_dict(raw)
    finally:
        TrainerSettings.default_override = None  # from_dict sets global state for default_settings
    for name, settings in options.behaviors.items():
        declared = raw["behaviors"][name]["trainer_type"]
        assert settings.trainer_type == declared
        assert declared in trainer_types
        assert isinstance(settings.hyperparameters, trainer_settings[declared]), (name, declared)
        # Every hyperparameter written in the YAML reaches the settings object unchanged.
        for key, value in (raw["behaviors"][name].get("hyperparameters") or {}).items():
            if isinstance(value, (int, float, bool, str)):
                got = getattr(settings.hyperparameters, key)
                got = getattr(got, "value", got)  # enums (schedules)
                assert got == value or str(got) == str(value), (path, key, got, value)
