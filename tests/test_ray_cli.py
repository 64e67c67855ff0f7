"""mlagents-plugins-learn's argument handling and errors; none of these start Ray (they run without it too)."""
import socket
import sys

import pytest

from mlagents_plugins.ray_envs import cli


def test_ray_options_come_out_and_everything_else_goes_to_mlagents_unchanged():
    argv = ["cfg.yaml", "--env=b/Balance", "--ray-address=auto", "--num-envs=16", "--ray-cpus-per-env", "2",
            "--ray-env-resources", '{"unity": 1}', "--run-id=x", "--env-args", "--ray-address", "kept"]
    ray_args, rest = cli.split_argv(argv)
    assert ray_args.ray_address == "auto" and ray_args.ray_cpus_per_env == 2.0
    assert ray_args.ray_env_resources == {"unity": 1}
    # what follows --env-args belongs to the build, even if it looks like ours
    assert rest == ["cfg.yaml", "--env=b/Balance", "--num-envs=16", "--run-id=x", "--env-args", "--ray-address", "kept"]


def test_without_ray_address_it_is_mlagents_learn(monkeypatch, tmp_path):
    from mlagents.trainers import learn

    cfg = tmp_path / "c.yaml"
    cfg.write_text("behaviors:\n  B:\n    trainer_type: ppo\n")
    argv = [str(cfg), "--env=b/Balance", "--run-id=x", "--num-envs=3", "--seed", "5"]
    ran = []
    monkeypatch.setattr(learn, "run_cli", lambda options: ran.append(options))
    before = learn.SubprocessEnvManager  # ML-Agents' class, or inprocess_env's choice if a test installed it
    cli.main(argv)
    assert len(ran) == 1
    assert ran[0].as_dict() == learn.parse_command_line(argv).as_dict()
    assert learn.SubprocessEnvManager is before  # nothing was patched


@pytest.mark.parametrize("value, message", [
    ("--ray-cpus-per-env=-1", "--ray-cpus-per-env must be >= 0"),
    ("--ray-env-resources=[1]", "--ray-env-resources must be a JSON object"),
    ("--ray-runtime-env={bad", "--ray-runtime-env must be a JSON object"),
])
def test_bad_ray_option_values_name_the_option(value, message, capsys):
    with pytest.raises(SystemExit):
        cli.split_argv(["cfg.yaml", value])
    assert message in capsys.readouterr().err


def test_ray_not_installed_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(SystemExit, match=r'pip install "mlagents-plugins\[ray\]"'):
        cli.connect("local", num_envs=2, cpus_per_env=1)


def test_bad_and_unreachable_addresses_are_clear_errors():
    pytest.importorskip("ray")
    with pytest.raises(SystemExit, match="is not 'local', 'auto' or HOST:PORT"):
        cli.connect("nonsense", num_envs=1, cpus_per_env=1)
    with socket.socket() as s:  # a loopback port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SystemExit, match=f"cannot reach a Ray cluster at 127.0.0.1:{port}"):
        cli.connect(f"127.0.0.1:{port}", num_envs=1, cpus_per_env=1)


def test_ray_address_needs_a_build(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("behaviors:\n  B:\n    trainer_type: ppo\n")
    with pytest.raises(SystemExit, match="--ray-address needs --env=path/to/Build"):
        cli.main([str(cfg), "--run-id=x", "--ray-address=local"])


def test_main_without_ray_installed_says_how_to_install(monkeypatch, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("behaviors:\n  B:\n    trainer_type: ppo\n")
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SystemExit, match=r'pip install "mlagents-plugins\[ray\]"'):
        cli.main([str(cfg), "--env=b/Balance", "--run-id=x", "--ray-address=auto"])


def test_runtime_env_working_dir_must_be_a_folder_here(tmp_path):
    """Ray uploads a local working_dir from this machine: a missing one is named before Ray is asked."""
    build_dir = tmp_path / "BuildDir"
    build_dir.mkdir()
    cli.check_runtime_env({"working_dir": str(build_dir)})
    cli.check_runtime_env({"working_dir": "s3://bucket/build.zip"})  # a remote URI is Ray's to fetch
    cli.check_runtime_env({"env_vars": {"A": "1"}})
    cli.check_runtime_env(None)
    with pytest.raises(SystemExit, match=r"working_dir='.*missing' is not a directory on this machine"):
        cli.check_runtime_env({"working_dir": str(tmp_path / "missing")})
    with pytest.raises(SystemExit, match="working_dir must be a string, got 3"):
        cli.check_runtime_env({"working_dir": 3})


def test_failure_to_join_mentions_token_authentication_unless_it_is_on(monkeypatch):
    class RefusingRay:
        @staticmethod
        def init(**kwargs):
            raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:6391")

    monkeypatch.delenv(cli.AUTH_MODE_ENV_VAR, raising=False)
    with pytest.raises(SystemExit, match=r"at 127.0.0.1:6391: Failed to connect.*set RAY_AUTH_MODE=token"):
        cli._init(RefusingRay, "127.0.0.1:6391", address="127.0.0.1:6391")
    monkeypatch.setenv(cli.AUTH_MODE_ENV_VAR, "token")
    with pytest.raises(SystemExit) as raised:
        cli._init(RefusingRay, "127.0.0.1:6391", address="127.0.0.1:6391")
    assert "RAY_AUTH_MODE" not in str(raised.value)


def test_a_runtime_env_ray_refuses_is_named(monkeypatch):
    class RefusingRay:
        @staticmethod
        def init(**kwargs):
            raise ValueError("pip is not a valid option")

    with pytest.raises(SystemExit, match=r'--ray-runtime-env=\{"pip": 3\} was refused by Ray: pip is not'):
        cli._init(RefusingRay, "local", runtime_env={"pip": 3})
