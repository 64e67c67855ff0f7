"""End to end: ``mlagents-learn configs/gym/fast_sac_halfcheetah.yaml --env=<the HalfCheetah build>`` trains a few
hundred steps (max_steps and buffer_init_steps overridden), exports an ONNX whose deterministic actions equal the
PyTorch actor's, and ``--resume`` continues the run."""
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

pytest.importorskip("gymnasium", reason="the gym extra (requirements/gym.txt) is not installed")
pytest.importorskip("mujoco", reason="MuJoCo (gymnasium[mujoco]) is not installed")

from mlagents_plugins.testing.ports import free_base_port  # noqa: E402

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
CONFIG = os.path.join(REPO, "configs", "gym", "fast_sac_halfcheetah.yaml")


def _config(tmp_path, max_steps):
    with open(CONFIG) as f:
        raw = yaml.safe_load(f)
    cfg = raw["behaviors"]["HalfCheetah"]
    cfg.update(max_steps=max_steps, checkpoint_interval=200, summary_freq=100)
    cfg["hyperparameters"]["buffer_init_steps"] = 100
    path = tmp_path / f"cfg_{max_steps}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def _learn(tmp_path, build, max_steps, *extra):
    # compile off: a one-off torch.compile would take most of this short run
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MLAGENTS_PLUGINS_COMPILE="0")
    argv = [MLAGENTS_LEARN, _config(tmp_path, max_steps), f"--env={build}", "--run-id=gym",
            f"--base-port={free_base_port()}", f"--results-dir={tmp_path / 'results'}", "--no-graphics",
            "--torch-device", "cpu", "--timeout-wait", "60", "--seed", "3", *extra]
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    return text


def test_halfcheetah_config_trains_exports_matching_onnx_and_resumes(tmp_path):
    import torch
    from mlagents.trainers.policy.torch_policy import TorchPolicy
    from mlagents.trainers.settings import NetworkSettings
    from mlagents.trainers.torch_entities.networks import SimpleActor
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec

    from mlagents_plugins.envs.scenes.base import vector_observation
    from mlagents_plugins.envs.standin import write_gym_build
    from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch

    launcher = write_gym_build(str(tmp_path / "builds"), "HalfCheetah-v5")
    build = launcher[: -len(".x86_64")]
    first = _learn(tmp_path, build, 300)
    run = tmp_path / "results" / "gym"
    assert "HalfCheetah. Step: 300" in first
    log = (run / "run_logs" / "Player-0.log").read_text()
    assert "gym env HalfCheetah-v5, seed 3, 1 area(s), 1 agents" in log

    spec = BehaviorSpec([vector_observation(17)], ActionSpec(6, ()))
    with open(CONFIG) as f:  # the config's network (configs/gym's fast_sac normalizes its observations)
        (net,) = [b["network_settings"] for b in yaml.safe_load(f)["behaviors"].values()]
    policy = TorchPolicy(0, spec, NetworkSettings(hidden_units=256, num_layers=2, normalize=net["normalize"]), SimpleActor,
                         {"conditional_sigma": True, "tanh_squash": True})
    state = torch.load(str(run / "HalfCheetah" / "checkpoint.pt"), map_location="cpu")
    policy.actor.load_state_dict(state["Policy"])
    obs = [np.random.default_rng(0).normal(0, 2, (5, 17)).astype(np.float32)]
    got = compare_onnx_with_torch(policy, str(run / "HalfCheetah.onnx"), obs, np.ones((5, 0), np.float32),
                                  np.zeros((5, 1, 0), np.float32))
    actions = got["deterministic_continuous_actions"]
    assert actions.shape == (5, 6) and np.abs(actions).max() > 0 and np.abs(actions).max() <= 1.0

    second = _learn(tmp_path, build, 600, "--resume")
    assert "Resuming from" in second and "HalfCheetah. Step: 600" in second
    assert "HalfCheetah. Step: 100." not in second  # continued, not restarted
    steps = [int(p.name[len("HalfCheetah-"):-len(".onnx")]) for p in (run / "HalfCheetah").glob("HalfCheetah-*.onnx")]
    assert max(steps) >= 600, steps
