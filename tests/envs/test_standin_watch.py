"""A stand-in launched by a trainer exits when that trainer is gone, also while a half-dead worker still holds
the port and never answers (the exchange alone would wait for its deadline)."""
import subprocess
import sys
import time

import pytest
from mlagents_envs.rpc_communicator import RpcCommunicator

from mlagents_plugins.envs.standin import EXIT_TRAINER_LOST
from mlagents_plugins.util import process_lifetime
from tests.envs.conftest import free_base_port, popen_standin


def test_standin_exits_when_its_trainer_dies_while_the_port_is_held(tmp_path, monkeypatch):
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    # Listens, accepts the build's first exchange and never replies: a worker whose trainer is gone.
    half_dead = RpcCommunicator(worker_id=0, base_port=free_base_port(), timeout_wait=1)
    monkeypatch.setenv(process_lifetime.TRAINER_PID_ENV, str(trainer.pid))
    log = tmp_path / "player.log"
    standin = popen_standin("--scene", "balance", "--mlagents-port", str(half_dead.port), "--connect-timeout", "120",
                            "--timeout-wait", "120", log_path=str(log))
    try:
        deadline = time.monotonic() + 60
        while "connecting to the trainer" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline and standin.poll() is None, log.read_text()
            time.sleep(0.1)
        time.sleep(0.5)
        assert standin.poll() is None
        trainer.kill()
        trainer.wait()
        killed = time.monotonic()
        assert standin.wait(timeout=10) == EXIT_TRAINER_LOST
        assert time.monotonic() - killed < 3
        assert f"the trainer (pid {trainer.pid}) is gone" in log.read_text()
    finally:
        for proc in (standin, trainer):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        half_dead.close()


@pytest.mark.parametrize("named", [False, True])
def test_standin_not_launched_by_a_trainer_watches_nothing(monkeypatch, named):
    if named:
        monkeypatch.setenv(process_lifetime.TRAINER_PID_ENV, "not-a-pid")
    else:
        monkeypatch.delenv(process_lifetime.TRAINER_PID_ENV, raising=False)
    assert process_lifetime.trainer_from_environment() is None
