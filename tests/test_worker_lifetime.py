"""A worker bound to its parent (``worker_lifetime``) ends, with the "build" it launched, when the parent is
killed: through the parent-death signal and through the watchdog thread; and under the ``spawn`` start method
ML-Agents' real ``SubprocessEnvManager`` gets the guarded worker and its loopback binding."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mlagents_plugins.envs.standin import write_builds
from mlagents_plugins.host import worker_lifetime
from mlagents_plugins.testing.ports import free_base_port
from mlagents_plugins.testing.sockets import is_loopback, wait_until_listening
from mlagents_plugins.util import process_lifetime

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A "trainer" that forks a worker (multiprocessing, as ML-Agents does); the worker binds itself to the trainer,
# launches a "build" in a new session (as mlagents_envs.env_utils.launch_executable does) and reports both pids.
CHAIN = textwrap.dedent("""
    import multiprocessing, os, subprocess, sys, time
    from mlagents_plugins.host import worker_lifetime

    def worker(use_death_signal, out):
        how = worker_lifetime.bind_to_parent(worker_lifetime._parent_pid(), use_death_signal=use_death_signal)
        build = subprocess.Popen(["sleep", "120"], start_new_session=True)
        out.send((os.getpid(), build.pid, how))
        time.sleep(120)

    if __name__ == "__main__":
        parent_end, child_end = multiprocessing.Pipe()
        multiprocessing.Process(target=worker, args=(sys.argv[1] == "1", child_end)).start()
        print(*parent_end.recv(), flush=True)
        time.sleep(120)
""")


def _wait_gone(pids, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(process_lifetime.process_alive(*p) for p in pids):
        time.sleep(0.05)
    return [p for p, started in pids if process_lifetime.process_alive(p, started)]


@pytest.mark.parametrize("use_death_signal,mechanism", [(True, "pdeathsig"), (False, "watchdog")])
@pytest.mark.skipif(sys.platform != "linux", reason="the test reads /proc")
def test_worker_and_its_build_end_when_the_trainer_is_killed(tmp_path, use_death_signal, mechanism):
    trainer = subprocess.Popen([sys.executable, "-c", CHAIN, "1" if use_death_signal else "0"], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
    try:
        worker_pid, build_pid, how = trainer.stdout.readline().split()
        assert how == mechanism
        pids = [(int(p), process_lifetime.start_time(int(p))) for p in (worker_pid, build_pid)]
        assert all(process_lifetime.process_alive(*p) for p in pids)
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        killed = time.monotonic()
        left = _wait_gone(pids, timeout_s=5)
        assert not left, f"still running after the trainer was killed: {left}"
        took = time.monotonic() - killed
        assert took < (1.0 if use_death_signal else 2.0) + worker_lifetime.BUILD_GRACE_S, took
    finally:
        trainer.kill()
        trainer.wait()
        trainer.stdout.close()


# ML-Agents' own SubprocessEnvManager with a stand-in build, under the spawn start method (macOS' default):
# the child imports ML-Agents afresh, so the guarded worker must install the patches there itself.
SPAWN = textwrap.dedent("""
    import multiprocessing, os, sys, time
    if __name__ == "__main__":
        multiprocessing.set_start_method("spawn")
        from mlagents.trainers import subprocess_env_manager
        from mlagents.trainers.learn import create_environment_factory
        from mlagents.trainers.settings import RunOptions
        from mlagents_plugins.host import hook, worker_lifetime
        hook.stats_writers(None)
        assert subprocess_env_manager.worker is worker_lifetime.guarded_worker
        factory = create_environment_factory(sys.argv[1], True, False, 0, 1, 60, int(sys.argv[2]), None, sys.argv[3])
        manager = subprocess_env_manager.SubprocessEnvManager(factory, RunOptions(), 1)
        manager.reset({})  # a full exchange with the build: its first step carries the behavior
        print(sorted(manager.training_behaviors), manager.env_workers[0].process.pid, flush=True)
        time.sleep(120)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="the test reads /proc")
def test_spawned_worker_binds_loopback_and_ends_with_its_trainer(tmp_path):
    write_builds(str(tmp_path / "builds"))
    port = free_base_port()
    trainer = subprocess.Popen(
        [sys.executable, "-c", SPAWN, str(tmp_path / "builds" / "Balance"), str(port), str(tmp_path / "logs")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = trainer.stdout.readline()
        if "Balance?team=0" not in line:
            trainer.kill()
            raise AssertionError(line + trainer.stderr.read()[-3000:])
        worker_pid = int(line.split()[-1])
        addresses = wait_until_listening(port, timeout_s=5)
        assert addresses and all(is_loopback(a) for a in addresses), addresses
        pids = [(p, process_lifetime.start_time(p)) for p in [worker_pid] + process_lifetime.child_pids(worker_pid)]
        assert len(pids) == 2, pids  # the worker and its stand-in build
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        left = _wait_gone(pids, timeout_s=5)
        assert not left, f"still running after the trainer was killed: {left}"
    finally:
        trainer.kill()
        trainer.wait()
        trainer.stdout.close()
        trainer.stderr.close()
