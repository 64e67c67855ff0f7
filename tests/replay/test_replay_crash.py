"""A save killed at any moment (SIGKILL) or failing mid-way leaves the previous replay file loadable."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import mlagents_plugins
from mlagents_plugins.replay import FieldSpec, ReplayBuffer
from mlagents_plugins.replay import persistence
from mlagents_plugins.replay.errors import ReplaySaveError
from mlagents_plugins.replay.persistence import inspect_replay, load_replay, save_replay

SPECS = {"obs": FieldSpec((8,), "float32"), "reward": FieldSpec((), "float32"), "done": FieldSpec((), "bool")}
PKG_DIR = os.path.dirname(os.path.abspath(mlagents_plugins.__file__))
BIG = 400_000  # ~15 MB per save: each save takes long enough to be killed in the middle

# The child loads the replay modules without running ``mlagents_plugins/__init__`` (which imports torch for
# the ONNX export fix, ~2 s per process on the shared cores); the replay package does not depend on it.
CHILD = r"""
import sys, types
pkg = types.ModuleType("mlagents_plugins")
pkg.__path__ = [sys.argv[3]]
sys.modules["mlagents_plugins"] = pkg
import numpy as np
from mlagents_plugins.replay import FieldSpec, ReplayBuffer
from mlagents_plugins.replay.persistence import save_replay
n = int(sys.argv[2])
specs = {"obs": FieldSpec((8,), "float32"), "reward": FieldSpec((), "float32"), "done": FieldSpec((), "bool")}
buf = ReplayBuffer(n, specs)
g = np.arange(n, dtype=np.float32)
buf.add({"obs": np.repeat(g[:, None], 8, axis=1), "reward": g, "done": np.arange(n) % 7 == 0})
print("ready", flush=True)
i = 0
while True:
    save_replay(sys.argv[1], buf, {"generation": "new", "i": i})
    i += 1
"""


def old_buffer() -> ReplayBuffer:
    buf = ReplayBuffer(50, SPECS)
    g = np.arange(30, dtype=np.float32)
    buf.add({"obs": np.repeat(-g[:, None], 8, axis=1), "reward": -g, "done": np.zeros(30, bool)})
    return buf


def check_intact(path) -> str:
    """The file loads, verifies, and is exactly the old buffer or exactly a complete new one."""
    assert inspect_replay(path, verify=True)["verified"] is True
    buf, extra = load_replay(path, expected_fields=SPECS)
    rew = buf.gather(buf.chronological_indices(), ["reward"])["reward"]
    if extra["generation"] == "old":
        assert buf.size == 30
        np.testing.assert_array_equal(rew, -np.arange(30, dtype=np.float32))
    else:
        assert extra["generation"] == "new" and buf.size == BIG
        np.testing.assert_array_equal(rew, np.arange(BIG, dtype=np.float32))
    return extra["generation"]


def test_sigkill_during_save_keeps_previous_file(tmp_path):
    path = tmp_path / "replay.bin"
    save_replay(path, old_buffer(), {"generation": "old"})
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    killed_mid_save = 0
    for delay in (0.0, 0.02, 0.07, 0.15, 0.3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(BIG), PKG_DIR], stdout=subprocess.PIPE, env=env, cwd=os.getcwd()
        )
        try:
            assert child.stdout.readline().strip() == b"ready"
            time.sleep(delay)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
            child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        if os.path.exists(f"{path}.tmp-{child.pid}"):
            killed_mid_save += 1
        check_intact(path)
    # the timings are chosen so that a kill lands inside a save (a temporary file was left behind)
    print("killed mid-save:", killed_mid_save)
    assert killed_mid_save >= 1
    # the next save removes temporary files of dead savers and replaces the file atomically
    save_replay(path, old_buffer(), {"generation": "old"})
    assert sorted(os.listdir(tmp_path)) == ["replay.bin"]
    assert check_intact(path) == "old"


def test_failure_inside_save_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "replay.bin"
    save_replay(path, old_buffer(), {"generation": "old"})

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(persistence.os, "fsync", broken_fsync)
    big = ReplayBuffer(1000, SPECS)
    g = np.arange(1000, dtype=np.float32)
    big.add({"obs": np.zeros((1000, 8)), "reward": g, "done": np.zeros(1000, bool)})
    with pytest.raises(ReplaySaveError, match="No space left on device.*the previous file there is unchanged"):
        save_replay(path, big, {"generation": "new"})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["replay.bin"]
    assert check_intact(path) == "old"


def test_unusable_folder_is_a_clear_save_error(tmp_path):
    (tmp_path / "results").write_text("a file where the run's folder should be")
    with pytest.raises(ReplaySaveError, match=r"results/Balance/replay.bin: .*; no file was written"):
        save_replay(tmp_path / "results" / "Balance" / "replay.bin", old_buffer(), {"generation": "old"})
