"""``critic_layer_norm``: layer normalization in the critics' hidden layers (critic_norm.NormedSequential).

The math is checked against a float64 loop written here (mean and biased variance over the features, eps 1e-5,
after each linear layer and before its activation); the state_dict keys stay ML-Agents' own, so checkpoints of
either kind load, and the checkpoint (not the setting) decides whether a resumed critic normalizes.
"""
import numpy as np
import pytest
import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionSpec

from mlagents_plugins.common.critic_norm import NormedSequential
from mlagents_plugins.sac.networks import TwinQ
from tests.builders import behavior_spec
from tests.fast_sac.helpers import make_trainer


def _twin(layer_norm: bool, seed: int = 0) -> TwinQ:
    torch.manual_seed(seed)
    spec = behavior_spec(((7,),), cont=3)
    return TwinQ(["extrinsic"], spec.observation_specs, NetworkSettings(hidden_units=12, num_layers=2),
                 ActionSpec(3, ()), layer_norm=layer_norm)


def _inputs(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    obs = [torch.randn(5, 7, generator=g) * torch.linspace(0.2, 3.0, 7) + 0.7]
    act = torch.rand(5, 3, generator=g) * 1.8 - 0.6
    return obs, act


def test_normed_sequential_matches_a_float64_reference():
    torch.manual_seed(3)
    seq = torch.nn.Sequential(torch.nn.Linear(6, 9), torch.nn.SiLU(), torch.nn.Linear(9, 4), torch.nn.SiLU())
    normed = NormedSequential(seq, layer_norm=True)
    x = torch.randn(11, 6) * torch.tensor([0.1, 5.0, 1.0, -2.0, 0.3, 8.0]) + torch.tensor([3.0, 0, 0, 0, -1.0, 0])
    got = normed(x)
    h = x.double().numpy()
    for lin in (seq[0], seq[2]):
        h = h @ lin.weight.detach().double().numpy().T + lin.bias.detach().double().numpy()
        mean = h.mean(axis=1, keepdims=True)
        var = ((h - mean) ** 2).mean(axis=1, keepdims=True)
        h = (h - mean) / np.sqrt(var + 1e-5)
        h = h / (1.0 + np.exp(-h))  # SiLU
    # float32: pre-activations of magnitude <= ~10 summed over <= 9 terms carry <= ~9 x 10 x 6e-8 ~ 5e-6 absolute
    # rounding in any summation order, and the normalization divides by their spread (> 1 here), so <= ~5e-6 after
    # it; 1e-5 bounds that on any CPU (this input gives about 1e-6)
    np.testing.assert_allclose(got.detach().numpy(), h, rtol=1e-5, atol=1e-5)
    # switched off it is the wrapped Sequential, bit for bit
    normed.layer_norm = False
    assert torch.equal(normed(x), seq(x))


def test_state_dict_keys_are_ml_agents_own_and_the_setting_changes_the_output():
    plain, normed = _twin(False), _twin(True)
    keys = lambda m: sorted(k for k in m.state_dict() if not k.endswith("_extra_state"))  # noqa: E731
    assert keys(plain) == keys(normed)
    assert all(".network_body._body_endoder.seq_layers." in k for k in keys(normed) if "_body_endoder" in k)
    normed.load_state_dict(plain.state_dict())  # same weights; the extra state says layer_norm=False
    assert not normed.layer_norm
    obs, act = _inputs()
    q_plain, _ = plain(obs, act)
    normed.layer_norm = True
    q_normed, _ = normed(obs, act)
    assert not torch.allclose(q_plain, q_normed, atol=1e-3)


@pytest.mark.parametrize("saved_on, module_on", [(True, False), (False, True), (True, True)])
def test_the_checkpoint_decides_whether_a_resumed_critic_normalizes(saved_on, module_on):
    saved = _twin(saved_on, seed=4)
    target = _twin(module_on, seed=5)
    target.load_state_dict(saved.state_dict())
    assert target.layer_norm is saved_on
    obs, act = _inputs()
    for a, b in zip(saved(obs, act), target(obs, act)):
        assert torch.equal(a, b)


def test_a_checkpoint_from_before_the_setting_loads_without_layer_norm():
    old = _twin(False, seed=6)
    state = {k: v for k, v in old.state_dict().items() if not k.endswith("_extra_state")}
    new = _twin(True, seed=7)
    missing, unexpected = new.load_state_dict(state, strict=False)  # as ML-Agents' TorchModelSaver loads
    assert missing == ["_extra_state"] and not unexpected
    assert not new.layer_norm
    obs, act = _inputs()
    for a, b in zip(old(obs, act), new(obs, act)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("saved_on", [True, False])
def test_extra_state_as_a_dict_from_earlier_checkpoints_loads(saved_on):
    """Checkpoints before the tensor form saved ``{"layer_norm": bool}``; they load the same way."""
    saved = _twin(saved_on, seed=8)
    state = saved.state_dict()
    assert state["_extra_state"].shape == () and float(state["_extra_state"]) == float(saved_on)
    state["_extra_state"] = {"layer_norm": saved_on}
    target = _twin(not saved_on, seed=9)
    target.load_state_dict(state)
    assert target.layer_norm is saved_on
    obs, act = _inputs()
    for a, b in zip(saved(obs, act), target(obs, act)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("on", [True, False])
def test_the_setting_reaches_online_and_target_critics(tmp_path, on):
    trainer = make_trainer(behavior_spec(((4,),), cont=2), tmp_path, critic_layer_norm=on)
    opt = trainer.optimizer
    assert opt.head.q_net.layer_norm is on and opt.head.q_target.layer_norm is on
    assert len(opt.head.q_net._normed) == 2 and all(s is not t for s, t in zip(opt.head.q_net._normed, opt.head.q_target._normed))


@pytest.mark.parametrize("cont, branches, hidden, expected",
                         [(2, (), 64, True), (2, (), 63, False), (2, (), 16, False), (0, (3, 2), 64, False),
                          (2, (3,), 128, False)])
def test_automatic_default_normalizes_continuous_only_critics_of_64_units_or_more(tmp_path, cont, branches, hidden,
                                                                                   expected):
    trainer = make_trainer(behavior_spec(((4,),), cont=cont, branches=branches), tmp_path, hidden_units=hidden)
    assert trainer.hyperparameters.critic_layer_norm is None
    assert trainer.optimizer.head.q_net.layer_norm is expected and trainer.optimizer.head.q_target.layer_norm is expected
