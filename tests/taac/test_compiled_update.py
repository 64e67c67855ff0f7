"""taac's ``compile_update``: the compiled loss step computes what the eager one does and routes gradients the
same way (the actor loss reaches the actor, never the critics' weights), and the setting chooses the mode."""
import pytest
from mlagents.torch_utils import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from mlagents_plugins import compiled_step
from mlagents_plugins.compiled_step import CompiledStep
from tests.builders import behavior_spec
from tests.taac.test_trainer import make_trainer, obs_spec, synthetic_batch


def _optimizer(tmp_path, spec=None, **hyper):
    trainer = make_trainer(tmp_path, **hyper)
    trainer.policy = trainer.create_policy(None, spec or BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2)))
    return trainer, trainer.create_optimizer()


def _nonzero(grads):
    return [g is not None and bool(torch.any(g != 0)) for g in grads]


@pytest.mark.parametrize("trajectory", ["quadratic"])  # advance and from_proposal do the most work
def test_compiled_losses_and_gradients_match_eager_and_actor_loss_reaches_only_the_actor(
    tmp_path, monkeypatch, trajectory
):
    import torch._inductor.config as inductor_config

    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    # With fallback_random Inductor draws from ATen's generator, so one seed gives the eager draws (proposal
    # noise, fresh switch) and the comparison is exact up to rounding.  No donated buffers: the graph is
    # differentiated several times.
    with inductor_config.patch(fallback_random=True), torch._functorch.config.patch(donated_buffer=False):
        _check_compiled_against_eager(tmp_path, trajectory)


def _check_compiled_against_eager(tmp_path, trajectory):
    torch._dynamo.reset()
    torch.manual_seed(4)
    trainer, opt = _optimizer(tmp_path, trajectory=trajectory, b1_advantage_clipping=[-0.5, 0.75])
    batch = synthetic_batch(trainer, seed=5)
    actor_params = opt.actor.actor_parameters()
    critic_params = list(opt.critic.parameters())
    temperatures = [opt.actor.log_alpha_action, opt.actor.log_alpha_switch]
    params = actor_params + critic_params + temperatures

    step = CompiledStep(opt._total_loss, True, "test")
    results = []
    for fn in (opt._total_loss, step):
        torch.manual_seed(21)
        total, out = fn(batch)
        results.append((total, out, torch.autograd.grad(total, params, retain_graph=True, allow_unused=True)))
    assert step.mode == "compiled", step.error
    (te, oe, ge), (tc, oc, gc) = results
    assert float(oe.critic_loss) > 0 and 0 < float(oe.keep_probability) < 1
    torch.testing.assert_close(tc, te, rtol=1e-4, atol=1e-5)
    for name in oe._fields:
        torch.testing.assert_close(getattr(oc, name), getattr(oe, name), rtol=1e-4, atol=1e-5, msg=name)
    for x, y in zip(gc, ge):
        assert (x is None) == (y is None)
        if x is not None:
            torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-5)
    # Routing through the compiled graph: the actor loss moves the actor only; the critic loss the critics only.
    pi_actor = torch.autograd.grad(oc.actor_loss, actor_params, retain_graph=True, allow_unused=True)
    pi_critic = torch.autograd.grad(oc.actor_loss, critic_params, retain_graph=True, allow_unused=True)
    q_actor = torch.autograd.grad(oc.critic_loss, actor_params, retain_graph=True, allow_unused=True)
    q_critic = torch.autograd.grad(oc.critic_loss, critic_params, retain_graph=True, allow_unused=True)
    assert any(_nonzero(pi_actor)) and any(_nonzero(q_critic))
    assert not any(_nonzero(pi_critic))
    assert not any(_nonzero(q_actor))


def test_compile_setting_automatic_false_and_true(tmp_path, monkeypatch):
    """null (default): compiled for vector observations only; false: never; true: also with a camera."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    camera = behavior_spec(obs_shapes=((3, 20, 20), (4,)), cont=2)
    assert _optimizer(tmp_path / "a", compile_update=None)[1].loss_step.mode == "compiled"
    assert _optimizer(tmp_path / "b", camera, compile_update=None)[1].loss_step.mode == "eager"
    assert _optimizer(tmp_path / "c", compile_update=False)[1].loss_step.mode == "eager"
    assert _optimizer(tmp_path / "d", camera, compile_update=True)[1].loss_step.mode == "compiled"
