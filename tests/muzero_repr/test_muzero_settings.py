"""Settings validation: bad values name the field, the value and what is allowed."""
import attr
import cattr
import pytest
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings


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


@pytest.mark.parametrize("signals", [["extrinsic", "curiosity"], ["rnd"], ["extrinsic", "gail"]])
def test_other_reward_signals_are_rejected_at_startup(tmp_path, signals):
    from mlagents.trainers.settings import TrainerSettings

    from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer

    raw = {"extrinsic": {}, "curiosity": {}, "rnd": {}, "gail": {"demo_path": "x.demo"}}
    settings = TrainerSettings.structure(
        {"trainer_type": "muzero_repr", "reward_signals": {name: raw[name] for name in signals}}, TrainerSettings
    )
    with pytest.raises(TrainerConfigError, match=r"reward_signals = \[.*'%s'.*allowed is exactly one 'extrinsic'"
                       % sorted(signals)[0]):
        MuZeroReprTrainer("B", 10, settings, True, False, 0, str(tmp_path / "B"))


def test_extrinsic_only_is_accepted(tmp_path):
    from mlagents.trainers.settings import TrainerSettings

    from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer

    settings = TrainerSettings.structure({"trainer_type": "muzero_repr"}, TrainerSettings)
    trainer = MuZeroReprTrainer("B", 10, settings, True, False, 0, str(tmp_path / "B"))
    assert trainer.get_trainer_name() == "muzero_repr"


def test_sac_head_defaults_are_fast_sacs():
    """Every field muzero_repr inherits from fast_sac (the SAC head and the off-policy base) defaults to fast_sac's
    value, so a config that leaves them unset trains the same SAC head in both trainers (init_entcoef included)."""
    ours, theirs = MuZeroReprSettings(), FastSACSettings()
    fields = [f.name for f in attr.fields(FastSACSettings)]
    assert "init_entcoef" in fields and "actor_min_q" in fields
    differing = {n: (getattr(ours, n), getattr(theirs, n)) for n in fields if getattr(ours, n) != getattr(theirs, n)}
    assert differing == {}
