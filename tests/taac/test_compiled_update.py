"""taac's ``compile_update``: the compiled loss step computes what the eager one does and routes gradients the
same way (the actor loss reaches the actor, never the critics' weights), and the setting chooses the mode."""
import pytest
from mlagents.torch_utils import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from mlagents_plugins.common import compiled_step
from mlagents_plugins.taac.optimizer import TaacLosses
from tests.builders import behavior_spec
from tests.compiled_helpers import (
    compare_compiled_with_eager,
    exact_compile,
    fields_named,
    nonzero,
)
from tests.taac.test_trainer import make_trainer, obs_spec, synthetic_batch


def _optimizer(tmp_path, spec=None, **hyper):
    trainer = make_trainer(tmp_path, **hyper)
    trainer.policy = trainer.create_policy(None, spec or BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2)))
    return trainer, trainer.create_optimizer()


@pytest.mark.parametrize("trajectory", ["quadratic"])  # advance and from_proposal do the most work
def test_compiled_losses_and_gradients_match_eager_and_actor_loss_reaches_only_the_actor(
    tmp_path, monkeypatch, trajectory
):
    """The compiled graph draws the proposal noise and fresh switch from the same generator as eager code."""
    with exact_compile(monkeypatch):
        torch.manual_seed(4)
        trainer, opt = _optimizer(tmp_path, trajectory=trajectory, b1_advantage_clipping=[-0.5, 0.75])
        actor_params = opt.actor.actor_parameters()
        critic_params = list(opt.critic.parameters())
        temperatures = [opt.actor.log_alpha_action, opt.actor.log_alpha_switch]
        out_e, out = compare_compiled_with_eager(
            opt._total_loss, actor_params + critic_params + temperatures, synthetic_batch(trainer, seed=5),
            fields_named(TaacLosses._fields))
    assert float(out_e.critic_loss.detach()) > 0 and 0 < float(out_e.keep_probability) < 1
    # Routing through the compiled graph: the actor loss moves the actor only; the critic loss the critics only.
    pi_actor = torch.autograd.grad(out.actor_loss, actor_params, retain_graph=True, allow_unused=True)
    pi_critic = torch.autograd.grad(out.actor_loss, critic_params, retain_graph=True, allow_unused=True)
    q_actor = torch.autograd.grad(out.critic_loss, actor_params, retain_graph=True, allow_unused=True)
    q_critic = torch.autograd.grad(out.critic_loss, critic_params, retain_graph=True, allow_unused=True)
    assert any(nonzero(pi_actor)) and any(nonzero(q_critic))
    assert not any(nonzero(pi_critic))
    assert not any(nonzero(q_actor))


def test_compile_setting_automatic_false_and_true(tmp_path, monkeypatch):
    """null (default): compiled for vector observations only; false: never; true: also with a camera."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    camera = behavior_spec(obs_shapes=((3, 20, 20), (4,)), cont=2)
    assert _optimizer(tmp_path / "a", compile_update=None)[1].loss_step.mode == "compiled"
    assert _optimizer(tmp_path / "b", camera, compile_update=None)[1].loss_step.mode == "eager"
    assert _optimizer(tmp_path / "c", compile_update=False)[1].loss_step.mode == "eager"
    assert _optimizer(tmp_path / "d", camera, compile_update=True)[1].loss_step.mode == "compiled"
