"""A resumed muzero_repr run keeps the critic-gradient choice it trained with (``rl_gradient_to_repr`` null).

The head's Adam holds h's parameters only with the critic's gradient on, so a checkpoint's optimizer state loads only
when the resumed run resolves the field as the saved run did.  New checkpoints carry the choice (the actor's
``critic_gradient`` buffer); a checkpoint written before it existed resolves by those versions' rule (on with images
or discrete actions only).  The release-0.1.0 checkpoint is checked in tests/test_release_checkpoints.py."""
import numpy as np
import pytest
import torch

from .muzero_helpers import drop_from_checkpoint, fill, make_trainer, save_checkpoint_at
from tests.builders import behavior_spec

VECTOR_CONT = behavior_spec(((5,),), cont=2)
VECTOR_DISCRETE = behavior_spec(((5,),), cont=0, branches=(3,))


def _head_adam_state(trainer):
    return trainer.optimizer.head.adam.state_dict()


def _gradient_on(trainer) -> bool:
    body = trainer.policy.actor.network_body
    assert int(body.critic_gradient) == int(body.rl_gradient_to_repr)
    return body.rl_gradient_to_repr


def _trained_and_saved(spec, tmp_path, **hyper):
    trainer = make_trainer(spec, tmp_path, **hyper)
    fill(trainer, spec, np.random.default_rng(3))
    for _ in range(3):
        trainer.update_once()
    save_checkpoint_at(trainer)
    return trainer


def test_a_fresh_run_takes_the_gradient_and_its_resume_keeps_it_with_the_optimizer_state(tmp_path):
    trainer = _trained_and_saved(VECTOR_CONT, tmp_path)
    assert _gradient_on(trainer)
    saved = _head_adam_state(trainer)
    loaded = make_trainer(VECTOR_CONT, tmp_path, load=True, seed=4)
    assert _gradient_on(loaded)
    got = _head_adam_state(loaded)
    assert len(got["state"]) == len(saved["state"]) > 0  # every parameter's moments loaded, h's among them
    for k, v in saved["state"].items():
        assert torch.equal(got["state"][k]["exp_avg"], v["exp_avg"])


@pytest.mark.parametrize("spec,expected", [(VECTOR_CONT, False), (VECTOR_DISCRETE, True)])
def test_a_checkpoint_without_the_record_resumes_by_the_old_rule(tmp_path, spec, expected):
    trainer = _trained_and_saved(spec, tmp_path, rl_gradient_to_repr=expected)  # what the old rule gave
    drop_from_checkpoint(f"{trainer.artifact_path}/checkpoint.pt", "network_body.critic_gradient")
    saved = _head_adam_state(trainer)
    loaded = make_trainer(spec, tmp_path, load=True, seed=4)  # rl_gradient_to_repr null
    assert _gradient_on(loaded) is expected
    assert len(_head_adam_state(loaded)["state"]) == len(saved["state"]) > 0


def test_a_recorded_choice_wins_over_the_new_default_and_a_set_value_wins_over_both(tmp_path):
    _trained_and_saved(VECTOR_CONT, tmp_path, rl_gradient_to_repr=False)
    assert _gradient_on(make_trainer(VECTOR_CONT, tmp_path, load=True, seed=4)) is False
    assert _gradient_on(make_trainer(VECTOR_CONT, tmp_path, load=True, seed=4, rl_gradient_to_repr=True)) is True


def test_a_fresh_run_ignores_a_checkpoint_it_does_not_resume(tmp_path):
    _trained_and_saved(VECTOR_CONT, tmp_path, rl_gradient_to_repr=False)
    assert _gradient_on(make_trainer(VECTOR_CONT, tmp_path, load=False, seed=4)) is True
