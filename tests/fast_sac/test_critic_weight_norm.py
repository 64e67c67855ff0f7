"""``critic_weight_norm``: after each Adam step the layer-normalized critic hidden layers are rescaled (weights and
bias together) to the norm sqrt(out_features) (common/critic_norm.py ``WeightProjection``).

Checked here: the norms after an update (computed with numpy in float64), that the rescaling leaves the critics'
outputs where the layer normalization makes them blind to it, that the step itself is Adam's followed by exactly
that rescaling (the update replayed by hand from a copy), and the refusals."""
import copy

import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.common.critic_norm import WeightProjection
from mlagents_plugins.fast_sac.settings import FastSACSettings
from tests.builders import behavior_spec, trajectory
from tests.fast_sac.helpers import make_trainer


def _trainer(tmp_path, **hyper):
    spec = behavior_spec(((5,),), cont=2)
    trainer = make_trainer(spec, tmp_path, batch_size=16, buffer_init_steps=10 ** 6, hidden_units=64, num_layers=2,
                           **hyper)
    rng = np.random.default_rng(3)
    for i in range(4):
        trainer._process_trajectory(trajectory(spec, 9, rng, done=i % 2 == 0))
    return trainer


def _norm64(*tensors) -> float:
    return float(np.sqrt(sum((t.detach().double().numpy() ** 2).sum() for t in tensors)))


def test_projection_rescales_weight_and_bias_together_and_keeps_a_normalized_output():
    torch.manual_seed(2)
    first, second = torch.nn.Linear(6, 10), torch.nn.Linear(10, 7)
    with torch.no_grad():
        first.weight.mul_(torch.linspace(0.3, 4.0, 6))  # uneven columns and a large bias: norms far from sqrt(out)
        first.bias.add_(2.5)
        second.weight.mul_(9.0)
    x = torch.randn(13, 6) * 2.0 + 0.4

    def forward():
        h = torch.nn.functional.layer_norm(first(x), (10,)).relu()
        return torch.nn.functional.layer_norm(second(h), (7,))

    before = forward()
    ratio_before = (first.weight / first.bias.norm()).detach().clone()
    WeightProjection([first, second]).project_()
    # 1e-6: the scale comes from an fp32 norm (PyTorch's cascade summation: error of order eps * log2(n), under 1e-6
    # relative for these sizes and the 64x64 layers below, on any summation order it picks) and one fp32 product
    assert _norm64(first.weight, first.bias) == pytest.approx(np.sqrt(10), rel=1e-6)
    assert _norm64(second.weight, second.bias) == pytest.approx(np.sqrt(7), rel=1e-6)
    # one scale for weights and bias: their ratio is kept
    torch.testing.assert_close(first.weight / first.bias.norm(), ratio_before, rtol=1e-5, atol=1e-6)
    # outputs of a layer-normalized network are unchanged up to the normalization's eps (1e-5 against variances of
    # order 1 after the rescaling: relative changes of order 1e-5)
    torch.testing.assert_close(forward(), before, rtol=1e-3, atol=1e-3)


def test_an_update_is_adam_then_the_projection(tmp_path):
    trainer = _trainer(tmp_path, critic_weight_norm=True)
    head = trainer.optimizer.head
    layers = head.q_net.normed_linears()
    assert len(layers) == 4  # two hidden layers in each of two critics
    for layer in layers:  # projected at construction
        assert _norm64(layer.weight, layer.bias) == pytest.approx(np.sqrt(64), rel=1e-6)
    target_before = [p.detach().clone() for p in head.q_target_params]
    # the same update without the projection, from a copy of the networks, the targets and Adam
    batch = trainer.sample_batch()
    q_copy = copy.deepcopy(head.q_net.state_dict())
    adam_copy = copy.deepcopy(head.adam.state_dict())
    actor_copy = copy.deepcopy(trainer.policy.actor.state_dict())
    temps_copy = copy.deepcopy(head.temperatures.state_dict())
    head.weight_projection = WeightProjection([])
    torch.manual_seed(11)  # the actor's sampled actions: the same draws in both updates
    trainer.optimizer.update(batch)
    unprojected = {id(p): p.detach().clone() for p in head.q_params}
    head.q_net.load_state_dict(q_copy)
    head.adam.load_state_dict(adam_copy)
    trainer.policy.actor.load_state_dict(actor_copy)
    head.temperatures.load_state_dict(temps_copy)
    for p, t in zip(head.q_target_params, target_before):
        p.data.copy_(t)
    head.weight_projection = WeightProjection(layers)
    torch.manual_seed(11)
    trainer.optimizer.update(batch)
    for layer in layers:
        w, b = unprojected[id(layer.weight)].double(), unprojected[id(layer.bias)].double()
        scale = np.sqrt(64) / float(torch.sqrt((w ** 2).sum() + (b ** 2).sum()))
        assert abs(scale - 1.0) > 1e-6  # Adam moved the norm, so the projection had something to do
        np.testing.assert_allclose(layer.weight.detach().double().numpy(), (w * scale).numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(layer.bias.detach().double().numpy(), (b * scale).numpy(), rtol=1e-5, atol=1e-7)
    # the output layers are not projected: they match the update without the projection
    out_layers = [p for p in head.q_params if all(p is not l.weight and p is not l.bias for l in layers)]
    assert out_layers
    for p in out_layers:
        torch.testing.assert_close(p.detach(), unprojected[id(p)])
    # the target critics follow the projected online ones by Polyak
    tau = trainer.hyperparameters.tau
    for t, bt, q in zip(head.q_target_params, target_before, head.q_params):
        torch.testing.assert_close(t, (1 - tau) * bt + tau * q.detach(), rtol=1e-5, atol=1e-6)


def test_off_by_default_and_no_projection_then(tmp_path):
    trainer = _trainer(tmp_path)
    assert trainer.hyperparameters.critic_weight_norm is False
    assert len(trainer.optimizer.head.weight_projection) == 0


@pytest.mark.parametrize("other", [dict(critic_layer_norm=False), dict(critic_batch_renorm=True)])
def test_refused_without_layer_normalized_critics_in_the_settings(other):
    with pytest.raises(TrainerConfigError, match="critic_weight_norm"):
        FastSACSettings(critic_weight_norm=True, **other)


def test_refused_where_null_resolves_to_no_layer_norm(tmp_path):
    spec = behavior_spec(((5,),), cont=0, branches=(3,))
    with pytest.raises(TrainerConfigError, match="critic_weight_norm: true needs layer-normalized critics"):
        make_trainer(spec, tmp_path, hidden_units=64, critic_weight_norm=True)


@pytest.mark.parametrize("value", ["yes", 1])
def test_refuses_a_non_boolean(value):
    with pytest.raises(TrainerConfigError, match="critic_weight_norm"):
        FastSACSettings(critic_weight_norm=value)
