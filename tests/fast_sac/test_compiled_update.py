"""``compile_update``: the compiled loss step computes what the eager one does, routes gradients the same way,
and falls back to eager (with a warning) when compiling fails."""
import logging

import pytest
import torch
from helpers import filled_trainer, make_trainer

from mlagents_plugins.common import compiled_step
from mlagents_plugins.common.compiled_step import CompiledStep
from tests.builders import behavior_spec
from tests.compiled_helpers import (
    compare_compiled_with_eager,
    exact_compile,
    fields_named,
    nonzero,
)


def _filled_trainer(tmp_path, **spec_kw):
    return filled_trainer(tmp_path, actor_min_q=True, rng_seed=3, compile_update=None, **spec_kw)


def test_compiled_losses_and_gradients_match_eager_and_actor_loss_reaches_only_the_actor(tmp_path, monkeypatch):
    """Hybrid actions with masks and the twin-min actor objective: every code path of ``compute_losses``."""
    with exact_compile(monkeypatch):
        trainer = _filled_trainer(tmp_path, cont=2, branches=(3, 2))
        opt = trainer.optimizer
        actor = [p for p in opt.policy.actor.parameters() if p.requires_grad]
        critic = opt.head.q_params
        params = actor + critic + list(opt.head.temperatures.parameters())
        _, out = compare_compiled_with_eager(opt._total_loss, params, trainer.sample_batch(), fields_named(
            ("q1_loss", "q2_loss", "policy_loss", "temperature_loss", "td_abs", "q_mean", "entropy")))
    # Gradient routing through the compiled graph: Q values at the actor's actions use detached critic weights.
    pi_actor = torch.autograd.grad(out.policy_loss, actor, retain_graph=True, allow_unused=True)
    pi_critic = torch.autograd.grad(out.policy_loss, critic, retain_graph=True, allow_unused=True)
    q_actor = torch.autograd.grad(out.q1_loss + out.q2_loss, actor, retain_graph=True, allow_unused=True)
    assert any(nonzero(pi_actor))
    assert not any(nonzero(pi_critic))
    assert not any(nonzero(q_actor))


def test_failed_compile_warns_once_and_continues_eagerly(monkeypatch, caplog):
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    calls = []

    def broken_compile(fn, **kwargs):
        def run(*args):
            calls.append(args)
            raise RuntimeError("Compiler: cl is not found")

        return run

    monkeypatch.setattr(torch, "compile", broken_compile)
    step = CompiledStep(lambda x: x * 3 - 1, True, "demo update")
    assert step.mode == "compiled"
    with caplog.at_level(logging.WARNING, logger=compiled_step.logger.name):
        assert step(torch.tensor(2.0)).item() == 5.0
        assert step(torch.tensor(-4.0)).item() == -13.0
    assert len(calls) == 1  # not retried after the failure
    assert step.mode == "eager (compile failed)"
    assert "cl is not found" in step.error
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "demo update" in warnings[0] and "cl is not found" in warnings[0]


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_environment_switch_turns_compiling_off(monkeypatch, value):
    monkeypatch.setenv(compiled_step.ENV_SWITCH, value)
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: compiled.append(fn) or fn)
    step = CompiledStep(lambda x: x + 1, True, "x")
    assert step.mode == "eager" and not compiled
    assert step(torch.tensor(1.0)).item() == 2.0


def test_compile_setting_automatic_false_and_true(tmp_path, monkeypatch):
    """null (default): compiled for vector observations only; false: never; true: also with a camera."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    vector = behavior_spec(obs_shapes=((5,), (3,)), cont=2)
    camera = behavior_spec(obs_shapes=((3, 20, 20), (2,)), cont=0, branches=(3,))
    assert make_trainer(vector, tmp_path / "a", batch_size=8, compile_update=None).optimizer.head.loss_step.mode == "compiled"
    assert make_trainer(camera, tmp_path / "b", batch_size=8, compile_update=None).optimizer.head.loss_step.mode == "eager"
    assert make_trainer(vector, tmp_path / "c", batch_size=8, compile_update=False).optimizer.head.loss_step.mode == "eager"
    forced = make_trainer(camera, tmp_path / "d", batch_size=8, compile_update=True)
    assert forced.optimizer.head.loss_step.mode == "compiled"


def test_compiled_backward_failing_on_first_use_redoes_the_step_eagerly(monkeypatch, caplog):
    """AOTAutograd compiles the backward lazily: a toolchain failure there must not lose the step."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")

    class BrokenBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("InductorError: C++ compile error in backward")

    def fake_compile(fn, **kwargs):
        return lambda w: (BrokenBackward.apply(fn(w)[0]), "compiled")

    monkeypatch.setattr(torch, "compile", fake_compile)
    w = torch.tensor([1.5, -2.0], requires_grad=True)
    step = CompiledStep(lambda p: ((p ** 2 * torch.tensor([1.0, 3.0])).sum(), "eager"), True, "demo update")
    zeroed = []

    def zero_grad():
        zeroed.append(True)
        w.grad = None

    with caplog.at_level(logging.WARNING, logger=compiled_step.logger.name):
        _, which = step.forward_backward(zero_grad, w)
    assert which == "eager" and zeroed == [True]
    torch.testing.assert_close(w.grad, torch.tensor([3.0, -12.0]))  # d/dw (w0^2 + 3 w1^2), by hand
    assert step.mode == "eager (compile failed)" and "backward" in step.error
    assert sum("demo update" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING) == 1
    w.grad = None
    _, which = step.forward_backward(zero_grad, w)  # later steps: eager, no retry
    assert which == "eager" and zeroed == [True]
    torch.testing.assert_close(w.grad, torch.tensor([3.0, -12.0]))


def test_forward_backward_runs_eagerly_until_ready(monkeypatch):
    """``ready=False`` (the matmul kernel not chosen yet): the eager function runs and nothing is compiled."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    compiled_calls = []

    def fake_compile(fn, **kwargs):
        def run(*args):
            compiled_calls.append(args)
            return fn(*args)

        return run

    monkeypatch.setattr(torch, "compile", fake_compile)
    w = torch.tensor([2.0, -1.0], requires_grad=True)
    step = CompiledStep(lambda p: ((p ** 3).sum(), None), True, "demo update")
    step.forward_backward(lambda: None, w, ready=False)
    assert compiled_calls == [] and step.mode == "compiled"
    torch.testing.assert_close(w.grad, torch.tensor([12.0, 3.0]))  # 3 w^2, by hand
    w.grad = None
    step.forward_backward(lambda: None, w, ready=True)
    assert len(compiled_calls) == 1
    torch.testing.assert_close(w.grad, torch.tensor([12.0, 3.0]))


def test_gradient_step_sets_lr_clears_stale_grads_and_steps_every_optimizer_after_before_step(monkeypatch):
    """The cadence every trainer's update goes through: lr on every group, old gradients gone, one backward,
    ``before_step`` between backward and step, then each optimizer's step (values by hand, plain SGD)."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "0")
    a = torch.tensor([1.0, -2.0], requires_grad=True)
    b = torch.tensor([3.0], requires_grad=True)
    opt_a, opt_b = torch.optim.SGD([a], lr=5.0), torch.optim.SGD([b], lr=7.0)
    a.grad, b.grad = torch.tensor([100.0, 100.0]), torch.tensor([-100.0])  # stale: must not reach the step
    seen = []

    def before_step():
        seen.append((a.grad.clone(), b.grad.clone()))
        b.grad.mul_(0.5)  # e.g. clipping

    step = CompiledStep(lambda x: ((a * x).sum() + 2.0 * b.sum() ** 2, "out"), False, "demo")
    total, out = step.gradient_step([opt_a, opt_b], 0.1, torch.tensor([4.0, -1.0]), before_step=before_step)
    assert out == "out" and float(total.detach()) == 6.0 + 18.0  # a.x + 2 b^2
    torch.testing.assert_close(seen[0][0], torch.tensor([4.0, -1.0]))  # d/da = x
    torch.testing.assert_close(seen[0][1], torch.tensor([12.0]))  # d/db = 4 b
    assert opt_a.param_groups[0]["lr"] == 0.1 and opt_b.param_groups[0]["lr"] == 0.1
    torch.testing.assert_close(a.detach(), torch.tensor([1.0 - 0.4, -2.0 + 0.1]))
    torch.testing.assert_close(b.detach(), torch.tensor([3.0 - 0.1 * 6.0]))
