"""mlagents-learn end to end with trainer_type muzero_repr on the gRPC "Unity build" of balance, then --resume.

Checks the plugin is found through its entry point, the .onnx is written, and --resume restores the learned
model, the RL head and the replay buffer (with its update counters) instead of starting over.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
import yaml
from mlagents_plugins.testing.ports import free_base_port

# ~100 s on 2 shared cores (two mlagents-learn start-ups): not part of the default run.
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def learn(config, builds, results, resume, port):
    cmd = [os.path.join(BIN, "mlagents-learn"), config, f"--env={builds}/Balance", "--run-id=mz",
           f"--results-dir={results}", f"--base-port={port}", "--num-envs=1", "--no-graphics",
           "--torch-device=cpu"]
    cmd.append("--resume" if resume else "--force")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=400, cwd=ROOT)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    return log


def test_mlagents_learn_and_resume(tmp_path):
    if shutil.which("mlagents-learn", path=BIN) is None:
        pytest.skip("mlagents-learn is not installed in this environment")
    builds = tmp_path / "builds"
    subprocess.run([sys.executable, "-m", "mlagents_plugins.envs.standin", "--write-builds", str(builds)],
                   check=True, capture_output=True, cwd=ROOT)
    with open(os.path.join(ROOT, "configs", "muzero_repr_balance.yaml")) as f:
        cfg = yaml.safe_load(f)
    b = cfg["behaviors"]["Balance"]
    b.update(max_steps=600, summary_freq=300, checkpoint_interval=600)
    # compile_update off: a one-off torch.compile of both updates would take most of these short runs
    # (compiling: test_muzero_compiled_update.py; through mlagents-learn: tests/fast_sac/test_e2e.py)
    b["hyperparameters"].update(buffer_init_steps=100, batch_size=32, steps_per_update=4.0, compile_update=False)
    config = tmp_path / "mz.yaml"
    config.write_text(yaml.safe_dump(cfg))
    results = tmp_path / "results"
    log1 = learn(str(config), builds, results, False, free_base_port())
    run = results / "mz"
    assert (run / "Balance.onnx").is_file(), log1[-3000:]
    assert (run / "Balance" / "replay_buffer.mlreplay").is_file()
    ckpt = torch.load(run / "Balance" / "checkpoint.pt", map_location="cpu", weights_only=False)
    for key in ("Policy", "Optimizer:muzero_model", "Optimizer:muzero_target_model", "Optimizer:q_net",
                "Optimizer:target_q", "Optimizer:temperatures", "Optimizer:model_opt", "Optimizer:rl_opt"):
        assert key in ckpt, sorted(ckpt)
    first_repr = ckpt["Optimizer:muzero_model"]["representation.out.weight"].clone()

    b["max_steps"] = 1200
    config.write_text(yaml.safe_dump(cfg))
    log2 = learn(str(config), builds, results, True, free_base_port())
    resumed = re.search(r"Resuming training from step (\d+)", log2)
    assert resumed and int(resumed.group(1)) >= 600, log2[-3000:]
    assert "Failed to load" not in log2, log2[-3000:]  # ML-Agents' warning for a module it re-initialised
    loaded = re.search(r"Loaded replay buffer from .*: (\d+) rows, .* (\d+) updates at step (\d+)", log2)
    assert loaded and int(loaded.group(1)) > 0 and int(loaded.group(2)) > 0, log2[-3000:]
    saved = [int(n) for n in re.findall(r"Saved replay buffer \((\d+) rows\)", log2)]
    assert saved and saved[-1] > int(loaded.group(1))  # the restored rows plus the new ones
    ckpt2 = torch.load(run / "Balance" / "checkpoint.pt", map_location="cpu", weights_only=False)
    # The resumed run kept training the restored model (it did not stop at the restored weights).
    assert not torch.equal(ckpt2["Optimizer:muzero_model"]["representation.out.weight"], first_repr)
