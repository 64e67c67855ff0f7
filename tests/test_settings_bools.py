"""Every true/false setting of our trainers rejects non-booleans by name.

ML-Agents structures hyperparameters with cattrs, which passes a ``bool`` field's YAML value through
``bool(...)``: ``prioritized_replay: "false"`` used to become True without a word.  Our settings annotate such
fields ``Any`` and validate them (``offpolicy.settings.strict_bool``); this test finds every field whose
default is a bool (or None for tri-state ones) in every registered trainer's settings and feeds it strings.
"""
import attr
import pytest

from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions

OURS = ("fast_sac", "taac", "impala", "muzero_repr")


def _settings_classes():
    from mlagents_plugins.impala.plugin import get_type_and_setting as impala
    from mlagents_plugins.muzero_repr.plugin import get_type_and_setting as muzero
    from mlagents_plugins.fast_sac.plugin import get_type_and_setting as sac
    from mlagents_plugins.taac.plugin import get_type_and_setting as taac

    out = {}
    for get in (sac, taac, impala, muzero):
        out.update(get()[1])
    return out


def _bool_fields():
    out = []
    classes = _settings_classes()
    for trainer in OURS:
        cls = classes[trainer]
        for field in attr.fields(cls):
            if isinstance(field.default, bool):
                out.append((trainer, field.name))
    return out


def test_every_trainer_has_bool_settings_to_check():
    names = {t for t, _ in _bool_fields()}
    assert names == set(OURS)


@pytest.mark.parametrize("trainer,field", _bool_fields())
@pytest.mark.parametrize("value", ["false", "yes", 1, None])
def test_bool_setting_rejects_non_bool(trainer, field, value):
    config = {"behaviors": {"B": {"trainer_type": trainer, "hyperparameters": {field: value}}}}
    with pytest.raises(TrainerConfigError, match=field):
        RunOptions.from_dict(config)


@pytest.mark.parametrize("trainer,field", _bool_fields())
def test_bool_setting_keeps_real_bools(trainer, field):
    for value in (True, False):
        config = {"behaviors": {"B": {"trainer_type": trainer, "hyperparameters": {field: value}}}}
        assert getattr(RunOptions.from_dict(config).behaviors["B"].hyperparameters, field) is value
