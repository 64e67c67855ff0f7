"""muzero_repr's ``compile_update``: both compiled loss steps (the model's and the SAC head's) compute what the
eager ones do, with the same gradients, on a hybrid-action behavior with prioritized replay and
``rl_gradient_to_repr`` (every branch of both loss functions that a vector behavior takes).  The model's step is
muzero_repr's own and runs in the default test run; the head's step (slow: about 45 s of compiling on a 2-core
Xeon) is the SAC losses that fast_sac's compiled step also checks in the default run
(tests/fast_sac/test_compiled_update.py), here with the latent and ``rl_gradient_to_repr`` in front of them."""
import numpy as np
import pytest

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec
from tests.compiled_helpers import compare_compiled_with_eager, exact_compile, fields_named


def _filled(tmp_path):
    spec = behavior_spec(((4,), (3,)), 2, (3, 2))
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, rl_gradient_to_repr=True)
    fill(trainer, spec, np.random.default_rng(2))
    return trainer


def test_compiled_model_losses_and_gradients_match_eager(tmp_path, monkeypatch):
    trainer = _filled(tmp_path)
    opt = trainer.optimizer
    model_batch = trainer.sample_model_batch()
    with exact_compile(monkeypatch):
        compare_compiled_with_eager(opt._model_total, list(opt.model.parameters()), model_batch, {
            "value_err": lambda f: f.losses.value_err,
            "value_k": lambda f: f.losses.value_k,
            "reward_k": lambda f: f.losses.reward_k,
            "value_target": lambda f: f.targets.value_target_k,
            "latent_norm": lambda f: f.latent_norm_k,
        }, seed=11)


@pytest.mark.slow
def test_compiled_head_losses_and_gradients_match_eager(tmp_path, monkeypatch):
    trainer = _filled(tmp_path)
    opt = trainer.optimizer
    trainer.sample_model_batch()  # the same draws as before the split: the head's batch is the second sampled
    rl_batch = trainer.sample_rl_batch()
    with exact_compile(monkeypatch):
        head = [p for g in opt.head.adam.param_groups for p in g["params"]]
        compare_compiled_with_eager(opt._rl_total, head, rl_batch, fields_named(
            ("q1_loss", "q2_loss", "policy_loss", "temperature_loss", "td_abs")), seed=11)
