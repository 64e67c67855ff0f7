"""End to end with a recurrent config: ``mlagents-learn --env=<stand-in build>`` trains impala with
``network_settings.memory`` (a separate critic with its own LSTM) and checkpoints, is killed with ``kill -9``,
``--resume`` continues from the checkpoint's step with its weights and finishes, and the exported ONNX (ML-Agents'
recurrent contract) matches the checkpoint's PyTorch policy step by step over 50 steps, its memory fed back.

impala keeps no replay buffer: what a kill may not lose is the checkpoint (policy, critic with its LSTM, optimizer,
step), so the test checks that file and the step the resumed run starts from."""
import re

import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.envs.scenes import SCENES
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.testing.learn_process import learn_command, run_then_kill_9, run_to_end
from mlagents_plugins.testing.onnx_check import check_recurrent_onnx_over_sequence
from mlagents_plugins.testing.ports import free_base_port
from tests.envs.conftest import REPO

pytestmark = pytest.mark.e2e

HIDDEN, MEMORY = 32, 16
CONFIG = """
behaviors:
  Balance:
    trainer_type: impala
    hyperparameters: {{batch_size: 64, buffer_size: 256, unroll_length: 8, max_reuse: 2}}
    network_settings: {{hidden_units: %d, num_layers: 1, memory: {{memory_size: %d, sequence_length: 8}}}}
    max_steps: {max_steps}
    summary_freq: 200
    checkpoint_interval: 400
    keep_checkpoints: 10
    time_horizon: 32
""" % (HIDDEN, MEMORY)
EXPORTED = re.compile(r"Exported \S*Balance-(\d+)\.onnx")


def _command(tmp_path, builds, max_steps, *extra):
    return learn_command(tmp_path / f"cfg_{max_steps}.yaml", CONFIG.format(max_steps=max_steps), f"{builds}/Balance",
                         "rec", tmp_path / "results", free_base_port(), *extra)


def _global_step(state):
    """The step a checkpoint holds (ML-Agents' ``GlobalSteps`` module's one tensor)."""
    (value,) = state["global_step"].values()
    return int(value.item())


def test_recurrent_train_kill_9_resume_export(tmp_path, builds):
    text = run_then_kill_9(_command(tmp_path, builds, 50000), tmp_path / "killed.log",
                           lambda log: len(EXPORTED.findall(log)) >= 2, timeout_s=200, cwd=REPO)
    exported = [int(step) for step in EXPORTED.findall(text)]
    run = tmp_path / "results" / "rec"
    killed_state = torch.load(str(run / "Balance" / "checkpoint.pt"), map_location="cpu", weights_only=False)
    step = _global_step(killed_state)
    assert step >= exported[1] > 0 and "Optimizer:critic" in killed_state  # the second checkpoint, the critic's LSTM
    assert any("lstm" in name for name in killed_state["Optimizer:critic"])

    text = run_to_end(_command(tmp_path, builds, step + 300, "--resume"), timeout_s=300, cwd=REPO)
    assert f"Resuming training from step {step}." in text and "Failed to load" not in text, text[-3000:]
    summaries = [int(s) for s in re.findall(r"Step: (\d+)\.", text)]
    assert summaries and min(summaries) > step, summaries  # continued from the checkpoint, not from zero
    final_state = torch.load(str(run / "Balance" / "checkpoint.pt"), map_location="cpu", weights_only=False)
    assert _global_step(final_state) >= step + 300

    # the exported file: ML-Agents' recurrent contract, equal to the final checkpoint's policy step by step
    scene = SCENES["balance"]()
    spec = BehaviorSpec(scene.observation_specs, scene.action_spec)
    settings = NetworkSettings(hidden_units=HIDDEN, num_layers=1,
                               memory=NetworkSettings.MemorySettings(memory_size=MEMORY, sequence_length=8))
    policy = ImpalaPolicy(0, spec, settings, SimpleActor, {"conditional_sigma": False, "tanh_squash": False})
    policy.actor.load_state_dict(final_state["Policy"])
    obs = np.random.default_rng(0).uniform(-1, 1, (50, 8)).astype(np.float32)
    # impala's Gaussian is not squashed: ML-Agents exports the mean clipped to [-3, 3] / 3
    walk = check_recurrent_onnx_over_sequence(policy, str(run / "Balance.onnx"), [obs], np.ones((1, 1), np.float32),
                                              mean_to_action=lambda mu: torch.clamp(mu, -3, 3) / 3)
    assert np.abs(walk.memories).max() > 0 and np.abs(walk.continuous_actions).max() > 0
