"""Checkpoints written by release 0.1.0 (tests/data/release-0.1.0) load into the current trainers.

ML-Agents' model saver loads a checkpoint module by module with ``strict=False`` and only warns about what it does not
find, so a renamed module or parameter would silently start from fresh weights; these tests compare every module
of the resumed trainer with the file, then continue the run with ``--resume`` semantics.
"""
import json
import math
import os
import shutil

import pytest
import torch
from mlagents import plugins as mla_plugins
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import TrainerSettings

from mlagents_plugins.envs.inprocess import SceneEnv
from tests import release_fixtures as fixtures
from tests.builders import assert_same_state

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "release-0.1.0")
RESUMED_STEPS = 200

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _fixture(name: str):
    with open(os.path.join(DATA, name, fixtures.FIXTURE_JSON)) as f:
        return json.load(f)


def _resumed_trainer(name: str, fixture, artifact_path: str):
    """The trainer ``mlagents-learn --resume`` builds for the fixture's behavior, its policy added (which loads
    ``artifact_path/checkpoint.pt`` through ML-Agents' model saver)."""
    behavior = fixture["behavior_name"]
    env = SceneEnv(fixture["scene"], seed=fixture["seed"])
    try:
        env.reset()
        spec = env.behavior_specs[f"{behavior}?team=0"]
    finally:
        env.close()
    settings = TrainerSettings.structure(dict(fixture["settings"], max_steps=10**6), TrainerSettings)
    trainer = mla_plugins.all_trainer_types[name](behavior, 10, settings, True, True, fixture["seed"], artifact_path)
    behavior_id = BehaviorIdentifiers.from_name_behavior_id(f"{behavior}?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    return trainer


@pytest.mark.parametrize("name", sorted(fixtures.FIXTURES))
def test_release_checkpoint_loads_every_module_exactly(tmp_path, name):
    fixture = _fixture(name)
    source = os.path.join(DATA, name, fixtures.CHECKPOINT)
    saved = torch.load(source)
    artifact = str(tmp_path / fixture["behavior_name"])
    os.makedirs(artifact)
    shutil.copyfile(source, os.path.join(artifact, fixtures.CHECKPOINT))
    trainer = _resumed_trainer(name, fixture, artifact)
    modules = trainer.model_saver.modules
    assert set(modules) == set(saved), f"checkpoint modules {sorted(saved)}, trainer's {sorted(modules)}"
    for key, module in modules.items():
        state = module.state_dict()
        added = _check_added_since_release(name, key, state, set(saved[key]))
        assert_same_state({k: v for k, v in state.items() if k not in added}, saved[key], key)
    assert trainer.get_step == fixture["step"]


#: State a trainer's module has gained since release 0.1.0 (module name -> key prefix -> where it comes from on
#: loading an older checkpoint): muzero_repr's target copy of h, which the SAC head reads (issue #52), starts as
#: the loaded h; the model-update count starts at 0; the critic-gradient and latent-scaling records hold the old
#: rules' values.
ADDED_SINCE_RELEASE = {
    ("muzero_repr", "Policy"): {
        "network_body.target_representation.": "network_body.representation.",
        "network_body.target_synced": None,
        "network_body.model_updates": None,
        "network_body.critic_gradient": None,  # 0: the release resolved rl_gradient_to_repr off for its hybrid scene
        "network_body.latent_scaling_code": None,  # 0: min_max, the only scaling the release had
    },
}


def _check_added_since_release(trainer: str, module: str, state, saved_keys) -> set:
    """The keys of ``state`` the checkpoint lacks, each one allowed by ``ADDED_SINCE_RELEASE`` and holding what
    it should (a copy of the loaded tensor it comes from; the counters: synced 1, no model update yet)."""
    added = set(state) - saved_keys
    allowed = ADDED_SINCE_RELEASE.get((trainer, module), {})
    for key in added:
        prefix = next((p for p in allowed if key.startswith(p)), None)
        assert prefix is not None, f"{module}: key {key} is not in the release checkpoint"
        source = allowed[prefix]
        if source is not None:
            assert torch.equal(state[key], state[source + key[len(prefix):]]), key
        elif key.endswith("target_synced"):
            assert int(state[key]) == 1, key
        else:
            assert int(state[key]) == 0, key
    return added


@pytest.mark.parametrize("name", sorted(fixtures.FIXTURES))
def test_release_checkpoint_resumes_training(tmp_path, name):
    fixture = _fixture(name)
    artifact = fixtures.checkpoint_dir(str(tmp_path), fixture["behavior_name"])
    os.makedirs(artifact)
    shutil.copyfile(os.path.join(DATA, name, fixtures.CHECKPOINT), os.path.join(artifact, fixtures.CHECKPOINT))
    result = fixtures.train(name, str(tmp_path), max_steps=fixture["step"] + RESUMED_STEPS, resume=True)
    assert result.steps >= fixture["step"] + RESUMED_STEPS
    losses = {key: curve for key, curve in result.stats.items() if key.startswith("Losses/")}
    assert losses, sorted(result.stats)
    for key, curve in losses.items():
        assert curve and all(step > fixture["step"] for step, _ in curve), (key, curve)
        assert all(math.isfinite(value) for _, value in curve), (key, curve)
