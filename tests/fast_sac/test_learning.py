"""fast_sac learns the stand-in scenes through real in-process ML-Agents training (train_in_process).

Balance runs in the default suite (~20 s of CPU); the discrete, hybrid and visual scenes and the holding
runs (issue #14) are ``slow``.
"""
import copy

import pytest

from bench.holding import holding_summary, issue_config, minimal_holding_config, shipped_config
from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.scenes import SCENES, scene_class

BASE = dict(
    trainer_type="fast_sac",
    hyperparameters=dict(
        batch_size=128,
        buffer_size=50000,
        buffer_init_steps=500,
        steps_per_update=2.0,
        learning_rate=1.0e-3,
        n_step=3,
        init_entcoef=0.5,
    ),
    network_settings=dict(hidden_units=64, num_layers=2, normalize=False),
    reward_signals=dict(extrinsic=dict(gamma=0.99, strength=1.0)),
    time_horizon=32,
    summary_freq=1000,
    checkpoint_interval=10 ** 9,
)


def _train(tmp_path, scene, max_steps, hyper=None, net=None, areas=4):
    cfg = copy.deepcopy(BASE)
    cfg["hyperparameters"].update(hyper or {})
    cfg["network_settings"].update(net or {})
    return train_in_process(cfg, scene, max_steps=max_steps, seed=0, num_areas=areas, output_dir=str(tmp_path))


def test_balance_continuous_reaches_threshold(tmp_path, one_thread):
    result = _train(tmp_path, "balance", 12000)
    assert result.final_mean_reward >= SCENES["balance"].success_threshold, result.reward_curve


@pytest.mark.slow
def test_branches_discrete_with_masks_reaches_threshold(tmp_path, one_thread):
    # 40k steps was marginal (seeds 0/1/2: 0.56/0.71/0.79, and 0.82/0.70 for seeds 0/1 before this session's
    # kernel changes, which only change rounding); at 60k seeds 0/1 give 0.76/0.85.
    result = _train(tmp_path, "branches", 60000, hyper=dict(init_entcoef=0.05, steps_per_update=1.0))
    assert result.final_mean_reward >= SCENES["branches"].success_threshold, result.reward_curve


@pytest.mark.slow
def test_hybrid_reaches_threshold(tmp_path, one_thread):
    result = _train(tmp_path, "hybrid", 40000, hyper=dict(init_entcoef=0.1, steps_per_update=1.0))
    assert result.final_mean_reward >= SCENES["hybrid"].success_threshold, result.reward_curve


@pytest.mark.slow
def test_camera_visual_reaches_threshold(tmp_path, one_thread):
    result = _train(
        tmp_path, "camera", 40000, hyper=dict(init_entcoef=0.05, steps_per_update=1.0), net=dict(vis_encode_type="simple")
    )
    assert result.final_mean_reward >= SCENES["camera"].success_threshold, result.reward_curve


@pytest.mark.slow
def test_balance_with_prioritized_replay_reaches_threshold(tmp_path, one_thread):
    result = _train(tmp_path, "balance", 12000, hyper=dict(prioritized_replay=True, per_alpha=0.6, per_beta=0.4))
    assert result.final_mean_reward >= SCENES["balance"].success_threshold, result.reward_curve


@pytest.mark.slow  # 1 s to 45 s wall from run to run (env and trainer threads share the GIL)
def test_threaded_trainer_runs_and_updates(tmp_path, one_thread):
    cfg = copy.deepcopy(BASE)
    cfg["threaded"] = True
    cfg["hyperparameters"].update(buffer_init_steps=200, steps_per_update=4.0, batch_size=32)
    cfg["network_settings"].update(hidden_units=16, num_layers=1)
    cfg["summary_freq"] = 400
    result = train_in_process(cfg, "balance", max_steps=1200, seed=0, num_areas=1, output_dir=str(tmp_path))
    assert result.steps >= 1200
    updates = result.stats["Replay/Updates"]
    assert updates[-1][1] >= (800 - 200) / 4  # updates kept up with the env while running in its own thread


# Holding (issue #14): over a run at least twice as long as the threshold needs, the threshold is reached and
# the final rolling mean (3 summaries of 1000 steps) stays >= HOLD x its best.  Configs and area count are
# bench/holding.py's, so `python -m bench holding` reproduces a failure with its curve and stats; the step
# counts are twice the measured steps to threshold or more (docs/fast_sac.md, issue #14 section).
HOLD = 0.9


@pytest.mark.slow
@pytest.mark.parametrize(
    "scene, config, steps, seed",
    [
        ("reach", "issue", 30000, 1),
        ("reach", "issue", 30000, 2),
        ("hybrid", "shipped", 30000, 0),
        ("hybrid", "shipped", 30000, 1),
        # The defaults benchmark's drop-in config (init_entcoef at its default 1.0, n_step at its default 2):
        # reach reached 1.2 at 14k-17k steps on seeds 0-2 and held (1.00 / 0.97 / 1.00).  With one-step
        # targets seed 1 of reach ended at 0.88 of its best and seed 1 of branches_sparse at 0.65 (0.84 at 9k,
        # 0.54 at 30k); with n_step 2 branches_sparse reached 0.7 at 11k / 11k / 18k and held (docs/fast_sac.md,
        # "n-step targets").
        ("reach", "minimal", 40000, 0),
        ("reach", "minimal", 40000, 1),
        ("branches_sparse", "minimal", 30000, 1),
        # The issue's config on hybrid actions, where every seed fell with one-step targets: with n_step 2,
        # 1.0 at 9k / 10k and 0.99 of the best at 30k on these seeds (bench/results/fast-sac-vs-sac-discrete-2026-11-25/).
        ("hybrid", "issue", 30000, 1),
        ("hybrid", "issue", 30000, 2),
    ],
)
def test_holds_what_it_learns(tmp_path, one_thread, scene, config, steps, seed):
    configs = {"issue": lambda: issue_config("fast_sac", {}), "shipped": lambda: shipped_config("fast_sac", scene, {}),
               "minimal": lambda: minimal_holding_config("fast_sac", {})}
    cfg = configs[config]()
    result = train_in_process(cfg, scene, max_steps=steps, seed=seed, num_areas=2, output_dir=str(tmp_path))
    s = holding_summary(result.reward_curve, scene_class(scene).success_threshold)
    assert s["steps_to_threshold"] is not None and s["steps_to_threshold"] <= steps // 2, (s, result.reward_curve)
    assert s["final"] >= HOLD * s["best"], (s, result.reward_curve)
