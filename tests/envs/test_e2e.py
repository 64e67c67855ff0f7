"""End to end: the real ``mlagents-learn`` (subprocess) training built-in PPO through the stand-in."""
import glob
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from mlagents_plugins.testing.sockets import is_loopback, listening_addresses
from tests.envs.conftest import EDITOR_PORT, REPO, free_base_port, popen_standin, wait_for_editor_port

pytestmark = pytest.mark.e2e

MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")

CONFIG = """
behaviors:
  Balance:
    trainer_type: ppo
    hyperparameters: {{batch_size: 128, buffer_size: 512, learning_rate: 3.0e-4, num_epoch: 2}}
    network_settings: {{hidden_units: 32, num_layers: 1}}
    reward_signals: {{extrinsic: {{gamma: 0.99, strength: 1.0}}}}
    max_steps: {max_steps}
    summary_freq: 500
    checkpoint_interval: 1000
    keep_checkpoints: 5
    time_horizon: 32
environment_parameters:
  difficulty: 0.5
"""


def write_config(tmp_path, max_steps):
    path = tmp_path / f"cfg_{max_steps}.yaml"
    path.write_text(CONFIG.format(max_steps=max_steps))
    return str(path)


def learn(*args, timeout=150):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    start = time.time()
    out = subprocess.run([MLAGENTS_LEARN, "--torch-device", "cpu", "--timeout-wait", "60", *args], cwd=REPO,
                         capture_output=True, text=True, timeout=timeout, env=env)
    return out, time.time() - start


def check_onnx(path, obs_size=8, n_actions=2):
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for inp in sess.get_inputs():
        shape = [1 if not isinstance(d, int) else d for d in inp.shape]
        feeds[inp.name] = np.zeros(shape, dtype=np.float32)
    assert any(i.name.startswith("obs_0") for i in sess.get_inputs())
    outputs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    assert outputs["continuous_actions"].shape == (1, n_actions)
    assert np.all(np.isfinite(outputs["continuous_actions"]))


def test_launch_mode_two_envs_then_resume(builds, tmp_path):
    results = str(tmp_path / "results")
    base = free_base_port(2)
    out, wall = learn(write_config(tmp_path, 1000), f"--env={builds}/Balance", "--run-id=e2e", "--num-envs=2",
                      f"--base-port={base}", f"--results-dir={results}", "--no-graphics", "--env-args", "--num-areas", "2")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    run = os.path.join(results, "e2e")
    assert os.path.isfile(os.path.join(run, "Balance.onnx"))
    assert glob.glob(os.path.join(run, "Balance", "Balance-*.pt"))
    assert os.path.isfile(os.path.join(run, "Balance", "checkpoint.pt"))
    check_onnx(os.path.join(run, "Balance.onnx"))
    logs = sorted(glob.glob(os.path.join(run, "run_logs", "Player-*.log")))
    assert len(logs) == 2 and all("2 area(s), 8 agents" in open(p).read() for p in logs)
    events = glob.glob(os.path.join(run, "Balance", "events.out.tfevents.*"))
    assert events and any(b"Scene/Success Rate" in open(p, "rb").read() for p in events)
    assert "Step: 1000" in out.stdout + out.stderr

    out, _ = learn(write_config(tmp_path, 1500), f"--env={builds}/Balance", "--run-id=e2e", "--num-envs=2",
                   f"--base-port={free_base_port(2)}", f"--results-dir={results}", "--no-graphics", "--resume")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout + out.stderr
    assert "Resuming from" in text and "Step: 1500" in text and "Step: 500." not in text
    assert glob.glob(os.path.join(run, "Balance", "Balance-15*.onnx"))
    check_onnx(os.path.join(run, "Balance.onnx"))


def test_standin_that_quits_mid_run_is_restarted(builds, tmp_path):
    results = str(tmp_path / "results")
    out, _ = learn(write_config(tmp_path, 1000), f"--env={builds}/Balance", "--run-id=crash", "--num-envs=1",
                   f"--base-port={free_base_port(1)}", f"--results-dir={results}", "--no-graphics",
                   "--restarts-rate-limit-n", "20", "--env-args", "--quit-after-steps", "150")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "Restarting worker[0]" in text
    assert os.path.isfile(os.path.join(results, "crash", "Balance.onnx"))


def _watch_listening(port, seen, stop):
    while not stop.is_set():
        seen.update(listening_addresses(port))
        time.sleep(0.05)


def test_editor_mode(tmp_path):
    wait_for_editor_port()
    results = str(tmp_path / "results")
    proc = popen_standin("--scene", "balance", "--connect-timeout", "90", log_path=str(tmp_path / "editor.log"))
    seen, stop = set(), threading.Event()
    watcher = threading.Thread(target=_watch_listening, args=(EDITOR_PORT, seen, stop), daemon=True)
    watcher.start()
    try:
        out, _ = learn(write_config(tmp_path, 600), "--run-id=editor", f"--results-dir={results}")
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert "Listening on port 5004" in out.stdout + out.stderr
        assert proc.wait(timeout=30) == 0
        assert os.path.isfile(os.path.join(results, "editor", "Balance.onnx"))
        if sys.platform == "linux":  # the trainer's port was reachable from this machine only (loopback_bind)
            assert seen and all(is_loopback(a) for a in seen), seen
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
