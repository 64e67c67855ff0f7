"""Learning through the stand-in scenes with the example configs (configs/impala_*.yaml)."""
import os

import pytest
import yaml
from mlagents.torch_utils import torch

from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.scenes import SCENES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def config(scene: str, **overrides) -> dict:
    with open(os.path.join(ROOT, "configs", f"impala_{scene}.yaml")) as f:
        behaviors = yaml.safe_load(f)["behaviors"]
    (cfg,) = behaviors.values()
    cfg.update(overrides)
    return cfg


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_balance_improves_quickly(tmp_path):
    """Default-run sanity check: a random policy scores ~0.2; after 16k steps impala is far above it."""
    res = train_in_process(config("balance"), "balance", max_steps=16000, num_areas=2, seed=0, output_dir=str(tmp_path))
    assert res.reward_curve[0][1] < 1.0, res.reward_curve
    assert res.final_mean_reward > 2.5, res.reward_curve
    assert res.stats["IMPALA/Policy Lag"][-1][1] >= 0.0


@pytest.mark.slow
def test_balance_reaches_threshold(tmp_path):
    res = train_in_process(config("balance"), "balance", max_steps=60000, num_areas=2, seed=0, output_dir=str(tmp_path))
    assert res.final_mean_reward >= SCENES["balance"].success_threshold, res.reward_curve
    assert res.reward_curve[0][1] < 2.0


@pytest.mark.slow
def test_balance_threaded_two_copies_learns(tmp_path):
    """threaded: true with two copies of the area: the learner runs beside acting and still learns."""
    res = train_in_process(config("balance", threaded=True), "balance", max_steps=60000, num_areas=2, seed=1,
                           output_dir=str(tmp_path))
    assert res.final_mean_reward >= SCENES["balance"].success_threshold, res.reward_curve
    lag = [v for _, v in res.stats["IMPALA/Policy Lag"]]
    assert max(lag) > 0.0


@pytest.mark.slow
def test_branches_reaches_threshold(tmp_path):
    res = train_in_process(config("branches"), "branches", max_steps=50000, num_areas=2, seed=0, output_dir=str(tmp_path))
    assert res.final_mean_reward >= SCENES["branches"].success_threshold, res.reward_curve
    assert res.reward_curve[0][1] < 0.0
