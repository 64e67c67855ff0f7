"""Learning runs (slow): balance reaches its threshold; on "switching" taac's final return beats fast_sac's at
the same step budget and reaches the scene's threshold.

Budgets and configs are the ones measured in docs/taac.md (in-process scenes, 1 CPU thread).
"""
import os

import pytest
import yaml
from mlagents.torch_utils import torch

from mlagents_plugins.envs.scenes import SCENES

pytestmark = pytest.mark.slow

COMMON = {"batch_size": 128, "buffer_size": 50000, "steps_per_update": 2.0, "learning_rate": 3.0e-4}
NETWORK = {"normalize": False, "hidden_units": 64, "num_layers": 2}
CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs")
SWITCHING_STEPS = 5000


def _config(trainer_type, hyper, summary_freq=2000):
    return {
        "trainer_type": trainer_type,
        "hyperparameters": hyper,
        "network_settings": NETWORK,
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "time_horizon": 64,
        "summary_freq": summary_freq,
        "checkpoint_interval": 1000000,
    }


def _taac(summary_freq=2000, **extra):
    hyper = dict(COMMON, mini_batch_length=4, init_action_temperature=0.1, init_switch_temperature=0.1, **extra)
    return _config("taac", hyper, summary_freq)


def _train(cfg, scene, steps, tmp_path, name):
    from mlagents_plugins.envs.harness import train_in_process

    torch.set_num_threads(1)
    return train_in_process(cfg, scene, max_steps=steps, seed=0, output_dir=str(tmp_path / name))


def test_balance_reaches_threshold(tmp_path):
    res = _train(_taac(buffer_init_steps=500), "balance", 12000, tmp_path, "balance")
    assert res.final_mean_reward >= SCENES["balance"].success_threshold, res.reward_curve


def _yaml_config(trainer_type, scene):
    """The behavior block of the shipped ``configs/<trainer>_<scene>.yaml`` (what users and the bench run)."""
    path = os.path.join(CONFIG_DIR, f"{trainer_type}_{scene}.yaml")
    with open(path) as f:
        behaviors = yaml.safe_load(f)["behaviors"]
    (cfg,) = behaviors.values()
    return dict(cfg, summary_freq=500, checkpoint_interval=1000000)


def _final(res, steps):
    """Mean episode reward over the last 10% of the run (summaries every 500 steps)."""
    tail = [r for s, r in res.reward_curve if s > 0.9 * steps]
    assert tail, res.reward_curve
    return sum(tail) / len(tail)


def test_switching_taac_beats_fast_sac_at_same_budget(tmp_path):
    """The issue's claim: on the switching-cost scene taac's final return beats fast_sac's at the same budget.

    Both run their shipped configs (configs/taac_switching.yaml, configs/fast_sac_switching.yaml) for the
    same number of steps, same seed; see docs/taac.md for the per-seed numbers.
    """
    steps = SWITCHING_STEPS
    taac = _train(_yaml_config("taac", "switching"), "switching", steps, tmp_path, "taac")
    sac = _train(_yaml_config("fast_sac", "switching"), "switching", steps, tmp_path, "sac")
    taac_final, sac_final = _final(taac, steps), _final(sac, steps)
    print(f"switching, {steps} steps, seed 0: taac final {taac_final:.2f}, fast_sac final {sac_final:.2f}")
    assert taac_final >= SCENES["switching"].success_threshold, taac.reward_curve
    assert taac_final > sac_final, (taac_final, sac_final, taac.reward_curve, sac.reward_curve)
