import pytest


@pytest.fixture(autouse=True)
def _register_taac():
    """Register taac the way mlagents-learn's plugin loader does (works without reinstalling)."""
    from mlagents import plugins as mla_plugins
    from mlagents_plugins.taac.plugin import get_type_and_setting

    types, settings = get_type_and_setting()
    mla_plugins.all_trainer_types.update(types)
    mla_plugins.all_trainer_settings.update(settings)
    yield
