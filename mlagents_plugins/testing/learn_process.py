"""``mlagents-learn`` as a child process for end-to-end tests: its command line on a config, its environment (one
thread, unbuffered output), a run killed with ``kill -9`` once its log shows what the test waits for, and a run
taken to its end.

Why: a crash-safe checkpoint is only proven by killing a real run without warning and resuming from what it left;
the tests of every trainer that claim it share this one driver.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")


def learn_env(**extra: str) -> Dict[str, str]:
    """This process's environment with torch on one thread and the child's output unbuffered (so a log read while
    the run goes on holds every line written so far)."""
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)


def learn_command(config_path: Path, config_text: str, env_path: str, run_id: str, results_dir: Path,
                  base_port: int, *extra: str) -> List[str]:
    """Write ``config_text`` to ``config_path`` and return the ``mlagents-learn`` command line that trains it on the
    stand-in build ``env_path`` on CPU without graphics."""
    Path(config_path).write_text(config_text)
    return [MLAGENTS_LEARN, str(config_path), f"--env={env_path}", f"--run-id={run_id}", f"--base-port={base_port}",
            f"--results-dir={results_dir}", "--no-graphics", "--torch-device", "cpu", "--timeout-wait", "60", *extra]


def run_then_kill_9(argv: List[str], log_path: Path, ready: Callable[[str], bool], timeout_s: float,
                    cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None, settle_s: float = 0.0,
                    **popen: Any) -> str:
    """Start ``argv`` with its output in ``log_path``, wait until ``ready(log so far)``, ``settle_s`` seconds more,
    then ``kill -9`` it (``popen``: more ``subprocess.Popen`` arguments, e.g. ``preexec_fn``).

    Fails if the run ends first or ``ready`` stays false for ``timeout_s``; returns the whole log after the kill.
    """
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=env if env is not None else learn_env(), stdout=log,
                                stderr=subprocess.STDOUT, **popen)
    try:
        deadline = time.monotonic() + timeout_s
        while not ready(Path(log_path).read_text(errors="replace")):
            tail = Path(log_path).read_text(errors="replace")[-3000:]
            assert proc.poll() is None, f"mlagents-learn exited early ({proc.returncode}):\n{tail}"
            assert time.monotonic() < deadline, f"not ready within {timeout_s} s:\n{tail}"
            time.sleep(0.2)
        time.sleep(settle_s)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Path(log_path).read_text(errors="replace")


def run_to_end(argv: List[str], timeout_s: float, cwd: Optional[str] = None,
               env: Optional[Dict[str, str]] = None) -> str:
    """Run ``argv`` to its end; fails unless it exits 0; returns its output (stdout then stderr)."""
    out = subprocess.run(argv, cwd=cwd, env=env if env is not None else learn_env(), capture_output=True, text=True,
                         timeout=timeout_s)
    text = out.stdout + out.stderr
    assert out.returncode == 0, f"mlagents-learn failed ({out.returncode}):\n{text[-4000:]}"
    return text
