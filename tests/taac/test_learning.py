"""Learning runs (slow): balance reaches its threshold; on "switching" taac beats fast_sac at the same budget
(higher mean reward over the run) and reaches the scene's threshold.

Budgets and configs are the ones measured in docs/taac.md (one seed, in-process scenes, 1 CPU thread).
"""
import pytest
from mlagents.torch_utils import torch

from mlagents_plugins.envs.scenes import SCENES

pytestmark = pytest.mark.slow

COMMON = {"batch_size": 128, "buffer_size": 50000, "steps_per_update": 2.0, "learning_rate": 3.0e-4}
NETWORK = {"normalize": False, "hidden_units": 64, "num_layers": 2}


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


def test_switching_taac_beats_fast_sac_at_same_budget(tmp_path):
    steps = 25000
    taac = _train(_taac(2500, buffer_init_steps=1000), "switching", steps, tmp_path, "taac")
    sac_cfg = _config("fast_sac", dict(COMMON, buffer_init_steps=1000, tau=0.005, init_entcoef=0.1), 2500)
    sac = _train(sac_cfg, "switching", steps, tmp_path, "sac")
    assert taac.final_mean_reward >= SCENES["switching"].success_threshold, taac.reward_curve
    # "Beats" = more reward over the whole budget (mean of the reward curve, i.e. sample efficiency).  The
    # final values are close (seed 0: 3.25 vs 3.09; seed 1: 3.47 vs 3.38), the curve means are not
    # (2.31 vs 0.52; 2.04 vs 0.44): TAAC's held actions avoid the early switch-cost losses.
    mean = lambda res: sum(r for _, r in res.reward_curve) / len(res.reward_curve)
    assert mean(taac) > mean(sac) + 0.5, (taac.reward_curve, sac.reward_curve)
