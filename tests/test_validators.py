import math

import attr
import pytest
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.common import validators as v


@attr.s(auto_attribs=True)
class Field:
    name: str


CASES = [
    (v.strict_bool, [True, False], [1, "yes", None], "true or false"),
    (v.positive_int, [1, 7], [0, -3, 2.0, True], "an integer >= 1"),
    (v.non_negative_int, [0, 7], [-1, 0.5, False], "an integer >= 0"),
    (v.positive_float, [0.25, 3], [0, -0.5, math.inf, math.nan, True, "1"], "a finite number > 0"),
    (v.non_negative_float, [0, 0.25], [-0.01, math.inf, math.nan, False], "a finite number >= 0"),
    (v.unit_interval, [0, 0.3, 1], [-0.1, 1.01, math.nan, True], "a number in [0, 1]"),
    (v.optional_open_unit_interval, [None, 0.2], [0, 1, 1.5, False], "null (off) or a number in (0, 1), e.g. 0.2"),
    (v.optional_positive_float, [None, 40.0], [0, -1, math.inf, True], "null (off) or a finite number > 0"),
    (v.one_of("adam", "rmsprop"), ["adam", "rmsprop"], ["sgd", None, "Adam"], "'adam' or 'rmsprop'"),
    (v.optional_one_of("adam", "rmsprop"), ["adam", "rmsprop", None], ["sgd", "Adam", 1],
     "'adam' or 'rmsprop' or null (automatic)"),
]


@pytest.mark.parametrize("validator, good, bad, allowed", CASES)
def test_each_validator_accepts_its_values_and_names_field_value_and_allowed_otherwise(validator, good, bad, allowed):
    for value in good:
        validator(None, Field("lr_x"), value)
    for value in bad:
        with pytest.raises(TrainerConfigError) as raised:
            validator(None, Field("lr_x"), value)
        assert str(raised.value) == f"hyperparameters.lr_x = {value!r} is invalid: it must be {allowed}."
