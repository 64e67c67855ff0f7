"""``latent_scaling`` null: tanh with vector observations only, min_max with images; a resumed run keeps the scaling
its checkpoint trained with (the actor's ``latent_scaling_code`` buffer), and a checkpoint without the record (before
0.3.0) trained with min_max.  The map itself: tests/muzero_repr/test_muzero_losses.py; h and the unrolls:
test_muzero_networks.py."""
import numpy as np
import pytest
import torch

from .muzero_helpers import drop_from_checkpoint, fill, make_trainer, save_checkpoint_at
from tests.builders import behavior_spec

VECTOR = behavior_spec(((5,),), cont=2)
VISUAL = behavior_spec(((3, 20, 20),), cont=2)


def _scaling(trainer) -> str:
    body = trainer.policy.actor.network_body
    scaling = body.representation.scaling
    assert trainer.optimizer.model.scaling == trainer.optimizer.target_model.scaling == scaling
    assert int(body.latent_scaling_code) == ("min_max", "tanh").index(scaling)  # the record says what runs
    return scaling


def _trained_and_saved(spec, tmp_path, **hyper):
    trainer = make_trainer(spec, tmp_path, **hyper)
    fill(trainer, spec, np.random.default_rng(3))
    trainer.update_once()
    save_checkpoint_at(trainer)
    return trainer


@pytest.mark.parametrize("spec,setting,expected", [(VECTOR, None, "tanh"), (VISUAL, None, "min_max"),
                                                   (VECTOR, "min_max", "min_max"), (VISUAL, "tanh", "tanh")])
def test_automatic_scaling_follows_the_observations_and_a_set_value_wins(tmp_path, spec, setting, expected):
    trainer = make_trainer(spec, tmp_path, latent_scaling=setting)
    assert _scaling(trainer) == expected
    with torch.no_grad():
        z = trainer.policy.actor.representation([torch.randn(4, *spec.observation_specs[0].shape) * 5.0])
    assert (float(z.min()) < 0.0) is (expected == "tanh")  # min_max never gives a negative value


def test_a_resumed_run_keeps_its_checkpoints_scaling_and_its_latents(tmp_path):
    trainer = _trained_and_saved(VECTOR, tmp_path, latent_scaling="min_max")
    obs = [torch.randn(6, 5)]
    with torch.no_grad():
        before = trainer.policy.actor.representation(obs)
    loaded = make_trainer(VECTOR, tmp_path, load=True, seed=4)  # latent_scaling null: tanh for a fresh run
    assert _scaling(loaded) == "min_max"
    with torch.no_grad():
        assert torch.allclose(loaded.policy.actor.representation(obs), before)
    assert _scaling(make_trainer(VECTOR, tmp_path, load=True, seed=4, latent_scaling="tanh")) == "tanh"
    assert _scaling(make_trainer(VECTOR, tmp_path, load=False, seed=4)) == "tanh"  # not resumed: the rule


def test_a_checkpoint_without_the_record_trained_with_min_max(tmp_path):
    trainer = _trained_and_saved(VECTOR, tmp_path, latent_scaling="min_max")
    drop_from_checkpoint(f"{trainer.artifact_path}/checkpoint.pt", "network_body.latent_scaling_code")
    assert _scaling(make_trainer(VECTOR, tmp_path, load=True, seed=4)) == "min_max"


def test_a_record_this_version_does_not_know_is_refused(tmp_path):
    from mlagents.trainers.exception import TrainerConfigError

    trainer = _trained_and_saved(VECTOR, tmp_path)
    path = f"{trainer.artifact_path}/checkpoint.pt"
    state = torch.load(path, map_location="cpu")
    state["Policy"]["network_body.latent_scaling_code"] = torch.tensor(7)
    torch.save(state, path)
    with pytest.raises(TrainerConfigError, match="latent_scaling_code = 7 is not one this version knows"):
        make_trainer(VECTOR, tmp_path, load=True, seed=4)
