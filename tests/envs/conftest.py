"""Shared helpers for the stand-in tests: launchers in a temp dir, free ports, the editor port."""
import os
import subprocess
import sys
import time

import pytest

from mlagents_plugins.testing.ports import free_base_port, port_is_free  # noqa: F401  (used by the stand-in tests)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EDITOR_PORT = 5004
#: every test that listens on or connects to EDITOR_PORT carries this mark: pytest-xdist (`make test`, --dist
#: loadgroup) runs them on one worker, one after the other, so two never race for the one port
ON_EDITOR_PORT = pytest.mark.xdist_group("editor_port_5004")


def wait_for_editor_port(seconds: float = 15.0) -> None:
    """Editor mode always uses 5004: wait briefly for a busy 5004, else skip (never hang or steal it)."""
    deadline = time.time() + seconds
    while not port_is_free(EDITOR_PORT):
        if time.time() > deadline:
            pytest.skip(f"port {EDITOR_PORT} (the editor port) is busy with another run; skipping editor-mode test")
        time.sleep(0.5)


def standin_cmd(*args: str):
    return [sys.executable, "-m", "mlagents_plugins.envs.standin", *args]


def popen_standin(*args: str, log_path: str) -> subprocess.Popen:
    return subprocess.Popen(standin_cmd(*args, "-logFile", log_path), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
