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


def test_peer_overrides_reach_the_peer_command_and_leave_the_ml_agents_configs(monkeypatch, tmp_path):
    args = bench_gym.build_parser().parse_args([
        "--steps", "3000", "--peer-set", "learning_rate=0.001", "--peer-set", "policy_kwargs.net_arch=[64, 32]",
        "--work-dir", str(tmp_path)])
    seen = {}

    def fake_child(cmd, log_path, env, cwd, timeout, by_process):
        seen["cmd"] = cmd
        with open(log_path, "w") as f:
            f.write("stopped by the test")
        return 1, 0.0, 0.0

    monkeypatch.setattr(bench_gym, "run_child", fake_child)
    with pytest.raises(RuntimeError, match="exited with 1"):
        bench_gym.run_peer("sb3_sac", "HalfCheetah-v5", 0, args, {})
    cmd = seen["cmd"]
    sets = [cmd[i + 1] for i, part in enumerate(cmd) if part == "--set"]
    assert sets == ["learning_rate=0.001", "policy_kwargs.net_arch=[64, 32]"]
    (_, cfg), = bench_gym.ml_config("fast_sac", "HalfCheetah-v5", args)["behaviors"].items()
    (_, plain), = bench_gym.ml_config("fast_sac", "HalfCheetah-v5", bench_gym.build_parser().parse_args(
        ["--steps", "3000"]))["behaviors"].items()
    assert cfg == plain  # --peer-set does not reach the ML-Agents trainers


def test_a_peer_applies_its_overrides_to_the_standard_keywords():
    pytest.importorskip("stable_baselines3")
    gym = pytest.importorskip("gymnasium")
    from bench import gym_peers
    from bench.overrides import parse_override

    env = gym.make("Pendulum-v1")
    model, kwargs = gym_peers.make_model("sb3_sac", env, 0, None, [parse_override("learning_rate=0.001"),
                                                                   parse_override("policy_kwargs.net_arch=[64, 32]")])
    assert kwargs["learning_rate"] == 0.001 and model.learning_rate == 0.001
    assert kwargs["policy_kwargs"]["net_arch"] == [64, 32]
    assert gym_peers.SAC_STANDARD["policy_kwargs"]["net_arch"] == [256, 256]  # the standard left as it was
    assert kwargs["tau"] == 0.005 and kwargs["batch_size"] == 256


def test_plans_key_each_kind_of_run_by_its_own_overrides():
    from bench import cost

    command = "python -m bench gym --set hyperparameters.learning_rate=0.001 --peer-set learning_rate=0.002"
    peer = cost.gym_variant({"trainer": "sb3_sac", "command": command}, bench_gym.PEERS)
    ours = cost.gym_variant({"trainer": "fast_sac", "command": command}, bench_gym.PEERS)
    assert peer == "gym learning_rate=0.002" and ours == "gym hyperparameters.learning_rate=0.001"
    assert cost.gym_variant({"trainer": "sb3_sac", "command": "python -m bench gym --set a.b=1"},
                            bench_gym.PEERS) == "gym"
