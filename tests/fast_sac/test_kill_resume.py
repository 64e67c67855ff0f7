"""``kill -9`` of ``mlagents-learn`` mid-run, then ``--resume`` at once with no cleanup: the killed run's
environment workers and stand-in builds end by themselves (their port is free again), the resumed run loads the
replay buffer of the last checkpoint and finishes.  The killed run's gRPC ports listen on loopback only."""
import re
import signal
import subprocess
import time

import pytest
from test_e2e import REPO, _learn_command

from mlagents_plugins.testing.ports import free_base_port
from mlagents_plugins.testing.sockets import is_loopback, wait_until_listening
from mlagents_plugins.util import process_lifetime

pytestmark = pytest.mark.e2e

SAVED = "Saved replay buffer"


def _descendants(pid):
    """Every living descendant of ``pid`` as ``(pid, start_time)``."""
    found, todo = [], [pid]
    while todo:
        for child in process_lifetime.child_pids(todo.pop()):
            found.append((child, process_lifetime.start_time(child)))
            todo.append(child)
    return found


def _wait_for_text(path, text, count, proc, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        log = path.read_text(errors="replace")
        if log.count(text) >= count:
            return log
        assert proc.poll() is None, f"mlagents-learn exited early ({proc.returncode}):\n{log[-3000:]}"
        time.sleep(0.1)
    raise AssertionError(f"no {count} x {text!r} within {timeout_s} s:\n{path.read_text()[-3000:]}")


# two envs: slow (about 30 s); a two-env run resuming is also tests/envs/test_e2e.py's launch-mode case
@pytest.mark.parametrize("num_envs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_kill_9_then_resume_at_once(tmp_path, builds, num_envs):  # noqa: F811
    base = free_base_port(num_envs)
    extra = (f"--base-port={base}", f"--num-envs={num_envs}")
    argv, env = _learn_command(tmp_path, builds, 20000, *extra)
    env["MLAGENTS_PLUGINS_COMPILE"] = "0"  # torch.compile takes a minute on a busy machine; not what is tested
    log_path = tmp_path / "killed.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, cwd=REPO, env=dict(env, PYTHONUNBUFFERED="1"), stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        for worker in range(num_envs):
            addresses = wait_until_listening(base + worker, timeout_s=60)
            assert addresses and all(is_loopback(a) for a in addresses), (base + worker, addresses)
        first = _wait_for_text(log_path, SAVED, 2, proc, timeout_s=150)  # the second checkpoint
        rows_saved = [int(n) for n in re.findall(SAVED + r" \((\d+) rows\)", first)][-1]
        run_processes = _descendants(proc.pid)
        # workers and one stand-in build per worker
        assert len(run_processes) >= 2 * num_envs, run_processes
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    resumed = subprocess.Popen(_learn_command(tmp_path, builds, 2500, *extra, "--resume")[0], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while time.monotonic() - killed_at < 5 and any(process_lifetime.process_alive(*p) for p in run_processes):
            time.sleep(0.1)
        left = [p for p, started in run_processes if process_lifetime.process_alive(p, started)]
        assert not left, f"processes of the killed run still running: {left}"
        text, _ = resumed.communicate(timeout=240)
    finally:
        if resumed.poll() is None:
            resumed.kill()
            resumed.communicate()
    assert resumed.returncode == 0, text[-4000:]
    assert "UnityWorkerInUseException" not in text
    m = re.search(r"Loaded replay buffer from .*: (\d+) rows", text)
    assert m and int(m.group(1)) == rows_saved, text[-3000:]
    assert "Step: 2500" in text
