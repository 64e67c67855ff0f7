"""End to end with a recurrent config: ``mlagents-learn --env=<stand-in build>`` trains fast_sac with
``network_settings.memory`` and checkpoints with the replay (memories included), is killed with ``kill -9``,
``--resume`` loads that replay and finishes, and the exported ONNX (ML-Agents' recurrent contract) matches the
checkpoint's PyTorch policy step by step over 50 steps, its memory fed back."""
import re

import numpy as np
import pytest
import torch
from test_e2e import REPO

from mlagents_plugins.testing.learn_process import learn_command, run_then_kill_9, run_to_end
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
    return learn_command(tmp_path / f"cfg_{max_steps}.yaml", CONFIG.format(max_steps=max_steps), f"{builds}/Balance",
                         "rec", tmp_path / "results", free_base_port(), *extra)


def test_recurrent_train_kill_9_resume_export(tmp_path, builds):
    text = run_then_kill_9(_command(tmp_path, builds, 50000), tmp_path / "killed.log",
                           lambda log: log.count(SAVED) >= 2, timeout_s=200, cwd=REPO)
    rows_saved = [int(n) for n in re.findall(SAVED + r" \((\d+) rows\)", text)][-1]
    run = tmp_path / "results" / "rec"
    from mlagents_plugins.offpolicy import sequences
    from mlagents_plugins.replay.persistence import inspect_replay

    info = inspect_replay(str(run / "Balance" / "replay_buffer.mlreplay"), verify=True)
    assert info["verified"] and info["count"] == rows_saved and sequences.MEMORY in info["fields"]

    text = run_to_end(_command(tmp_path, builds, 2200, "--resume"), timeout_s=300, cwd=REPO)
    m = re.search(r"Loaded replay buffer from .*: (\d+) rows", text)
    assert m and int(m.group(1)) == rows_saved, text[-3000:]
    assert "Step: 2000" in text and "Policy/Trained Rows" not in text  # ran, and no stat key leaked as text

    # the exported file: ML-Agents' recurrent contract, equal to the checkpoint's policy step by step
    from mlagents.trainers.policy.torch_policy import TorchPolicy
    from mlagents.trainers.settings import NetworkSettings
    from mlagents.trainers.torch_entities.networks import SimpleActor
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
    from mlagents_plugins.testing.onnx_check import check_recurrent_onnx_over_sequence

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
    # a squashed Gaussian: its deterministic action is tanh(mean) (host/deterministic_tanh.py, in mlagents-learn)
    walk = check_recurrent_onnx_over_sequence(policy, str(run / "Balance.onnx"), [obs], np.ones((1, 1), np.float32),
                                              mean_to_action=torch.tanh)
    assert np.abs(walk.memories).max() > 0
