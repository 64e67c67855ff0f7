"""End to end: ``mlagents-learn`` with ``trainer_type: impala`` on the stand-in Balance build.

Trains with 2 environment copies and ``threaded: true``, checkpoints, resumes, and checks that the
exported ``Balance.onnx`` gives the same deterministic actions in onnxruntime as the PyTorch actor
restored from the final checkpoint.
"""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.networks import SimpleActor

from mlagents_plugins.envs.scenes import SCENES
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch
from tests.envs.conftest import REPO, free_base_port

pytestmark = pytest.mark.e2e

MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
HIDDEN = 32

CONFIG = """
behaviors:
  Balance:
    trainer_type: impala
    hyperparameters: {{batch_size: 128, buffer_size: 2048, learning_rate: 6.0e-4, unroll_length: 16, max_reuse: 2}}
    network_settings: {{hidden_units: %d, num_layers: 1}}
    reward_signals: {{extrinsic: {{gamma: 0.99, strength: 1.0}}}}
    max_steps: {max_steps}
    summary_freq: 300
    checkpoint_interval: 300
    keep_checkpoints: 5
    time_horizon: 32
    threaded: true
""" % HIDDEN


def learn(tmp_path, max_steps, builds, *extra):  # noqa: F811  (the fixture's value, passed on)
    cfg = tmp_path / f"impala_{max_steps}.yaml"
    cfg.write_text(CONFIG.format(max_steps=max_steps))
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    args = [MLAGENTS_LEARN, str(cfg), f"--env={builds}/Balance", "--run-id=impala", "--num-envs=2",
            f"--base-port={free_base_port(2)}", f"--results-dir={tmp_path / 'results'}", "--no-graphics",
            "--torch-device", "cpu", "--timeout-wait", "60", *extra]
    out = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout + out.stderr


def test_mlagents_learn_impala_checkpoint_resume_and_onnx(builds, tmp_path):  # noqa: F811
    text = learn(tmp_path, 600, builds)
    run = tmp_path / "results" / "impala"
    assert "Step: 600" in text
    assert glob.glob(str(run / "Balance" / "Balance-*.pt")) and (run / "Balance.onnx").is_file()

    text = learn(tmp_path, 900, builds, "--resume")
    assert "Resuming from" in text and "Step: 900" in text and "Step: 300." not in text
    steps = [int(os.path.basename(p)[len("Balance-"):-len(".onnx")]) for p in glob.glob(str(run / "Balance" / "Balance-*.onnx"))]
    assert max(steps) >= 900  # the resumed run wrote its own final checkpoint (steps jump by up to 8 agents x 2 envs)

    # Restore the actor from the final checkpoint and compare with the exported file.
    scene = SCENES["balance"]()
    from mlagents_envs.base_env import BehaviorSpec

    spec = BehaviorSpec(scene.observation_specs, scene.action_spec)
    policy = ImpalaPolicy(0, spec, NetworkSettings(hidden_units=HIDDEN, num_layers=1), SimpleActor,
                          {"conditional_sigma": False, "tanh_squash": False})
    state = torch.load(str(run / "Balance" / "checkpoint.pt"), map_location="cpu", weights_only=False)
    policy.actor.load_state_dict(state["Policy"])
    assert state["global_step"] is not None
    obs = [np.random.default_rng(0).normal(size=(6, 8)).astype(np.float32)]
    got = compare_onnx_with_torch(policy, str(run / "Balance.onnx"), obs, np.ones((6, 0), np.float32), np.zeros((6, 1, 0), np.float32))
    assert np.abs(got["deterministic_continuous_actions"]).max() > 0  # a real, non-zero policy output
