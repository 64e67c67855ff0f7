"""``inprocess_env`` through the real ``mlagents-learn`` at ``--num-envs 1``, with the patch on and off: the same
exit status and messages for a build that exits at start, the same Ctrl+C (models saved, nothing left running),
and no environment worker process when it is on."""
import os
import signal
import subprocess
import time

import pytest

from mlagents_plugins.util import process_lifetime
from tests.envs.conftest import REPO, free_base_port
from tests.envs.test_e2e import MLAGENTS_LEARN, learn, write_config

pytestmark = pytest.mark.e2e

SWITCH = "MLAGENTS_PLUGINS_ENV_WORKER"


@pytest.fixture(params=["in-process", "worker"])
def mode(request, monkeypatch):
    if request.param == "worker":
        monkeypatch.setenv(SWITCH, "1")
    else:
        monkeypatch.delenv(SWITCH, raising=False)
    return request.param


def test_a_build_that_exits_at_start_fails_the_run_with_the_same_message(builds, tmp_path, mode):
    results = tmp_path / "results"
    out, _ = learn(write_config(tmp_path, 1000), f"--env={builds}/Balance", "--run-id=bad", "--num-envs=1",
                   f"--base-port={free_base_port(1)}", f"--results-dir={results}", "--no-graphics",
                   "--env-args", "--no-such-option")
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-3000:]
    assert "UnityEnvironmentException" in text and "exited with code 2 before connecting on port" in text, text[-3000:]
    assert str(results / "bad" / "run_logs" / "Player-0.log") in text
    # learn.run_training's finally ran: the run's files are written as for a failed run upstream
    assert (results / "bad" / "configuration.yaml").is_file() and (results / "bad" / "run_logs" / "timers.json").is_file()


def test_a_build_that_never_connects_times_out_after_timeout_wait_with_the_same_message(builds, tmp_path, mode):
    results = tmp_path / "results"
    base, elsewhere = free_base_port(1), free_base_port(1)
    # the build dials another port (the last --mlagents-port wins), so the trainer hears nothing for --timeout-wait
    out, _ = learn(write_config(tmp_path, 1000), f"--env={builds}/Balance", "--run-id=deaf", "--num-envs=1",
                   f"--base-port={base}", f"--results-dir={results}", "--no-graphics", "--timeout-wait", "3",
                   "--env-args", "--mlagents-port", str(elsewhere), "--connect-timeout", "5")
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-3000:]
    assert "UnityTimeOutException" in text and f"did not connect on port {base} within 3 s" in text, text[-3000:]
    assert (results / "deaf" / "configuration.yaml").is_file()


def _descendants(pid):
    found, todo = [], [pid]
    while todo:
        for child in process_lifetime.child_pids(todo.pop()):
            found.append((child, process_lifetime.start_time(child), open(f"/proc/{child}/cmdline", "rb").read()))
            todo.append(child)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_ctrl_c_saves_the_model_and_leaves_nothing_running(builds, tmp_path, mode):
    results = tmp_path / "results"
    log_path = tmp_path / "learn.log"
    argv = [MLAGENTS_LEARN, "--torch-device", "cpu", "--timeout-wait", "60", write_config(tmp_path, 200000),
            f"--env={builds}/Balance", "--run-id=int", "--num-envs=1", f"--base-port={free_base_port(1)}",
            f"--results-dir={results}", "--no-graphics"]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    with open(log_path, "w") as log:
        # its own process group, as a terminal's foreground job: Ctrl+C signals the trainer and its workers
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=process_lifetime.sigint_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 150
        while "Balance. Step: 500." not in log_path.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.2)
        tree = _descendants(proc.pid)
        workers = [p for p in tree if b"mlagents_plugins.envs.standin" not in p[2]
                   and b"build_guard" not in p[2] and b"torch._inductor" not in p[2]]
        builds_running = [p for p in tree if b"mlagents_plugins.envs.standin" in p[2]]
        assert len(builds_running) == 1, tree
        assert len(workers) == (0 if mode == "in-process" else 1), tree
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log_path.read_text(errors="replace")
    assert code == 0, text[-3000:]
    assert "Learning was interrupted" in text and "Exported" in text, text[-3000:]
    assert (results / "int" / "Balance.onnx").is_file()
    player = (results / "int" / "run_logs" / "Player-0.log").read_text(errors="replace")
    if mode == "in-process":  # the build was closed by the trainer (status 400), not killed
        assert "the trainer closed the environment (status 400)" in player, player[-2000:] + text[-2000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(process_lifetime.process_alive(p, s) for p, s, _ in tree):
        time.sleep(0.1)
    assert not [p for p, s, _ in tree if process_lifetime.process_alive(p, s)], (tree, player[-2000:], text[-2000:])
