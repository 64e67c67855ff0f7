"""The .demo writer: mlagents' demo_loader reads it back, rewards/dones/actions match the expert run."""
import numpy as np
import pytest
import torch

from mlagents.trainers.buffer import BufferKey
from mlagents.trainers.demo_loader import demo_to_buffer, load_demonstration
from mlagents.trainers.trajectory import ObsUtil

from mlagents_plugins.envs.demo_writer import main, record_demo
from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.envs.scenes import SCENES


@pytest.mark.parametrize("scene", ["balance", "branches", "camera", "hybrid"])
def test_demo_loader_reads_what_we_wrote(scene, tmp_path):
    summary = record_demo(scene, str(tmp_path / f"{scene}.demo"), steps=120, seed=1, max_episode_steps=30)
    spec, pairs, total = load_demonstration(summary.path)
    assert total == len(pairs) == summary.number_steps
    env = SceneEnv(scene, seed=1, max_episode_steps=30)
    assert spec == env.behavior_specs[f"{SCENES[scene].behavior_name}?team=0"]
    loaded_spec, buf = demo_to_buffer(summary.path, 1, expected_behavior_spec=spec)
    assert buf.num_experiences == len(pairs) - 1
    # every recorded episode ends with a done; reward per episode matches the summary
    assert int(np.sum(buf[BufferKey.DONE])) == summary.number_episodes
    assert np.sum(buf[BufferKey.ENVIRONMENT_REWARDS]) / summary.number_episodes == pytest.approx(
        summary.mean_reward, rel=1e-4)
    assert summary.mean_reward > SCENES[scene].success_threshold or scene == "balance"  # balance capped at 30 steps


def test_first_slot_block_replays_the_expert(tmp_path):
    """Slot 0's pairs come first: their observations/actions are the expert's, step by step."""
    summary = record_demo("balance", str(tmp_path / "b.demo"), steps=40, seed=3, max_episode_steps=10)
    _, buf = demo_to_buffer(summary.path, 1)
    env = SceneEnv("balance", seed=3, max_episode_steps=10)
    env.reset()
    scene = env.academy.behaviors[0].scene
    obs0 = np.array(buf[ObsUtil.get_name_at(0)])
    acts = np.array(buf[BufferKey.CONTINUOUS_ACTION])
    for t in range(10):  # slot 0's first episode: 10 decisions
        dec, _ = env.get_steps("Balance?team=0")
        expert = scene.heuristic()
        np.testing.assert_allclose(obs0[t], dec.obs[0][0], rtol=1e-6)
        np.testing.assert_allclose(acts[t], expert.continuous[0], rtol=1e-6)
        env.set_actions("Balance?team=0", expert)
        env.step()


def test_cli_checks_its_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--scene", "balance", "--out", str(tmp_path / "x.txt")])
    assert "--out must end with .demo" in capsys.readouterr().err
    assert main(["--scene", "branches", "--steps", "50", "--out", str(tmp_path / "b.demo")]) == 0


def test_behavioral_cloning_from_the_demo_trains(tmp_path):
    torch.set_num_threads(1)
    demo = record_demo("branches", str(tmp_path / "Branches.demo"), steps=300, seed=0).path
    cfg = {
        "trainer_type": "ppo",
        "hyperparameters": {"batch_size": 128, "buffer_size": 1024, "learning_rate": 3e-4, "num_epoch": 3},
        "network_settings": {"hidden_units": 64, "num_layers": 2},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0},
                           "gail": {"strength": 0.01, "demo_path": demo}},
        "behavioral_cloning": {"demo_path": demo, "strength": 1.0, "steps": 0},
        "summary_freq": 1000,
        "time_horizon": 64,
    }
    res = train_in_process(cfg, "branches", max_steps=3000, output_dir=str(tmp_path), run_id="bc")
    assert "Losses/Pretraining Loss" in res.stats and "Losses/GAIL Loss" in res.stats, sorted(res.stats)
    loss = [v for _, v in res.stats["Losses/Pretraining Loss"]]
    assert loss[-1] < loss[0]
