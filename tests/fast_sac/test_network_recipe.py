"""fast_sac's ``network_activation`` and ``network_init`` (``common/network_recipe.py``): ML-Agents' Swish and scaled-normal
initialization, or the SAC paper's ReLU and PyTorch's default ``nn.Linear`` initialization, in the actor, both online
critics and their targets, the recurrent critic body included; the exported actor stays a plain MLP."""
import math

import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.torch_entities.layers import LinearEncoder, Swish

from mlagents_plugins.common.fast_kernels import FusedSwish
from mlagents_plugins.common.network_recipe import NetworkRecipe
from mlagents_plugins.fast_sac.settings import FastSACSettings
from tests.builders import behavior_spec
from tests.fast_sac.helpers import make_trainer


def _activations(module: torch.nn.Module):
    kinds = {type(m) for m in module.modules()}
    return {"swish": bool(kinds & {Swish, FusedSwish}), "relu": torch.nn.ReLU in kinds}


def _hidden_weight_std(recipe: NetworkRecipe, fan_in: int = 300, width: int = 400, seed: int = 5) -> float:
    torch.manual_seed(seed)
    encoder = recipe.apply_(LinearEncoder(fan_in, 1, width))
    return float(encoder.seq_layers[0].weight.detach().std())


def test_initializations_have_their_documented_scales():
    # ML-Agents': normal, std 1/sqrt(fan_in) (kaiming_normal_ with a linear gain); PyTorch's default: U(-1/sqrt(fan_in),
    # 1/sqrt(fan_in)), std 1/sqrt(3 fan_in).  120,000 weights: the sample std is within about 0.3% of the true one; 3%
    # leaves room and still separates the two scales (a factor sqrt(3)).
    fan_in = 300
    assert _hidden_weight_std(NetworkRecipe()) == pytest.approx(1.0 / math.sqrt(fan_in), rel=0.03)
    assert _hidden_weight_std(NetworkRecipe(init="torch")) == pytest.approx(1.0 / math.sqrt(3.0 * fan_in), rel=0.03)
    torch.manual_seed(5)
    encoder = NetworkRecipe(init="torch").apply_(LinearEncoder(fan_in, 1, 400))
    bias = encoder.seq_layers[0].bias.detach()
    assert float(bias.abs().max()) <= 1.0 / math.sqrt(fan_in) and float(bias.std()) > 0.3 / math.sqrt(3 * fan_in)


def test_relu_replaces_every_swish_and_computes_relu():
    torch.manual_seed(0)
    encoder = LinearEncoder(6, 2, 32)
    x = torch.randn(10, 6) * 3.0
    first = encoder.seq_layers[0]
    NetworkRecipe(activation="relu").apply_(encoder)
    assert _activations(encoder) == {"swish": False, "relu": True}
    expected = torch.relu(encoder.seq_layers[2](torch.relu(first(x))))
    assert torch.equal(encoder(x), expected)


def test_unknown_values_are_refused():
    with pytest.raises(ValueError, match="activation"):
        NetworkRecipe(activation="tanh")
    for field, value in (("network_activation", "gelu"), ("network_init", "xavier"), ("network_activation", True)):
        with pytest.raises(TrainerConfigError, match=f"{field} = .* 'relu'|{field} = .* 'torch'"):
            FastSACSettings(**{field: value})


def test_nulls_resolve_to_mlagents_network():
    assert FastSACSettings().network_recipe() == NetworkRecipe("swish", "mlagents")
    assert FastSACSettings(network_activation="relu", network_init="torch").network_recipe() == NetworkRecipe("relu", "torch")


@pytest.mark.parametrize("activation", ["swish", "relu"])
def test_setting_reaches_actor_online_and_target_critics(tmp_path, activation):
    spec = behavior_spec(((5,),), cont=2)
    trainer = make_trainer(spec, tmp_path, hidden_units=24, network_activation=activation, network_init="torch")
    head = trainer.optimizer.head
    for module in (trainer.policy.actor, head.q_net.q1, head.q_net.q2, head.q_target.q1, head.q_target.q2):
        assert _activations(module) == {"swish": activation == "swish", "relu": activation == "relu"}
    # PyTorch's initialization reached the actor's action head too (ML-Agents': He normal x 0.2, zero bias)
    assert float(trainer.policy.actor.action_model._continuous_distribution.mu.bias.detach().abs().max()) > 0.0


def test_init_reaches_critics_before_their_own_initializations(tmp_path):
    # critic_neutral_init zeroes the first layer's action columns: the recipe's initialization must not undo it
    spec = behavior_spec(((4,),), cont=2)
    trainer = make_trainer(spec, tmp_path, network_init="torch", critic_neutral_init=True)
    for q in (trainer.optimizer.head.q_net.q1, trainer.optimizer.head.q_net.q2):
        first = next(m for m in q.network_body._body_endoder.modules() if isinstance(m, torch.nn.Linear))
        assert torch.count_nonzero(first.weight[:, -2:]) == 0
        assert float(first.bias.detach().abs().max()) > 0.0  # PyTorch's bias (ML-Agents': zero)


def test_recurrent_critic_body_follows_the_setting(tmp_path):
    from tests.fast_sac.test_recurrent import _settings, _spec, _trainer

    trainer = _trainer(_spec(), tmp_path, _settings(network_activation="relu"))
    assert trainer.optimizer.__class__.__name__ == "RecurrentFastSACOptimizer"
    for module in (trainer.policy.actor, trainer.optimizer.critic_body, trainer.optimizer.head.q_net):
        assert _activations(module) == {"swish": False, "relu": True}


def test_onnx_export_with_relu_is_a_plain_mlp_that_matches_torch(tmp_path):
    from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch, export_policy
    import onnx

    spec = behavior_spec(((5,),), cont=2)
    trainer = make_trainer(spec, tmp_path, hidden_units=24, network_activation="relu", network_init="torch")
    path = export_policy(trainer.policy, str(tmp_path / "relu"))
    obs = [np.random.default_rng(0).uniform(-2, 2, (4, 5)).astype(np.float32)]
    compare_onnx_with_torch(trainer.policy, path, obs, np.ones((4, 0), np.float32), np.zeros((4, 1, 0), np.float32))
    ops = {node.op_type for node in onnx.load(path).graph.node}
    assert "Relu" in ops and "Sigmoid" not in ops
