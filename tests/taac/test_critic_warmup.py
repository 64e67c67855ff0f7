"""taac's ``critic_warmup_updates``: the first updates train the critics alone (the actor's proposal and both
temperatures, and their Adam states, stay as they were), then every update trains all three; the count is the
optimizer's ``num_updates``, which the checkpoint keeps (bench/results/tiny-defaults-2026-11-28)."""
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents_envs.base_env import ActionSpec, BehaviorSpec

from mlagents_plugins.taac import stats
from mlagents_plugins.taac.settings import TaacSettings
from tests.taac.test_trainer import make_trainer, obs_spec, synthetic_batch


def _optimizer(tmp_path, **hyper):
    trainer = make_trainer(tmp_path, **hyper)
    trainer.policy = trainer.create_policy(None, BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2)))
    return trainer, trainer.create_optimizer()


def _moved(before, params):
    return [not torch.equal(b, p.detach()) for b, p in zip(before, params)]


def test_warmup_updates_move_the_critics_only_then_everything(tmp_path):
    torch.manual_seed(2)
    trainer, opt = _optimizer(tmp_path, critic_warmup_updates=2)
    actor = list(opt.actor.actor_parameters())
    temps = [opt.actor.log_alpha_action, opt.actor.log_alpha_switch]
    critics = list(opt.critic.parameters())
    actor0, temps0, critics0 = ([p.detach().clone() for p in ps] for ps in (actor, temps, critics))
    for k in range(2):
        out = opt.update(synthetic_batch(trainer, seed=k))
        assert out[stats.CRITIC_WARMUP] == 1.0 and opt.num_updates == k + 1
    assert not any(_moved(actor0, actor)) and not any(_moved(temps0, temps))
    assert not opt.actor_optimizer.state and not opt.temperature_optimizer.state
    assert any(_moved(critics0, critics))
    out = opt.update(synthetic_batch(trainer, seed=7))
    assert out[stats.CRITIC_WARMUP] == 0.0 and not opt.warming_up
    assert any(_moved(actor0, actor)) and all(_moved(temps0, temps))


def test_resumed_count_ends_the_warmup(tmp_path):
    trainer, opt = _optimizer(tmp_path, critic_warmup_updates=5)
    assert opt.warming_up
    opt._set_num_updates(5)  # what loading the checkpoint's taac_state does
    assert not opt.warming_up


def test_default_and_refusals():
    assert TaacSettings().critic_warmup_updates == 0  # off by default (no candidate passed, the study)
    for bad in (-3, 1.5, False, "many"):
        with pytest.raises(TrainerConfigError, match=f"critic_warmup_updates = {bad!r} is invalid.*integer >= 0"):
            TaacSettings(critic_warmup_updates=bad)


def test_critic_neutral_init_removes_the_slope_in_tau_only(tmp_path):
    """``critic_neutral_init``: every critic's first-layer weights on tau start at 0, so a fresh Q(s, tau) does not
    depend on tau but still on the observation, at ML-Agents' output scale; online and target critics alike."""
    g = torch.Generator().manual_seed(1)
    obs = [torch.randn(6, 4, generator=g) * 2.0]
    tau_a, tau_b = torch.rand(6, 2, generator=g) * 1.8 - 0.9, torch.rand(6, 2, generator=g) * 1.8 - 0.9
    torch.manual_seed(5)
    _, neutral = _optimizer(tmp_path / "n", critic_neutral_init=True)
    torch.manual_seed(5)
    _, default = _optimizer(tmp_path / "d")
    with torch.no_grad():
        for critic in (neutral.q_net, neutral.q_target):
            assert torch.equal(critic(obs, tau_a), critic(obs, tau_b))
        q = neutral.q_net(obs, tau_a)
        d_a, d_b = default.q_net(obs, tau_a), default.q_net(obs, tau_b)
    assert (d_a - d_b).abs().max() > 1e-3  # ML-Agents' initialization has a slope in tau
    assert q.std(dim=1).min() > 1e-3 and q.abs().mean() > 0.2 * d_a.abs().mean()
    assert TaacSettings().critic_neutral_init is False
    with pytest.raises(TrainerConfigError, match="critic_neutral_init = 'yes' is invalid"):
        TaacSettings(critic_neutral_init="yes")
