"""scripts/setup_env.sh refuses an interpreter outside Python 3.10-3.13 with one line naming the supported range,
before it creates anything."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _fake_python(tmp_path, version):
    path = tmp_path / f"python{version}"
    path.write_text(f"#!/bin/sh\necho {version}\n")  # answers the script's version query
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("version", ["3.9.18", "3.14.0", "2.7.18"])
def test_unsupported_interpreter_gets_one_line(tmp_path, version):
    venv = tmp_path / "venv"
    proc = subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "VENV": str(venv), "PYTHON": _fake_python(tmp_path, version)})
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"[setup] Python {version} is not supported: mlagents-plugins supports Python 3.10 to 3.13 "
        "(set PYTHON=... to one of those)"
    ]
    assert not venv.exists()


def test_an_interpreter_that_does_not_run_is_named(tmp_path):
    proc = subprocess.run(["bash", "scripts/setup_env.sh"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "VENV": str(tmp_path / "v"), "PYTHON": str(tmp_path / "nope")})
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1
    assert str(tmp_path / "nope") in proc.stderr and "3.10 to 3.13" in proc.stderr
