"""The in-process training harness: real mlagents trainers over SceneEnv."""
import glob
import os

import numpy as np
import pytest

from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.scenes import SCENES

PPO = {
    "trainer_type": "ppo",
    "hyperparameters": {"batch_size": 256, "buffer_size": 2048, "learning_rate": 3e-4, "beta": 1e-3,
                        "epsilon": 0.2, "lambd": 0.95, "num_epoch": 3, "learning_rate_schedule": "constant"},
    "network_settings": {"normalize": True, "hidden_units": 64, "num_layers": 2},
    "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
    "summary_freq": 2000,
    "time_horizon": 64,
    "keep_checkpoints": 2,
    "checkpoint_interval": 10000,
}


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_short_run_writes_models_and_curves_and_reads_parameters(tmp_path):
    cfg = dict(PPO, summary_freq=1000)
    res = train_in_process(cfg, "branches", max_steps=3000, output_dir=str(tmp_path), run_id="short",
                           environment_parameters={"difficulty": 0.2})
    assert res.behavior_name == "Branches" and res.steps >= 3000
    assert res.results_path == os.path.join(str(tmp_path), "short")
    assert [s for s, _ in res.reward_curve] == [1000, 2000, 3000]
    assert np.isfinite(res.final_mean_reward) and 0.0 <= res.success_rate <= 1.0
    assert res.stats["Scene/Difficulty"] and all(abs(v - 0.2) < 1e-6 for _, v in res.stats["Scene/Difficulty"])
    assert os.path.isfile(os.path.join(res.results_path, "Branches.onnx"))
    assert glob.glob(os.path.join(res.results_path, "Branches", "Branches-*.pt"))
    # resume continues from the checkpoint instead of starting over
    again = train_in_process(cfg, "branches", max_steps=4000, output_dir=str(tmp_path), run_id="short",
                             resume=True, environment_parameters={"difficulty": 0.2})
    assert [s for s, _ in again.reward_curve] == [4000]


def test_a_run_does_not_see_stats_left_by_an_earlier_one(tmp_path):
    from mlagents.trainers.stats import StatsReporter

    # What an earlier run in this process leaves when episodes end after its last summary.
    StatsReporter("Branches").add_stat("Environment/Cumulative Reward", 1.0e6)
    StatsReporter("Branches").add_stat("Scene/Difficulty", 7.0)
    res = train_in_process(dict(PPO, summary_freq=1000), "branches", max_steps=1000, output_dir=str(tmp_path),
                           environment_parameters={"difficulty": 0.3})
    assert res.reward_curve and all(r < 100.0 for _, r in res.reward_curve), res.reward_curve
    assert all(abs(v - 0.3) < 1e-6 for _, v in res.stats["Scene/Difficulty"])
    assert "Branches" not in StatsReporter.stats_dict  # and it leaves nothing for the next one


@pytest.mark.slow  # about 30 s; the harness's runs are checked by its short-run tests, learning by each trainer's
def test_ppo_solves_balance_within_30k_steps(tmp_path):
    res = train_in_process(PPO, "balance", max_steps=30000, num_areas=2, output_dir=str(tmp_path))
    assert res.final_mean_reward >= SCENES["balance"].success_threshold, res.reward_curve
    assert res.success_rate > 0.8
    assert res.reward_curve[0][1] < 2.0  # it really learned


@pytest.mark.parametrize("kwargs, message", [
    ({"max_steps": 0}, "max_steps=0 is invalid"),
    ({"max_steps": 10, "num_areas": 0}, "num_areas=0 is invalid"),
    ({"max_steps": 10, "config": {"hyperparameters": {}}}, "config must be one behavior's trainer settings"),
])
def test_bad_arguments_are_trainer_config_errors(tmp_path, kwargs, message):
    from mlagents.trainers.exception import TrainerConfigError

    args = dict(config=PPO, scene="balance", output_dir=str(tmp_path))
    args.update(kwargs)
    with pytest.raises(TrainerConfigError, match=message):
        train_in_process(**args)


def test_unknown_scene_is_named(tmp_path):
    with pytest.raises(ValueError, match="scene='cartpole' is unknown; allowed: balance, balance_and_reach, balance_big_reward_long, .*, switching_noisy"):
        train_in_process(PPO, "cartpole", max_steps=10, output_dir=str(tmp_path))


def test_curriculum_moves_the_scene_difficulty(tmp_path):
    curriculum = {"difficulty": {"curriculum": [
        {"name": "easy", "value": 0.0,
         "completion_criteria": {"behavior": "Branches", "measure": "progress", "threshold": 0.3}},
        {"name": "hard", "value": 1.0},
    ]}}
    res = train_in_process(dict(PPO, summary_freq=500), "branches", max_steps=3000, output_dir=str(tmp_path),
                           environment_parameters=curriculum)
    difficulty = res.stats["Scene/Difficulty"]
    assert difficulty[0][1] == 0.0 and difficulty[-1][1] == 1.0, difficulty
    lessons = [v for _, v in res.stats["Environment/Lesson Number/difficulty"]]
    assert lessons[0] == 0.0 and lessons[-1] == 1.0
