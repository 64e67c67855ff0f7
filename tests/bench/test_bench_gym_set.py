"""``python -m bench gym --set KEY.PATH=VALUE``: overrides of the ML-Agents trainers' configs (issue #56's screens)."""
import pytest

from bench import gym as bench_gym


def test_overrides_reach_the_behavior_settings_as_yaml_values():
    args = bench_gym.build_parser().parse_args([
        "--steps", "3000", "--set", "hyperparameters.critic_batch_renorm=true",
        "--set", "hyperparameters.adam_beta1=0.5", "--set", "network_settings.hidden_units=64",
        "--set", "hyperparameters.critic_hidden_units=null", "--set", "new_section.key=abc",
    ])
    (behavior, cfg), = bench_gym.ml_config("fast_sac", "HalfCheetah-v5", args)["behaviors"].items()
    assert behavior == "HalfCheetah"
    hp = cfg["hyperparameters"]
    assert hp["critic_batch_renorm"] is True and hp["adam_beta1"] == 0.5 and hp["critic_hidden_units"] is None
    assert cfg["network_settings"]["hidden_units"] == 64 and cfg["new_section"] == {"key": "abc"}
    assert hp["batch_size"] == 256 and cfg["max_steps"] == 3000  # the rest as the config has it
    plain = bench_gym.ml_config("fast_sac", "HalfCheetah-v5", bench_gym.build_parser().parse_args([]))
    assert "critic_batch_renorm" not in plain["behaviors"]["HalfCheetah"]["hyperparameters"]


@pytest.mark.parametrize("text", ["hyperparameters.adam_beta1", "=3", "hyperparameters..x=1"])
def test_malformed_overrides_are_refused(text, capsys):
    with pytest.raises(SystemExit):
        bench_gym.build_parser().parse_args(["--set", text])
    assert "KEY.PATH=VALUE" in capsys.readouterr().err
