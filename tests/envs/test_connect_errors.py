"""An Editor that never presses Play, and a build that exits at start: the errors say which, the port, the log."""
import pytest
from mlagents_envs.environment import UnityEnvironment
from mlagents_envs.exception import UnityEnvironmentException, UnityTimeOutException

from mlagents_plugins.host import connect_errors
from tests.envs.conftest import free_base_port

UPSTREAM = connect_errors.ORIGINAL or UnityEnvironment.__dict__["_send_academy_parameters"]


@pytest.fixture(autouse=True)
def installed(monkeypatch):
    monkeypatch.setattr(UnityEnvironment, "_send_academy_parameters", UPSTREAM)
    monkeypatch.delenv("MLAGENTS_PLUGINS_PLAIN_CONNECT_ERRORS", raising=False)
    assert connect_errors.install_connect_errors() is True


def test_editor_that_never_presses_play_times_out_with_a_clear_message():
    port = free_base_port()
    with pytest.raises(UnityTimeOutException) as info:
        UnityEnvironment(file_name=None, base_port=port, timeout_wait=1)
    message = str(info.value)
    assert f"No Unity Editor connected on port {port} within 1 s" in message and "Press Play" in message
    assert "took too long to respond" in message  # ML-Agents' own text is kept


def test_build_that_exits_at_start_names_the_build_its_exit_code_and_log(builds, tmp_path):
    port = free_base_port()
    with pytest.raises(UnityEnvironmentException) as info:
        UnityEnvironment(file_name=f"{builds}/Balance", base_port=port, timeout_wait=60, no_graphics=True,
                         additional_args=["--no-such-option"], log_folder=str(tmp_path))
    message = str(info.value)
    assert "Balance.x86_64 exited with code 2 before connecting on port" in message, message
    log = tmp_path / "Player-0.log"
    assert str(log) in message and "--no-such-option" in log.read_text()
