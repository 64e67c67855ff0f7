"""``python -m bench speed gpu``: steady-state rates from console summaries, the report's ratios on synthetic
records, argument checks, the camera build it writes, and the update part end to end at tiny sizes on the CPU."""
import json
import os

import numpy as np
import pytest

from bench_fixtures import REPO  # noqa: F401  (puts the repo root on sys.path)
from bench.speed import gpu

CONSOLE = """[INFO] Connected new brain: Camera84?team=0
[INFO] Camera84. Step: 1000. Time Elapsed: 20.000 s. No episode was completed since last summary. Training.
[INFO] Other. Step: 5000. Time Elapsed: 21.000 s. Mean Reward: 1.000. Std of Reward: 0.0. Training.
[INFO] Camera84. Step: 2000. Time Elapsed: 24.000 s. Mean Reward: -0.310. Std of Reward: 0.2. Training.
[INFO] Camera84. Step: 4000. Time Elapsed: 30.000 s. Mean Reward: 0.100. Std of Reward: 0.2. Training.
"""


def test_steady_rate_counts_from_the_first_summary_of_the_behavior():
    rate = gpu.steady_rate(CONSOLE, "Camera84")
    assert rate["steps_per_s"] == pytest.approx(3000 / 10.0)
    assert rate["first_summary_s"] == 20.0 and rate["measured_steps"] == 3000 and rate["last_step"] == 4000
    assert gpu.steady_rate(CONSOLE.splitlines()[1], "Camera84") is None  # one summary: no rate


def _learn(trainer, seed, steps_per_s, error=None):
    return {"part": "learn", "trainer": trainer, "seed": seed, "steps_per_s": steps_per_s, "first_summary_s": 5.0,
            "measured_steps": 1000, "error": error}


def _update(trainer, batch, ms):
    return {"part": "update", "trainer": trainer, "batch": batch, "ms_per_update": ms, "updates_per_s": 1000 / ms,
            "samples_per_s": 1000 * batch / ms, "error": None}


def test_report_ratios_are_per_pair_and_per_batch():
    runs = [_update("sac", 512, 8.0), _update("fast_sac", 512, 2.0), _update("sac", 1024, 12.0),
            _update("fast_sac", 1024, 4.0), _learn("sac", 0, 100.0), _learn("fast_sac", 0, 500.0),
            _learn("fast_sac", 1, 450.0), _learn("sac", 1, 90.0), _learn("sac", 2, 0.0, error="boom")]
    text = gpu.report(runs, {"device": "cuda (test)", "command": "x"})
    assert "| 512 | fast_sac | 2.000 | 500.0 | 256000 | 4.00 |" in text
    assert "| 1024 | fast_sac | 4.000 | 250.0 | 256000 | 3.00 |" in text
    assert "| fast_sac | 2 | 475.0 | 5.0 | 1000 | 5.00 5.00 |" in text
    assert "| sac | 2 (1 failed) | 95.0 |" in text and "sac seed 2: `boom`" in text


def test_arguments_are_checked(capsys):
    with pytest.raises(SystemExit):
        gpu.parse_args(["--agents", "6"])
    assert "multiple of 4" in capsys.readouterr().err
    args = gpu.parse_args(["--tiny", "--device", "cpu"])
    assert (args.image, args.agents, args.areas, args.batches) == (20, 8, 2, [16])


def test_the_written_build_serves_camera_frames_of_the_size(tmp_path):
    from mlagents_envs.environment import UnityEnvironment

    from mlagents_plugins.testing.ports import free_base_port

    path = gpu.write_build(str(tmp_path), 24)
    assert os.access(path, os.X_OK)
    env = UnityEnvironment(path[: -len(".x86_64")], base_port=free_base_port(), no_graphics=True, timeout_wait=60,
                           log_folder=str(tmp_path), num_areas=2)
    try:
        env.reset()
        name = list(env.behavior_specs)[0]
        assert name == "Camera24?team=0"
        spec = env.behavior_specs[name]
        assert [tuple(o.shape) for o in spec.observation_specs] == [(3, 24, 24), (2,)]
        decision, _ = env.get_steps(name)
        assert len(decision) == 8 and decision.obs[0].shape == (8, 3, 24, 24)
        assert np.allclose(decision.obs[0] * 255, np.round(decision.obs[0] * 255), atol=1e-3)  # 8-bit pixels
    finally:
        env.close()


def test_the_update_part_runs_at_tiny_sizes_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    assert gpu.main(["--device", "cpu", "--tiny", "--parts", "update", "--out", str(out)]) == 0
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["trainer"] for r in runs] == ["sac", "fast_sac"]
    assert all(r["error"] is None and r["ms_per_update"] > 0 and r["batch"] == 16 for r in runs)
    assert "| 16 | fast_sac |" in (out / "REPORT.md").read_text()


@pytest.mark.slow
def test_the_whole_command_at_tiny_sizes_on_the_cpu(tmp_path):
    """Both parts, with the forced whole step: what a GPU session runs, at sizes a CPU finishes in minutes."""
    out = tmp_path / "out"
    assert gpu.main(["--device", "cpu", "--tiny", "--whole-step", "--run-s", "90", "--out", str(out)]) == 0
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    updates = [r for r in runs if r["part"] == "update"]
    assert [r["trainer"] for r in updates] == ["sac", "fast_sac", "fast_sac_whole_step"]
    assert updates[2]["whole_mode"] == "on"
    learn = [r for r in runs if r["part"] == "learn"]
    assert sorted(r["trainer"] for r in learn) == ["fast_sac", "sac"]
    assert all(r["error"] is None and r["steps_per_s"] > 0 for r in learn), learn
