"""The actor loss's critic pass reuses the critic pass's observation encodings (``TwinQ.encoding_shared``,
``SACHead.share_critic_encoding``): the same losses and gradients as encoding the batch twice, one image-encoder pass
less per critic."""
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from helpers import make_trainer
from tests.builders import behavior_spec, trajectory


def _goal_spec() -> BehaviorSpec:
    obs = [ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vec"),
           ObservationSpec((2,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")]
    return BehaviorSpec(obs, ActionSpec(2, ()))


def _filled(tmp_path, spec, **hyper):
    trainer = make_trainer(spec, tmp_path, batch_size=16, buffer_init_steps=10 ** 6, random_shift_pad=0, **hyper)
    rng = np.random.default_rng(3)
    for i in range(3):
        trainer._process_trajectory(trajectory(spec, 9, rng, done=i == 0, agent_id=f"a{i}"))
    return trainer


def _losses_and_grads(trainer, batch, share: bool):
    opt = trainer.optimizer
    opt.head.share_critic_encoding = share
    params = [p for p in trainer.policy.actor.parameters() if p.requires_grad] + opt.head.q_params + list(
        opt.head.temperatures.parameters())
    torch.manual_seed(7)  # the actor's sampling noise
    out = opt.compute_losses(batch)
    grads = torch.autograd.grad(out.total(), params, allow_unused=True)
    parts = (out.q1_loss, out.q2_loss, out.policy_loss, out.temperature_loss)
    return [p.detach() for p in parts], [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]


@pytest.mark.parametrize("actor_min_q", [False, True])
@pytest.mark.parametrize("kind", ["camera", "goal"])
def test_shared_encoding_gives_the_same_losses_and_gradients(tmp_path, kind, actor_min_q):
    spec = behavior_spec(obs_shapes=((3, 20, 20), (2,)), cont=2, branches=(3,)) if kind == "camera" else _goal_spec()
    extra = {"encoder": "simple"}
    trainer = _filled(tmp_path, spec, actor_min_q=actor_min_q, **extra)
    if kind == "goal":
        from mlagents.trainers.torch_entities.conditioning import ConditionalEncoder

        assert isinstance(trainer.optimizer.head.q_net.q1.network_body._body_endoder, ConditionalEncoder)
    batch = trainer.sample_batch()
    shared_losses, shared_grads = _losses_and_grads(trainer, batch, share=True)
    twice_losses, twice_grads = _losses_and_grads(trainer, batch, share=False)
    # One encoder evaluation instead of two of the same inputs and weights: equal to the last bit is expected, a
    # rounding difference of float32 summation order at most.
    for a, b in zip(shared_losses, twice_losses):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert any(bool(g.abs().sum() > 0) for g in shared_grads)
    for a, b in zip(shared_grads, twice_grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_each_critic_encodes_the_batch_once_per_state(tmp_path):
    spec = behavior_spec(obs_shapes=((3, 20, 20), (2,)), cont=2)
    trainer = _filled(tmp_path, spec, actor_min_q=True)
    head = trainer.optimizer.head
    calls = {"q1": 0, "q2": 0}
    for name in calls:
        encoder = getattr(head.q_net, name).network_body.observation_encoder
        encoder.register_forward_hook(lambda *_, key=name: calls.__setitem__(key, calls[key] + 1))
    batch = trainer.sample_batch()
    trainer.optimizer.compute_losses(batch)
    assert calls == {"q1": 1, "q2": 1}  # the critic pass; the actor loss's min(Q1, Q2) pass reuses it
    head.share_critic_encoding = False
    trainer.optimizer.compute_losses(batch)
    assert calls == {"q1": 3, "q2": 3}


def test_frozen_pass_without_a_critic_pass_is_refused(tmp_path):
    spec = behavior_spec(obs_shapes=((3,),), cont=1)
    trainer = _filled(tmp_path, spec)
    _, frozen_critic = trainer.optimizer.head.q_net.encoding_shared()
    with pytest.raises(RuntimeError, match="before the critic pass"):
        frozen_critic([torch.zeros(4, 3)], torch.zeros(4, 1), True)
