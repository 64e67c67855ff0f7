"""A checkpoint restores the learned model, its target, the RL head and all optimizer states exactly."""
import numpy as np

from .muzero_helpers import fill, make_trainer, save_checkpoint_at
from tests.builders import assert_same_state, behavior_spec


def _state(trainer):
    out = {"policy": trainer.policy.actor.state_dict()}
    for name, module in trainer.optimizer.get_modules().items():
        out[name] = module.state_dict()
    return out


def test_checkpoint_round_trip(tmp_path):
    spec = behavior_spec(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path, seed=1)
    fill(trainer, spec, np.random.default_rng(0))
    for _ in range(4):
        trainer.update_once()
    save_checkpoint_at(trainer)
    saved = _state(trainer)
    fresh = make_trainer(spec, tmp_path, seed=2)  # different init, not loaded
    try:
        assert_same_state(saved, _state(fresh))
        differs = False
    except AssertionError:
        differs = True
    assert differs
    loaded = make_trainer(spec, tmp_path, load=True, seed=2)
    assert_same_state(saved, _state(loaded))
    # the shared representation is still one module after loading
    assert loaded.optimizer.model.representation is loaded.policy.actor.representation
