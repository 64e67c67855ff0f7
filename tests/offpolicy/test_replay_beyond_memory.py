"""A replay buffer larger than the memory the run may use: ``replay_storage: disk`` trains, checkpoints, is killed
with ``kill -9`` and resumes with its buffer exactly as saved.

The limit is ``RLIMIT_DATA`` set in the child (``limited_child.py``): it caps the process's private memory, where
an in-memory buffer lives, and leaves out shared file mappings, where a disk-backed buffer's rows are (pages of the
kernel's cache, reclaimed under pressure).  A memory cgroup would also cap that cache, but needs privileges CI does
not have.  The buffer (200k ``camera36`` rows, 3x36x36 frames) needs more than the limit: allocating it in memory
fails under the same limit.  The default run (in-process, ``limited_child.py``) writes a few thousand rows; of the
slow ones, one writes more rows than the limit holds before the kill, one runs through ``mlagents-learn`` and a
stand-in build.
"""
import os
import re
import resource
import subprocess
import sys

import pytest

from mlagents_plugins.replay.persistence import inspect_replay
from mlagents_plugins.testing.learn_process import run_then_kill_9
from mlagents_plugins.testing.ports import free_base_port

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHILD = os.path.join(HERE, "limited_child.py")
LIMIT_MB = 640
BUFFER_ROWS = 200_000
FRAME_BYTES = 3 * 36 * 36
SAVED = re.compile(r"REPLAY-SAVED step=(\d+) rows=(\d+) digest=(\w+)")
LOADED = re.compile(r"REPLAY-LOADED step=(\d+) rows=(\d+) digest=(\w+)")
CAPACITY = re.compile(r"REPLAY-CAPACITY rows=(\d+) bytes=(\d+) storage=(\w+)")


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                PYTHONWARNINGS="ignore")


def _child(tmp_path, *args):
    return [sys.executable, CHILD, "--limit-mb", str(LIMIT_MB), "--output", str(tmp_path / "results"), *args]


def test_the_limit_binds_an_in_memory_buffer_of_that_size():
    code = ("import resource, numpy as np; lim = %d << 20; resource.setrlimit(resource.RLIMIT_DATA, (lim, lim));"
            "np.zeros((%d, %d), np.uint8)" % (LIMIT_MB, BUFFER_ROWS, FRAME_BYTES))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "Unable to allocate" in out.stderr, out.stderr[-2000:]


def _run_and_kill_9(argv, log_path, saved, count, timeout_s, **popen):
    """Start ``argv`` (output to ``log_path``), wait for ``count`` lines matching ``saved``, then SIGKILL it a second
    later (rows after the last save reach the mapped files); returns the log."""
    return run_then_kill_9(argv, log_path, lambda log: len(saved.findall(log)) >= count, timeout_s, cwd=REPO,
                           env=_env(), settle_s=1.0, **popen)


def _kill_9_then_resume(tmp_path, first_args, saves_before_kill, resume_args, timeout_s):
    killed = _run_and_kill_9(_child(tmp_path, *first_args), tmp_path / "killed.log", SAVED, saves_before_kill,
                             timeout_s)
    capacity = CAPACITY.search(killed)
    assert capacity and int(capacity.group(1)) == BUFFER_ROWS and capacity.group(3) == "disk", killed[-3000:]
    assert int(capacity.group(2)) > LIMIT_MB << 20  # the buffer is larger than the memory the run may use
    saved = {int(step): (int(rows), digest) for step, rows, digest in SAVED.findall(killed)}
    state = tmp_path / "results" / "limited" / "Camera36" / "replay_buffer.mlreplay"
    on_disk = inspect_replay(state, verify=True)
    assert on_disk["storage"]["kind"] == "disk" and on_disk["extra"]["step"] in saved

    resumed = subprocess.run(_child(tmp_path, *resume_args, "--resume"), cwd=REPO, env=_env(), capture_output=True,
                             text=True, timeout=timeout_s)
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0 and "RUN-DONE" in text, text[-4000:]
    loaded = LOADED.search(text)
    assert loaded, text[-4000:]
    step, rows, digest = int(loaded.group(1)), int(loaded.group(2)), loaded.group(3)
    assert step == on_disk["extra"]["step"] and (rows, digest) == saved[step]  # the buffer as saved, exactly
    assert SAVED.search(text)  # and it trained on and saved again
    return rows


def test_disk_buffer_larger_than_allowed_memory_survives_kill_9_and_resumes(tmp_path):
    rows = _kill_9_then_resume(tmp_path, ["--storage", "disk", "--max-steps", "20000"], 2,
                               ["--storage", "disk", "--max-steps", "3500"], timeout_s=400)
    assert rows >= 1900


@pytest.mark.slow
def test_disk_buffer_filled_beyond_allowed_memory_survives_kill_9_and_resumes(tmp_path):
    """More rows written than the limit could hold in private memory (180k x 3.9 KB frames > 640 MB)."""
    first = ["--storage", "disk", "--max-steps", "400000", "--checkpoint-interval", "60000", "--steps-per-update", "64",
             "--num-areas", "4"]
    rows = _kill_9_then_resume(tmp_path, first, 3, ["--storage", "disk", "--max-steps", "185000",
                                                    "--checkpoint-interval", "60000", "--steps-per-update", "64",
                                                    "--num-areas", "4"], timeout_s=1800)
    assert rows * FRAME_BYTES > LIMIT_MB << 20
    in_memory = subprocess.run(_child(tmp_path / "mem", "--storage", "memory", "--max-steps", "1000"), cwd=REPO,
                               env=_env(), capture_output=True, text=True, timeout=600)
    assert in_memory.returncode != 0 and "Unable to allocate" in in_memory.stdout + in_memory.stderr


LEARN_CONFIG = """
behaviors:
  Camera36:
    trainer_type: fast_sac
    hyperparameters: {{buffer_size: {rows}, batch_size: 32, buffer_init_steps: 256, steps_per_update: 8,
                      save_replay_buffer: true, replay_storage: disk, compile_update: false}}
    network_settings: {{hidden_units: 32, num_layers: 1}}
    max_steps: {max_steps}
    summary_freq: 1000
    checkpoint_interval: 1000
    time_horizon: 64
"""
SAVED_ROWS = re.compile(r"Saved replay buffer \((\d+) rows\)")


def _limit_data():
    resource.setrlimit(resource.RLIMIT_DATA, (LIMIT_MB << 20, LIMIT_MB << 20))


def _learn(tmp_path, builds, max_steps, *extra):
    cfg = tmp_path / f"cfg_{max_steps}.yaml"
    cfg.write_text(LEARN_CONFIG.format(rows=BUFFER_ROWS, max_steps=max_steps))
    learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
    return [learn, str(cfg), f"--env={builds}/Camera36", "--run-id=limited", f"--base-port={free_base_port()}",
            f"--results-dir={tmp_path / 'results'}", "--no-graphics", "--torch-device", "cpu", "--timeout-wait", "60",
            *extra]


@pytest.mark.slow
@pytest.mark.e2e
def test_mlagents_learn_with_a_disk_buffer_beyond_allowed_memory_survives_kill_9(tmp_path, builds):
    killed = _run_and_kill_9(_learn(tmp_path, builds, 50000), tmp_path / "killed.log", SAVED_ROWS, 2, 900,
                             preexec_fn=_limit_data)
    state = inspect_replay(tmp_path / "results" / "limited" / "Camera36" / "replay_buffer.mlreplay", verify=True)
    assert state["storage"]["kind"] == "disk" and state["capacity"] == BUFFER_ROWS
    saved_rows = [int(n) for n in SAVED_ROWS.findall(killed)]
    assert state["count"] == saved_rows[-1]
    resumed = subprocess.run(_learn(tmp_path, builds, state["extra"]["step"] + 1500, "--resume"), cwd=REPO,
                             env=_env(), capture_output=True, text=True, timeout=900, preexec_fn=_limit_data)
    text = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, text[-4000:]
    loaded = re.search(r"Loaded replay buffer from .*: (\d+) rows, write position (\d+), (\d+) updates at step (\d+)",
                       text)
    assert loaded and int(loaded.group(1)) == state["count"] and int(loaded.group(4)) == state["extra"]["step"], \
        text[-3000:]
    assert SAVED_ROWS.search(text)
