"""mlagents-learn with trainer_type taac through a stand-in "Unity build", then --resume."""
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from mlagents_plugins.envs.standin import write_builds
from mlagents_plugins.testing.ports import free_base_port

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _learn(config: str, builds: str, results: str, *extra: str) -> str:
    learn = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
    cmd = [learn, config, f"--env={os.path.join(builds, 'Balance')}", "--run-id=taac_e2e", f"--results-dir={results}",
           "--no-graphics", "--num-envs=1", f"--base-port={free_base_port()}", "--torch-device=cpu", *extra]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


def _config(path: str, max_steps: int) -> str:
    # compile_update off: a one-off torch.compile would take most of these short runs (compiling: test_compiled_update)
    cfg = {"behaviors": {"Balance": {
        "trainer_type": "taac",
        "hyperparameters": {"batch_size": 32, "buffer_size": 5000, "buffer_init_steps": 200, "steps_per_update": 8.0,
                            "mini_batch_length": 3, "trajectory": "linear", "save_replay_buffer": True,
                            "compile_update": False},
        "network_settings": {"hidden_units": 16, "num_layers": 1},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "max_steps": max_steps, "time_horizon": 16, "summary_freq": 300, "checkpoint_interval": 200,
    }}}
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def test_mlagents_learn_then_resume(tmp_path):
    pytest.importorskip("onnxruntime")
    builds = str(tmp_path / "builds")
    write_builds(builds)
    results = str(tmp_path / "results")
    _learn(_config(str(tmp_path / "a.yaml"), 400), builds, results)
    run = os.path.join(results, "taac_e2e", "Balance")
    assert os.path.isfile(os.path.join(run, "replay_buffer.mlreplay"))
    onnx_path = os.path.join(results, "taac_e2e", "Balance.onnx")
    assert os.path.isfile(onnx_path)
    out = _learn(_config(str(tmp_path / "b.yaml"), 800), builds, results, "--resume")
    assert "Loaded replay buffer" in out, out[-3000:]
    status = yaml.safe_load(open(os.path.join(results, "taac_e2e", "run_logs", "training_status.json")))
    steps = [c["steps"] for c in status["Balance"]["checkpoints"]]
    assert max(steps) >= 800
    # The final file is a recurrent TAAC policy: memory = tau (linear, 2 x 2) + switch + repeats.
    import onnxruntime as ort

    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    assert "recurrent_out" in names
    feed = {"obs_0": np.zeros((2, 8), np.float32), "recurrent_in": np.zeros((2, 1, 6), np.float32)}
    feed = {k: v for k, v in feed.items() if k in {i.name for i in sess.get_inputs()}}
    outs = dict(zip(names, sess.run(names, feed)))
    assert int(np.asarray(outs["memory_size"]).ravel()[0]) == 6
    assert outs["recurrent_out"].shape == (2, 1, 6)
