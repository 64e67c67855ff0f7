"""A checkpoint restores the learned model, its target, the RL head and all optimizer states exactly."""
import numpy as np
import torch

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec


def _state(trainer):
    out = {"policy": trainer.policy.actor.state_dict()}
    for name, module in trainer.optimizer.get_modules().items():
        out[name] = module.state_dict()
    return out


def _assert_equal_states(a, b, path=""):
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _assert_equal_states(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal_states(x, y, f"{path}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), path
    else:
        assert a == b, path


def test_checkpoint_round_trip(tmp_path):
    spec = behavior_spec(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path, seed=1)
    fill(trainer, spec, np.random.default_rng(0))
    for _ in range(4):
        trainer.update_once()
    trainer._step = 40
    trainer.policy.set_step(40)
    trainer.save_model()
    saved = _state(trainer)
    fresh = make_trainer(spec, tmp_path, seed=2)  # different init, not loaded
    try:
        _assert_equal_states(saved, _state(fresh))
        differs = False
    except AssertionError:
        differs = True
    assert differs
    loaded = make_trainer(spec, tmp_path, load=True, seed=2)
    _assert_equal_states(saved, _state(loaded))
    # the shared representation is still one module after loading
    assert loaded.optimizer.model.representation is loaded.policy.actor.representation
