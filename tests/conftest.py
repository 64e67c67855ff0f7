"""Suite-wide fixtures.

Our trainers are registered in mlagents' plugin tables for every test, the way mlagents-learn's plugin
loader does it (``mlagents.plugins.trainer_type.register_trainer_plugins``), so tests that build
``RunOptions`` or ``TrainerFactory`` directly see ``fast_sac``/``taac``/``impala``/``muzero_repr`` even in a
checkout whose entry points were not (re)installed.
"""
import importlib

import pytest

PLUGIN_MODULES = (
    "mlagents_plugins.fast_sac.plugin",
    "mlagents_plugins.taac.plugin",
    "mlagents_plugins.impala.plugin",
    "mlagents_plugins.muzero_repr.plugin",
)


@pytest.fixture(autouse=True, scope="session")
def _register_our_trainers():
    from mlagents import plugins as mla_plugins

    for module in PLUGIN_MODULES:
        types, settings = importlib.import_module(module).get_type_and_setting()
        mla_plugins.all_trainer_types.update(types)
        mla_plugins.all_trainer_settings.update(settings)
    yield
