"""muzero_repr's ``compile_update``: both compiled loss steps (the model's and the SAC head's) compute what the
eager ones do, with the same gradients, on a hybrid-action behavior with prioritized replay and
``rl_gradient_to_repr`` (every branch of both loss functions that a vector behavior takes)."""
import numpy as np
import torch

from mlagents_plugins import compiled_step
from mlagents_plugins.compiled_step import CompiledStep

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec


def _compare(fn, params, batch, fields):
    step = CompiledStep(fn, True, "test")
    results = []
    for f in (fn, step):
        torch.manual_seed(11)
        total, out = f(batch)
        results.append((total, out, torch.autograd.grad(total, params, retain_graph=True, allow_unused=True)))
    assert step.mode == "compiled", step.error
    (te, oe, ge), (tc, oc, gc) = results
    torch.testing.assert_close(tc, te, rtol=1e-4, atol=1e-5)
    for name in fields:
        torch.testing.assert_close(fields[name](oc), fields[name](oe), rtol=1e-4, atol=1e-5, msg=name)
    assert any(g is not None and bool(torch.any(g != 0)) for g in ge)
    for x, y in zip(gc, ge):
        assert (x is None) == (y is None)
        if x is not None:
            torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-5)


def test_compiled_model_and_head_losses_and_gradients_match_eager(tmp_path, monkeypatch):
    import torch._inductor.config as inductor_config

    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    spec = behavior_spec(((4,), (3,)), 2, (3, 2))
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, rl_gradient_to_repr=True)
    fill(trainer, spec, np.random.default_rng(2))
    opt = trainer.optimizer
    model_batch, rl_batch = trainer.sample_model_batch(), trainer.sample_rl_batch()
    # fallback_random: the compiled graphs draw from ATen's generator, so one seed gives the eager draws (the
    # SAC head's sampled actions); no donated buffers, as each graph is differentiated more than once.
    with inductor_config.patch(fallback_random=True), torch._functorch.config.patch(donated_buffer=False):
        torch._dynamo.reset()
        _compare(opt._model_total, list(opt.model.parameters()), model_batch, {
            "value_err": lambda f: f.losses.value_err,
            "value_k": lambda f: f.losses.value_k,
            "reward_k": lambda f: f.losses.reward_k,
            "value_target": lambda f: f.targets.value_target_k,
            "latent_norm": lambda f: f.latent_norm_k,
        })
        head = [p for g in opt.rl_opt.param_groups for p in g["params"]]
        _compare(opt._rl_total, head, rl_batch, {
            name: (lambda n: lambda o: getattr(o, n))(name)
            for name in ("q1_loss", "q2_loss", "policy_loss", "temperature_loss", "td_abs")
        })
