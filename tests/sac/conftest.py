import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _register_fast_sac():
    """Register fast_sac the way mlagents-learn's plugin loader does (works without reinstalling)."""
    from mlagents import plugins as mla_plugins
    from mlagents_plugins.sac.plugin import get_type_and_setting

    types, settings = get_type_and_setting()
    mla_plugins.all_trainer_types.update(types)
    mla_plugins.all_trainer_settings.update(settings)
    yield
