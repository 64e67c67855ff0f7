"""End to end: the real ``mlagents-learn`` (subprocess) training built-in PPO through the stand-in, and a plugin
trainer and PPO side by side on a scene with two behaviors."""
import glob
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from mlagents_plugins.testing.sockets import is_loopback, listening_addresses
from tests.envs.conftest import EDITOR_PORT, ON_EDITOR_PORT, REPO, free_base_port, popen_standin, wait_for_editor_port

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


def check_onnx(path, continuous=2, discrete_branches=0):
    """The exported policy loads in onnxruntime and gives finite actions of the expected sizes for one agent."""
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for inp in sess.get_inputs():
        shape = [1 if not isinstance(d, int) else d for d in inp.shape]
        # action_masks: 1 = allowed (mlagents' export); observations and memories: zeros
        feeds[inp.name] = (np.ones if inp.name == "action_masks" else np.zeros)(shape, dtype=np.float32)
    assert any(i.name.startswith("obs_0") for i in sess.get_inputs())
    outputs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    for key, size in (("continuous_actions", continuous), ("discrete_actions", discrete_branches)):
        if size:
            assert outputs[key].shape == (1, size)
            assert np.all(np.isfinite(outputs[key]))
        else:
            assert key not in outputs


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
    # the resumed run's final checkpoint: at max_steps or past it (trajectories from two workers can arrive together
    # on a loaded machine, so the step lands anywhere from 1500 on)
    steps = [int(os.path.basename(p)[len("Balance-"):-len(".onnx")])
             for p in glob.glob(os.path.join(run, "Balance", "Balance-*.onnx"))]
    assert max(steps) >= 1500, steps
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


@ON_EDITOR_PORT
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


TWO_BEHAVIORS = """
behaviors:
  Balance:
    trainer_type: fast_sac
    # compile_update off: a one-off torch.compile would take most of this short run
    hyperparameters: {batch_size: 64, buffer_size: 5000, buffer_init_steps: 200, steps_per_update: 4.0,
                      compile_update: false}
    network_settings: {hidden_units: 32, num_layers: 1}
    max_steps: 1000
    summary_freq: 500
    checkpoint_interval: 1000
    time_horizon: 32
  Reach:
    trainer_type: ppo
    hyperparameters: {batch_size: 64, buffer_size: 256, num_epoch: 2}
    network_settings: {hidden_units: 32, num_layers: 1}
    max_steps: 1000
    summary_freq: 500
    checkpoint_interval: 1000
    time_horizon: 32
"""


def test_two_behaviors_two_trainers(builds, tmp_path):
    """One build, two behaviors: fast_sac (ours) trains Balance and PPO (built-in) trains Reach, each its own
    model, summaries and stats."""
    cfg = tmp_path / "two.yaml"
    cfg.write_text(TWO_BEHAVIORS)
    results = str(tmp_path / "results")
    out, _ = learn(str(cfg), f"--env={builds}/BalanceAndReach", "--run-id=two", "--num-envs=1",
                   f"--base-port={free_base_port(1)}", f"--results-dir={results}", "--no-graphics",
                   "--env-args", "--num-areas", "2")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    run = os.path.join(results, "two")
    log = open(os.path.join(run, "run_logs", "Player-0.log")).read()
    assert "2 area(s), 16 agents (behaviors: Balance?team=0, Reach?team=0)" in log
    for behavior, trainer, actions in (("Balance", "fast_sac", {"continuous": 2}),
                                       ("Reach", "ppo", {"continuous": 0, "discrete_branches": 2})):
        assert f"Hyperparameters for behavior name {behavior}: \n\ttrainer_type:\t{trainer}\n" in text
        assert f"[INFO] {behavior}. Step: 1000." in text, text[-4000:]
        assert os.path.isfile(os.path.join(run, behavior, "checkpoint.pt"))
        check_onnx(os.path.join(run, f"{behavior}.onnx"), **actions)
        events = glob.glob(os.path.join(run, behavior, "events.out.tfevents.*"))
        assert events and any(b"Scene/Success Rate" in open(p, "rb").read() for p in events)
