"""End to end with a recurrent config: ``mlagents-learn --env=<stand-in build>`` trains fast_sac with
``network_settings.memory`` and checkpoints with the replay (memories included), is killed with ``kill -9``,
``--resume`` loads that replay and finishes, and the exported ONNX (ML-Agents' recurrent contract) matches the
checkpoint's PyTorch policy step by step over 50 steps, its memory fed back."""
import re
import signal
import subprocess
import time

import numpy as np
import pytest
import torch
from test_e2e import MLAGENTS_LEARN, REPO

from mlagents_plugins.testing.ports import free_base_port

pytestmark = pytest.mark.e2e

CONFIG = """
behaviors:
  Balance:
    trainer_type: fast_sac
    hyperparameters: {{batch_size: 64, buffer_size: 5000, buffer_init_steps: 200, steps_per_update: 4,
                      save_replay_buffer: true, n_step: 3, burn_in: 2}}
    network_settings: {{hidden_units: 32, num_layers: 1, memory: {{memory_size: 16, sequence_length: 8}}}}
    max_steps: {max_steps}
    summary_freq: 500
    checkpoint_interval: 600
    time_horizon: 32
"""
SAVED = "Saved replay buffer"
MEMORY = 16


def _command(tmp_path, builds, max_steps, *extra):
    cfg = tmp_path / f"cfg_{max_steps}.yaml"
    cfg.write_text(CONFIG.format(max_steps=max_steps))
    return [MLAGENTS_LEARN, str(cfg), f"--env={builds}/Balance", "--run-id=rec", f"--base-port={free_base_port()}",
            f"--results-dir={tmp_path / 'results'}", "--no-graphics", "--torch-device", "cpu", "--timeout-wait", "60",
            *extra]


def _env():
    import os

    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def test_recurrent_train_kill_9_resume_export(tmp_path, builds):
    log_path = tmp_path / "killed.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(_command(tmp_path, builds, 50000), cwd=REPO, env=_env(), stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline:
            text = log_path.read_text(errors="replace")
            if text.count(SAVED) >= 2:
                break
            assert proc.poll() is None, f"mlagents-learn exited early:\n{text[-3000:]}"
            time.sleep(0.2)
        else:
            raise AssertionError(f"no second checkpoint:\n{log_path.read_text()[-3000:]}")
        rows_saved = [int(n) for n in re.findall(SAVED + r" \((\d+) rows\)", text)][-1]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run = tmp_path / "results" / "rec"
    from mlagents_plugins.offpolicy import sequences
    from mlagents_plugins.replay.persistence import inspect_replay

    info = inspect_replay(str(run / "Balance" / "replay_buffer.mlreplay"), verify=True)
    assert info["verified"] and info["count"] == rows_saved and sequences.MEMORY in info["fields"]

    out = subprocess.run(_command(tmp_path, builds, 2200, "--resume"), cwd=REPO, env=_env(), capture_output=True,
                         text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    m = re.search(r"Loaded replay buffer from .*: (\d+) rows", text)
    assert m and int(m.group(1)) == rows_saved, text[-3000:]
    assert "Step: 2000" in text and "Policy/Trained Rows" not in text  # ran, and no stat key leaked as text

    # the exported file: ML-Agents' recurrent contract, equal to the checkpoint's policy step by step
    from mlagents.trainers.policy.torch_policy import TorchPolicy
    from mlagents.trainers.settings import NetworkSettings
    from mlagents.trainers.torch_entities.model_serialization import TensorNames
    from mlagents.trainers.torch_entities.networks import SimpleActor
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
    from mlagents_plugins.testing.onnx_check import run_onnx

    spec = BehaviorSpec(
        [ObservationSpec((8,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "VectorSensor")], ActionSpec(2, ())
    )
    settings = NetworkSettings(hidden_units=32, num_layers=1,
                               memory=NetworkSettings.MemorySettings(memory_size=MEMORY, sequence_length=8))
    policy = TorchPolicy(0, spec, settings, SimpleActor, {"conditional_sigma": True, "tanh_squash": True})
    state = torch.load(str(run / "Balance" / "checkpoint.pt"), map_location="cpu")
    policy.actor.load_state_dict(state["Policy"])
    assert "Optimizer:critic_memory_body" in state
    obs = np.random.default_rng(0).uniform(-1, 1, (50, 8)).astype(np.float32)
    memory = np.zeros((1, 1, MEMORY), np.float32)
    got_memory, got_action = [], []
    for step in range(50):
        result = run_onnx(str(run / "Balance.onnx"), [obs[step:step + 1]], np.ones((1, 1), np.float32), memory)
        assert int(np.asarray(result[TensorNames.memory_size]).reshape(-1)[0]) == MEMORY
        memory = np.asarray(result[TensorNames.recurrent_output], np.float32).reshape(1, 1, MEMORY)
        got_memory.append(memory.reshape(-1).copy())
        got_action.append(np.asarray(result[TensorNames.deterministic_continuous_action_output]).reshape(-1))
    with torch.no_grad():
        encoding, last = policy.actor.network_body([torch.as_tensor(obs)], memories=torch.zeros(1, 1, MEMORY),
                                                   sequence_length=50)
        mu = policy.actor.action_model._continuous_distribution.mu(encoding)
    np.testing.assert_allclose(np.stack(got_memory)[:, : MEMORY // 2], encoding.numpy(), atol=1e-5)
    np.testing.assert_allclose(got_memory[-1], last.reshape(-1).numpy(), atol=1e-5)
    np.testing.assert_allclose(np.stack(got_action), mu.numpy(), atol=1e-5)
    assert np.abs(np.stack(got_memory)).max() > 0
