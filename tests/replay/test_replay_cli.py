"""mlagents-plugins-replay inspect: output and exit codes."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from mlagents_plugins.replay import FieldSpec, ReplayBuffer
from mlagents_plugins.replay.cli import EXIT_BAD_FILE, EXIT_OK, main
from mlagents_plugins.replay.persistence import save_replay

SPECS = {"obs": FieldSpec((3,), "float32"), "action": FieldSpec((2,), "int64"), "done": FieldSpec((), "bool")}


@pytest.fixture
def replay_file(tmp_path):
    buf = ReplayBuffer(8, SPECS, prioritized=True)
    for n in (3, 4, 5):
        buf.add({"obs": np.ones((n, 3)), "action": np.zeros((n, 2)), "done": np.zeros(n)})
    path = tmp_path / "buf.replay"
    save_replay(path, buf, {"step": 4242, "behavior": "Crawler?team=0"})
    return path


def test_inspect_text(replay_file, capsys):
    assert main(["inspect", str(replay_file)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "count:          8 rows" in out
    assert "capacity:       8" in out and "total_added:    12" in out and "write_pos:      4" in out
    assert "segments:       3" in out and "prioritized:    yes" in out
    assert f"size on disk:   {os.path.getsize(replay_file)} bytes" in out
    assert "obs     float32  shape (3,)" in out and "done    bool     shape ()" in out
    assert "step: 4242" in out and 'behavior: "Crawler?team=0"' in out
    assert "checksum" not in out


def test_inspect_json_and_verify(replay_file, capsys):
    assert main(["inspect", str(replay_file), "--json", "--verify"]) == EXIT_OK
    info = json.loads(capsys.readouterr().out)
    assert info["count"] == 8 and info["capacity"] == 8 and info["verified"] is True
    assert info["fields"]["action"] == {"shape": [2], "dtype": "int64"}
    assert info["extra"] == {"step": 4242, "behavior": "Crawler?team=0"}
    assert info["bytes"] == os.path.getsize(replay_file)


def test_bad_files_exit_nonzero(replay_file, tmp_path, capsys):
    data = bytearray(replay_file.read_bytes())
    data[-50] ^= 0xFF  # inside the payload
    bad = tmp_path / "bad.replay"
    bad.write_bytes(bytes(data))
    assert main(["inspect", str(bad)]) == EXIT_OK  # header is fine
    capsys.readouterr()
    assert main(["inspect", str(bad), "--verify"]) == EXIT_BAD_FILE
    err = capsys.readouterr().err
    assert "checksum mismatch" in err and str(bad) in err
    assert main(["inspect", str(tmp_path / "missing")]) == EXIT_BAD_FILE
    assert "does not exist" in capsys.readouterr().err
    bad.write_bytes(b"hello world, not a replay file")
    assert main(["inspect", str(bad), "--json"]) == EXIT_BAD_FILE
    captured = capsys.readouterr()
    assert "magic bytes" in captured.err and captured.out == ""
    with pytest.raises(SystemExit) as e:
        main(["inspect"])
    assert e.value.code == 2


def test_console_entry_runs_as_process(replay_file, tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    ok = subprocess.run([sys.executable, "-m", "mlagents_plugins.replay.cli", "inspect", str(replay_file), "--json"],
                        capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["count"] == 8
    (tmp_path / "trunc").write_bytes(replay_file.read_bytes()[:100])
    bad = subprocess.run([sys.executable, "-m", "mlagents_plugins.replay.cli", "inspect", str(tmp_path / "trunc")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1 and "truncated" in bad.stderr and bad.stdout == ""
