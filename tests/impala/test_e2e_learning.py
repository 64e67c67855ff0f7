"""Issue #5: "a run with ``--num-envs 2`` and ``threaded: true`` learns too" - through the real ``mlagents-learn``.

The in-process harness runs one environment; this launches ``mlagents-learn`` on the stand-in Balance build
with ``--num-envs=2`` (two build processes, ML-Agents' SubprocessEnvManager) and the shipped
``configs/impala_balance.yaml`` with ``threaded: true`` and the default trust region (``surrogate_clip``
left unset, so the test also covers the new default), then reads the run's TensorBoard events.
The threshold (the scene's 5.0) applies to the mean of the last 3 reward summaries, so a run that peaks
and then collapses fails.
"""
import glob
import os
import subprocess
import sys
import time
from typing import Dict, List, Tuple

import numpy as np
import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mlagents_plugins.envs.scenes import SCENES
from mlagents_plugins.testing.ports import free_base_port
from tests.envs.conftest import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MLAGENTS_LEARN = os.path.join(os.path.dirname(sys.executable), "mlagents-learn")
REWARD_TAG = "Environment/Cumulative Reward"
LAG_TAG = "IMPALA/Policy Lag"
CLIP_TAG = "IMPALA/Fraction Outside Surrogate Clip"
MAX_STEPS = 40000
SUMMARY_FREQ = 2000
FINAL_WINDOW = 3


def scalars(run_dir: str, behavior: str) -> Dict[str, List[Tuple[int, float]]]:
    """Every scalar tag of a run's TensorBoard events, as sorted (step, value) lists."""
    files = sorted(glob.glob(os.path.join(run_dir, behavior, "events.out.tfevents.*")))
    assert files, f"no TensorBoard events under {os.path.join(run_dir, behavior)}"
    out: Dict[str, Dict[int, float]] = {}
    for f in files:
        acc = EventAccumulator(f, size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            out.setdefault(tag, {}).update({ev.step: ev.value for ev in acc.Scalars(tag)})
    return {tag: sorted(points.items()) for tag, points in out.items()}


def impala_balance_config(tmp_path) -> str:
    with open(os.path.join(REPO, "configs", "impala_balance.yaml")) as f:
        cfg = yaml.safe_load(f)
    behavior = cfg["behaviors"]["Balance"]
    behavior["hyperparameters"].pop("surrogate_clip")  # use the trainer's default (0.2)
    behavior.update(threaded=True, max_steps=MAX_STEPS, summary_freq=SUMMARY_FREQ, checkpoint_interval=MAX_STEPS)
    path = tmp_path / "impala_balance_threaded.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_mlagents_learn_two_envs_threaded_reaches_threshold(builds, tmp_path):  # noqa: F811
    results = tmp_path / "results"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    args = [MLAGENTS_LEARN, impala_balance_config(tmp_path), f"--env={builds}/Balance", "--run-id=impala2",
            "--num-envs=2", f"--base-port={free_base_port(2)}", f"--results-dir={results}", "--no-graphics",
            "--torch-device", "cpu", "--timeout-wait", "60", "--seed", "3"]
    start = time.time()
    out = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=540, env=env)
    wall = time.time() - start
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    run = results / "impala2"
    # two build processes really ran (one player log per --num-envs worker)
    assert sorted(os.path.basename(p) for p in glob.glob(str(run / "run_logs" / "Player-*.log"))) == \
        ["Player-0.log", "Player-1.log"]

    stats = scalars(str(run), "Balance")
    curve = stats[REWARD_TAG]
    final = float(np.mean([v for _, v in curve[-FINAL_WINDOW:]]))
    lag = [v for _, v in stats[LAG_TAG]]
    print(f"wall {wall:.0f} s, {len(curve)} summaries, final (mean of last {FINAL_WINDOW}) {final:.2f}, "
          f"mean policy lag {np.mean(lag):.1f}, curve {[round(v, 2) for _, v in curve]}")
    assert curve[-1][0] >= MAX_STEPS - SUMMARY_FREQ and len(curve) >= 15, curve
    assert curve[0][1] < 2.0, curve  # it started from a poor policy...
    assert final >= SCENES["balance"].success_threshold, curve  # ...and learned
    assert max(lag) > 0.0, lag  # the learner ran beside acting (threaded) on data from older policies
    assert CLIP_TAG in stats  # the default trust region was on
