"""taac's ``critic_layer_norm`` (the shared ``critic_norm`` module fast_sac uses): the setting reaches the online and
target critics of the exported actor, and the checkpoint decides whether resumed critics normalize, including
taac checkpoints written before the setting existed."""
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from tests.taac.test_trainer import make_trainer, obs_spec


def _optimizer(tmp_path, hidden_units: int = 16, **hyper):
    trainer = make_trainer(tmp_path, hidden_units=hidden_units, **hyper)
    trainer.policy = trainer.create_policy(None, BehaviorSpec([obs_spec(5)], ActionSpec.create_continuous(2)))
    return trainer.create_optimizer()


def _q(critic, seed=3):
    g = torch.Generator().manual_seed(seed)
    obs = [torch.randn(6, 5, generator=g) * torch.tensor([0.3, 2.0, 1.0, 4.0, 0.5]) + 0.4]
    tau = torch.rand(6, 2, generator=g) * 1.6 - 0.7
    return critic(obs, tau)


@pytest.mark.parametrize("on", [True, False])
def test_the_setting_reaches_online_and_target_critics(tmp_path, on):
    opt = _optimizer(tmp_path, critic_layer_norm=on)
    assert opt.q_net.layer_norm is on and opt.q_target.layer_norm is on
    assert opt.q_net is opt.policy.actor.critic  # the exported actor's own critics
    assert len(opt.q_net._normed) == 2
    assert all(a is not b for a, b in zip(opt.q_net._normed, opt.q_target._normed))


@pytest.mark.parametrize("hidden, expected", [(64, True), (256, True), (63, False), (16, False)])
def test_default_normalizes_critics_of_64_units_or_more(tmp_path, hidden, expected):
    assert _optimizer(tmp_path, hidden_units=hidden).q_net.layer_norm is expected


def test_a_taac_checkpoint_from_before_the_setting_loads_without_layer_norm(tmp_path):
    old = _optimizer(tmp_path / "a", critic_layer_norm=False).q_net
    state = {k: v for k, v in old.state_dict().items() if not k.endswith("_extra_state")}
    new = _optimizer(tmp_path / "b", critic_layer_norm=True).q_net
    missing, unexpected = new.load_state_dict(state, strict=False)  # as ML-Agents' TorchModelSaver loads
    assert missing == ["_extra_state"] and not unexpected
    assert not new.layer_norm
    assert torch.equal(_q(old), _q(new))


@pytest.mark.parametrize("saved_on", [True, False])
def test_the_checkpoint_decides_over_the_setting(tmp_path, saved_on):
    saved = _optimizer(tmp_path / "a", critic_layer_norm=saved_on).q_net
    resumed = _optimizer(tmp_path / "b", critic_layer_norm=not saved_on).q_net
    resumed.load_state_dict(saved.state_dict())
    assert resumed.layer_norm is saved_on
    assert torch.equal(_q(saved), _q(resumed))


@pytest.mark.parametrize("on", [True, False])
def test_critic_small_init_reaches_online_and_target_critics_output_layers_only(tmp_path, on):
    from mlagents_plugins.common.critic_norm import SMALL_OUTPUT_INIT

    torch.manual_seed(5)
    small = _optimizer(tmp_path / "a", critic_small_init=on)
    torch.manual_seed(5)
    plain = _optimizer(tmp_path / "b", critic_small_init=False)
    for critic in (small.q_net, small.q_target):
        biggest = max(float(p.detach().abs().max()) for q in critic.replicas for p in q.value_heads.parameters())
        assert (biggest <= SMALL_OUTPUT_INIT) is on
    # the hidden layers are ML-Agents' own either way (same draws), only the output layers differ
    heads = {id(p) for q in small.q_net.replicas for p in q.value_heads.parameters()}
    plain_params = dict(plain.q_net.named_parameters())
    for name, p in small.q_net.named_parameters():
        if id(p) not in heads:
            assert torch.equal(p, plain_params[name]), name
    with torch.no_grad():
        spread_small = _q(small.q_net).abs().max()
        spread_plain = _q(plain.q_net).abs().max()
    assert bool(spread_small * 10 < spread_plain) is on


def test_critic_small_init_is_off_by_default_and_rejects_non_bools(tmp_path):
    from mlagents.trainers.exception import TrainerConfigError
    from mlagents_plugins.taac.settings import TaacSettings

    assert TaacSettings().critic_small_init is False
    with pytest.raises(TrainerConfigError, match="critic_small_init = 'yes' is invalid"):
        TaacSettings(critic_small_init="yes")
