"""Learning runs of muzero_repr on the stand-in scenes (slow: minutes on 2 shared cores)."""
import os

import pytest
import yaml

from mlagents_plugins.envs.harness import train_in_process
from mlagents_plugins.envs.scenes import SCENES

CAMERA_STEPS = 6000  # ~130 s of CPU; 8 min of wall time on the loaded 2-core machine
CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs")


def behavior_config(name: str) -> dict:
    with open(os.path.join(CONFIGS, name)) as f:
        return list(yaml.safe_load(f)["behaviors"].values())[0]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.mark.slow
def test_balance_reaches_threshold(tmp_path):
    cfg = behavior_config("muzero_repr_balance.yaml")
    cfg["hyperparameters"]["save_replay_buffer"] = False
    res = train_in_process(cfg, "balance", max_steps=10000, num_areas=2, seed=0, output_dir=str(tmp_path),
                           final_window=2)
    assert res.reward_curve[0][1] < 2.0, res.reward_curve  # it really learned
    assert res.final_mean_reward >= SCENES["balance"].success_threshold, res.reward_curve


@pytest.mark.slow
def test_camera_visual_reaches_threshold(tmp_path):
    """Pixels: the committed camera config (h trained by the model loss and the critic's TD loss) passes the
    scene's threshold; a random policy scores about -0.6 (the first summary must be below 0)."""
    cfg = behavior_config("muzero_repr_camera.yaml")
    cfg["hyperparameters"]["save_replay_buffer"] = False
    cfg["summary_freq"] = 1000
    res = train_in_process(cfg, "camera", max_steps=CAMERA_STEPS, num_areas=2, seed=0, output_dir=str(tmp_path),
                           final_window=3)
    assert res.reward_curve[0][1] < 0.0, res.reward_curve
    assert res.final_mean_reward >= SCENES["camera"].success_threshold, res.reward_curve
