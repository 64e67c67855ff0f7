"""End to end: ``mlagents-learn`` trains fast_sac through the gRPC stand-in, is stopped, ``--resume`` restores
the replay buffer and counters and keeps learning; the exported ONNX matches the PyTorch policy."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from mlagents_plugins.testing.ports import free_base_port

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
#: steps of the finished run the resume and bad-file tests start from (200 of random play, then an update every 4)
FIRST_STEPS = 1000

CONFIG = """
behaviors:
  Balance:
    trainer_type: fast_sac
    hyperparameters: {{batch_size: 64, buffer_size: 5000, buffer_init_steps: 200, steps_per_update: 4,
                      save_replay_buffer: true, n_step: 3, learning_rate: 1.0e-3}}
    network_settings: {{hidden_units: 32, num_layers: 2}}
    reward_signals: {{extrinsic: {{gamma: 0.99, strength: 1.0}}}}
    max_steps: {max_steps}
    summary_freq: 500
    checkpoint_interval: 1000
    time_horizon: 32
"""


def _learn_command(tmp_path, builds, max_steps, *extra):
    """(argv, environment) of the mlagents-learn run the tests here make; a later ``--base-port`` in ``extra``
    overrides the random free one."""
    cfg = tmp_path / f"cfg_{max_steps}.yaml"
    cfg.write_text(CONFIG.format(max_steps=max_steps))
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    argv = [MLAGENTS_LEARN, str(cfg), f"--env={builds}/Balance", "--run-id=fs", f"--base-port={free_base_port()}",
            f"--results-dir={tmp_path / 'results'}", "--no-graphics", "--torch-device", "cpu", "--timeout-wait", "60",
            *extra]
    return argv, env


def _run_learn(tmp_path, builds, max_steps, *extra):
    argv, env = _learn_command(tmp_path, builds, max_steps, *extra)
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240, env=env)
    return out.returncode, out.stdout + out.stderr


def _learn(tmp_path, builds, max_steps, *extra):
    returncode, text = _run_learn(tmp_path, builds, max_steps, *extra)
    assert returncode == 0, text[-4000:]
    return text


def _saved_rows(text):
    return [int(m) for m in re.findall(r"Saved replay buffer \((\d+) rows\)", text)]


#: the tests below share one finished run (the module fixture), so pytest-xdist keeps them on one worker
GROUP = pytest.mark.xdist_group("fast_sac_e2e_finished_run")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, builds):
    """One short run with a saved replay buffer: (its results folder, its output).  The resume test continues a
    copy of it; each bad-file test damages a copy."""
    tmp_path = tmp_path_factory.mktemp("finished")
    text = _learn(tmp_path, builds, FIRST_STEPS)
    return tmp_path / "results", text


@GROUP
def test_train_stop_resume_restores_replay_and_onnx_matches_policy(tmp_path, builds, finished_run):
    from mlagents_plugins.replay.persistence import inspect_replay

    results, first = finished_run
    shutil.copytree(results, tmp_path / "results")
    run = tmp_path / "results" / "fs"
    replay_file = run / "Balance" / "replay_buffer.mlreplay"
    assert replay_file.is_file()
    rows_at_exit = _saved_rows(first)[-1]
    info = inspect_replay(str(replay_file), verify=True)
    assert info["verified"] and info["count"] == rows_at_exit and info["extra"]["trainer_type"] == "fast_sac"
    assert rows_at_exit >= FIRST_STEPS
    # the default compile_update (vector observations) took the compiled path (the whole step, or the loss alone
    # where the whole step could not be compiled), or fell back with a warning
    compiled = ("fast_sac update: whole step compiled in", "fast_sac update: compiled in", "fast_sac update: torch.compile failed")
    assert any(line in first for line in compiled), first[-3000:]

    second = _learn(tmp_path, builds, FIRST_STEPS + 1000, "--resume")
    m = re.search(r"Loaded replay buffer from .*replay_buffer.mlreplay: (\d+) rows, write position (\d+), (\d+) updates at step (\d+)", second)
    assert m, second[-3000:]
    rows, write_pos, updates, step = map(int, m.groups())
    assert rows == rows_at_exit and write_pos == rows_at_exit % 5000
    # counters exactly as saved at exit: the update ratio carries on without burst or stall
    assert step == info["extra"]["step"] and updates == info["extra"]["num_updates"] >= 150
    assert f"Step: {FIRST_STEPS + 1000}" in second and "Step: 500." not in second
    assert _saved_rows(second)[-1] > rows_at_exit  # kept collecting into the restored buffer

    # Exported ONNX == PyTorch policy on the final checkpoint (deterministic actions)
    from mlagents.trainers.policy.torch_policy import TorchPolicy
    from mlagents.trainers.settings import NetworkSettings
    from mlagents.trainers.torch_entities.networks import SimpleActor
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
    from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch

    spec = BehaviorSpec(
        [ObservationSpec((8,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "VectorSensor")], ActionSpec(2, ())
    )
    policy = TorchPolicy(0, spec, NetworkSettings(hidden_units=32, num_layers=2), SimpleActor,
                         {"conditional_sigma": True, "tanh_squash": True})
    state = torch.load(str(run / "Balance" / "checkpoint.pt"), map_location="cpu")
    policy.actor.load_state_dict(state["Policy"])
    obs = [np.random.default_rng(0).uniform(-1, 1, (5, 8)).astype(np.float32)]
    got = compare_onnx_with_torch(policy, str(run / "Balance.onnx"), obs, np.ones((5, 0), np.float32), np.zeros((5, 1, 0), np.float32))
    assert np.abs(got["deterministic_continuous_actions"]).max() > 0


def _snapshot(folder):
    # TensorBoard may open a new events file on the resume attempt; every other file must stay as it was.
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith("events.out")}


def _spec_mismatched_file(path):
    from mlagents_plugins.replay.buffer import ReplayBuffer
    from mlagents_plugins.replay.persistence import save_replay
    from mlagents_plugins.replay.specs import FieldSpec

    other = ReplayBuffer(100, {"obs_0": FieldSpec((3,), "float32"), "reward": FieldSpec((), "float32")})
    other.add({"obs_0": np.ones((4, 3), np.float32), "reward": np.arange(4, dtype=np.float32)})
    save_replay(str(path), other, {"step": 1000})


@GROUP
@pytest.mark.parametrize("damage", ["truncated", "flipped_byte", "spec_mismatch"])
def test_resume_with_a_bad_replay_file_fails_clearly_and_changes_no_file(tmp_path, builds, finished_run, damage):
    shutil.copytree(finished_run[0], tmp_path / "results")
    behavior_dir = tmp_path / "results" / "fs" / "Balance"
    replay_file = behavior_dir / "replay_buffer.mlreplay"
    good = replay_file.read_bytes()
    if damage == "truncated":
        replay_file.write_bytes(good[: len(good) // 2])
        expected = "is truncated"
    elif damage == "flipped_byte":
        pos = len(good) * 2 // 3  # inside the payload
        replay_file.write_bytes(good[:pos] + bytes([good[pos] ^ 0x10]) + good[pos + 1:])
        expected = "checksum"
    else:
        _spec_mismatched_file(replay_file)
        expected = "obs_0"
    before = _snapshot(behavior_dir)

    returncode, text = _run_learn(tmp_path, builds, 2000, "--resume")
    assert returncode != 0, text[-3000:]
    assert "--resume stopped" in text and expected in text and "move the file aside" in text, text[-3000:]
    assert "Saved replay buffer" not in text and "Not saving Balance" in text
    # The replay file, and every checkpoint file next to it, is exactly as before the failed resume.
    assert _snapshot(behavior_dir) == before
