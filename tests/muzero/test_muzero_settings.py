"""Settings validation: bad values name the field, the value and what is allowed."""
import cattr
import pytest
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.muzero.settings import MuZeroReprSettings


def test_defaults_and_structure_from_yaml_dict():
    s = cattr.structure({"num_unroll_steps": 3, "td_steps": 4, "actions_after_end": "random"}, MuZeroReprSettings)
    assert (s.num_unroll_steps, s.td_steps, s.actions_after_end) == (3, 4, "random")
    assert s.recurrent_gradient_scaling_factor == 0.5
    assert s.rl_gradient_to_repr is False


@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("actions_after_end", "zeros", "one of"),
        ("td_steps", 0, "an integer >= 1"),
        ("recurrent_gradient_scaling_factor", 1.5, "in \\[0, 1\\]"),
        ("support_size", -1, "an integer >= 0"),
        ("support_size", 5000, "\\[0, 1000\\]"),
        ("rl_gradient_to_repr", "yes", "true or false"),
        ("value_loss_weight", -0.1, ">= 0"),
    ],
)
def test_bad_values_raise_trainer_config_error(field, value, allowed):
    with pytest.raises(TrainerConfigError, match=f"hyperparameters.{field} = .*{allowed}"):
        MuZeroReprSettings(**{field: value})
