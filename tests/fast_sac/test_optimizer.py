"""Gradient routing and target updates of FastSACOptimizer on real ML-Agents networks."""
import numpy as np
import pytest
import torch
from helpers import filled_trainer


def _filled_trainer(tmp_path, actor_min_q=False, **spec_kw):
    return filled_trainer(tmp_path, actor_min_q=actor_min_q, **spec_kw)


def _grads(loss, params):
    g = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return [x is not None and bool(torch.any(x != 0)) for x in g]


@pytest.mark.parametrize("actor_min_q", [False, True])
@pytest.mark.parametrize("spec_kw", [dict(cont=2), dict(cont=0, branches=(3, 2)), dict(cont=1, branches=(2,))])
def test_each_loss_reaches_only_its_own_parameters(tmp_path, spec_kw, actor_min_q):
    trainer = _filled_trainer(tmp_path, actor_min_q=actor_min_q, **spec_kw)
    opt = trainer.optimizer
    out = opt.compute_losses(trainer.sample_batch())
    actor = [p for p in trainer.policy.actor.parameters() if p.requires_grad]
    critic = opt.head.q_params
    temps = ([opt.head.temperatures.log_alpha_cont] if spec_kw.get("cont", 2) > 0 else []) + (
        [opt.head.temperatures.log_alpha_disc] if spec_kw.get("branches") else []
    )
    target = list(opt.head.q_target.parameters())
    assert all(not p.requires_grad for p in target)
    # critic loss: critics only (targets carry no gradient, actor not reached through detached targets)
    for loss in (out.q1_loss, out.q2_loss):
        assert not any(_grads(loss, actor)) and not any(_grads(loss, temps))
        assert any(_grads(loss, critic))
    assert any(_grads(out.q1_loss, list(opt.head.q_net.q1.parameters()))) and not any(_grads(out.q1_loss, list(opt.head.q_net.q2.parameters())))
    # actor loss: actor only
    assert any(_grads(out.policy_loss, actor))
    assert not any(_grads(out.policy_loss, critic)) and not any(_grads(out.policy_loss, temps))
    # temperature loss: temperatures only
    assert all(_grads(out.temperature_loss, temps))
    assert not any(_grads(out.temperature_loss, actor)) and not any(_grads(out.temperature_loss, critic))


def test_update_moves_targets_by_polyak_only(tmp_path):
    trainer = _filled_trainer(tmp_path, cont=2)
    opt = trainer.optimizer
    before_t = [p.detach().clone() for p in opt.head.q_target_params]
    before_q = [p.detach().clone() for p in opt.head.q_params]
    opt.update(trainer.sample_batch())
    tau = opt.hyperparameters.tau
    changed = False
    for bt, t, q, bq in zip(before_t, opt.head.q_target_params, opt.head.q_params, before_q):
        torch.testing.assert_close(t, (1 - tau) * bt + tau * q.detach(), rtol=1e-5, atol=1e-6)
        changed |= bool(torch.any(q != bq))
    assert changed


def test_temperature_rises_when_entropy_is_below_target(tmp_path):
    trainer = _filled_trainer(tmp_path, cont=2)
    opt = trainer.optimizer
    opt.head.target_entropy_cont = 100.0  # unreachable entropy: alpha must grow
    before = opt.head.temperatures.log_alpha_cont.item()
    opt.update(trainer.sample_batch())
    assert opt.head.temperatures.log_alpha_cont.item() > before
    opt.head.target_entropy_cont = -100.0
    before = opt.head.temperatures.log_alpha_cont.item()
    opt.update(trainer.sample_batch())
    assert opt.head.temperatures.log_alpha_cont.item() < before


def test_stats_keys_are_reported(tmp_path):
    from mlagents_plugins.sac import head as sac_head

    trainer = _filled_trainer(tmp_path, cont=1, branches=(2,))
    stats, td = trainer.optimizer.update(trainer.sample_batch())
    for key in (sac_head.STAT_POLICY_LOSS, sac_head.STAT_Q1_LOSS, sac_head.STAT_Q2_LOSS, sac_head.STAT_ENTCOEF, sac_head.STAT_LR,
                sac_head.STAT_CONT_ENTCOEF, sac_head.STAT_DISC_ENTCOEF):
        assert np.isfinite(stats[key]), key
    assert td.shape == (16,)


def test_drift_stats_per_branch_match_a_direct_computation(tmp_path):
    from mlagents_plugins.sac import losses as sac_losses
    from mlagents_plugins.sac import head as sac_head

    trainer = _filled_trainer(tmp_path, cont=0, branches=(3, 2))
    opt = trainer.optimizer
    with torch.no_grad():
        opt.head.temperatures.log_alpha_disc.copy_(torch.log(torch.tensor([0.3, 0.07])))
    batch = trainer.sample_batch()
    torch.manual_seed(0)
    with torch.no_grad():
        out = opt.compute_losses(batch)
        q1_all, q2_all = opt.head.q_net(batch.s_tm1, batch.a_tm1_cont)
        _, _, lp_d = opt._actor(batch.s_tm1, batch.mask_tm1)
    p = lp_d.exp()
    ent0 = -(p[:, :3] * lp_d[:, :3]).sum(1).mean()
    ent1 = -(p[:, 3:] * lp_d[:, 3:]).sum(1).mean()
    def expect(q):  # mean over the two branches of E_pi_k Q_k, per stream
        return ((q[:, :, :3] * p[:, None, :3]).sum(-1) + (q[:, :, 3:] * p[:, None, 3:]).sum(-1)) / 2
    bias = (torch.minimum(expect(q1_all), expect(q2_all)) - expect(torch.minimum(q1_all, q2_all))).mean()
    q1 = sac_losses.condense_q(q1_all, batch.a_tm1_disc, opt.branches)
    q2 = sac_losses.condense_q(q2_all, batch.a_tm1_disc, opt.branches)
    d = out.diagnostics
    torch.testing.assert_close(d[0], q1.abs().mean(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(d[2], (q1 - q2).abs().mean(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(d[5], bias, rtol=1e-4, atol=1e-6)
    assert d[5].item() >= 0.0
    torch.testing.assert_close(d[6:8], torch.stack([ent0, ent1]), rtol=1e-5, atol=1e-6)
    assert d.shape == (6 + 2,)  # the temperatures are not diagnostics: sac_stats reads them after the step
    stats, _ = opt.update(batch)
    for key in (sac_head.STAT_BRANCH_ENTROPY.format(0), sac_head.STAT_BRANCH_ENTROPY.format(1), sac_head.STAT_BRANCH_ENTCOEF.format(1),
                sac_head.STAT_Q_ABS, sac_head.STAT_Q_STD, sac_head.STAT_TWIN_GAP, sac_head.STAT_TARGET_MEAN, sac_head.STAT_TARGET_DRIFT, sac_head.STAT_BRANCH_MIN_BIAS):
        assert np.isfinite(stats[key]), key
    assert sac_head.STAT_BRANCH_ENTROPY.format(2) not in stats
    # All temperature stats are the values after the step, so the branches average to the discrete coefficient.
    alpha_d = opt.head.temperatures.log_alpha_disc.exp().tolist()
    assert alpha_d[0] != pytest.approx(0.3, abs=1e-9) and alpha_d[1] != pytest.approx(0.07, abs=1e-9)
    assert [stats[sac_head.STAT_BRANCH_ENTCOEF.format(i)] for i in (0, 1)] == pytest.approx(alpha_d, rel=1e-6)
    assert stats[sac_head.STAT_DISC_ENTCOEF] == pytest.approx(sum(alpha_d) / 2, rel=1e-6)


def test_fast_cpu_matmul_gives_the_same_losses_and_gradients(tmp_path):
    """``fast_cpu_matmul`` only picks a kernel: losses and gradients match the default kernel to fp32."""
    from mlagents_plugins.common.fast_kernels import fast_fp32_matmul

    trainer = _filled_trainer(tmp_path, cont=2, branches=(3, 2))
    opt = trainer.optimizer
    batch = trainer.sample_batch()
    results = []
    for enabled in (False, True):
        torch.manual_seed(11)
        with fast_fp32_matmul(opt.device, enabled):
            out = opt.compute_losses(batch)
            params = [p for p in opt.head.q_net.parameters()] + [p for p in opt.policy.actor.parameters() if p.requires_grad]
            grads = torch.autograd.grad(out.q1_loss + out.policy_loss, params, allow_unused=True)
        results.append((out, grads))
    (a, ga), (b, gb) = results
    for name in ("q1_loss", "q2_loss", "policy_loss", "temperature_loss"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), rtol=1e-4, atol=1e-5, msg=name)
    for x, y in zip(ga, gb):
        if x is not None:
            torch.testing.assert_close(x, y, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("spec_kw", [dict(cont=2), dict(cont=0, branches=(3, 2)), dict(cont=1, branches=(2, 4))])
def test_training_actor_path_matches_the_policys_action_model(tmp_path, spec_kw):
    """The optimizer's lean sampling path draws from exactly the policy's distributions (same RNG draws)."""
    trainer = _filled_trainer(tmp_path, **spec_kw)
    opt = trainer.optimizer
    batch = trainer.sample_batch()
    torch.manual_seed(5)
    cont, lp_c, lp_d = opt._actor(batch.s_tm1, batch.mask_tm1)
    torch.manual_seed(5)
    actor = opt.policy.actor
    encoding, _ = actor.network_body(batch.s_tm1)
    action, lp, _ = actor.action_model(encoding, batch.mask_tm1)
    if spec_kw["cont"]:
        torch.testing.assert_close(cont, action.continuous_tensor)
        torch.testing.assert_close(lp_c, lp.continuous_tensor.sum(dim=1), rtol=1e-4, atol=1e-4)
    else:
        assert cont is None and lp_c is None
    if spec_kw.get("branches"):
        torch.testing.assert_close(lp_d, lp.all_discrete_tensor)
    else:
        assert lp_d is None


def test_sac_stats_match_a_direct_computation_with_continuous_and_discrete_temperatures():
    """``sac_stats`` reads every value from one concatenation: each key against its own source, with temperatures
    and losses different enough that a shifted slice or a swapped key shows."""
    from mlagents_plugins.sac import head as sac_head
    from mlagents_plugins.sac.losses import SACLosses
    from mlagents_plugins.sac.networks import Temperatures

    temps = Temperatures(0.5, 2)
    with torch.no_grad():
        temps.log_alpha_cont.fill_(-1.25)
        temps.log_alpha_disc.copy_(torch.tensor([0.3, -2.0]))
    diag = torch.tensor([1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5])  # 6 + 2 branches
    out = SACLosses(q1_loss=torch.tensor(0.11), q2_loss=torch.tensor(0.22), policy_loss=torch.tensor(-3.3),
                    temperature_loss=torch.tensor(0.44), td_abs=torch.zeros(4), q_mean=torch.tensor(9.9),
                    entropy=torch.tensor(-0.77), diagnostics=diag)
    stats = sac_head.sac_stats(out, temps, True, [3, 2])
    a_c, a_d = np.exp(-1.25), np.exp([0.3, -2.0])
    expected = {
        sac_head.STAT_POLICY_LOSS: -3.3, sac_head.STAT_Q1_LOSS: 0.11, sac_head.STAT_Q2_LOSS: 0.22,
        sac_head.STAT_ENTCOEF_LOSS: 0.44, sac_head.STAT_Q_MEAN: 9.9, sac_head.STAT_ENTROPY: -0.77,
        sac_head.STAT_ENTCOEF: (a_c + a_d.sum()) / 3, sac_head.STAT_CONT_ENTCOEF: a_c,
        sac_head.STAT_DISC_ENTCOEF: a_d.mean(),
        sac_head.STAT_BRANCH_ENTCOEF.format(0): a_d[0], sac_head.STAT_BRANCH_ENTCOEF.format(1): a_d[1],
    }
    expected.update(zip(sac_head._diagnostic_keys(2), diag.tolist()))
    assert set(stats) == set(expected)
    for key, value in expected.items():
        assert stats[key] == pytest.approx(value, rel=1e-6), key  # float32 inputs, exp in float64
    continuous_only = sac_head.sac_stats(out._replace(diagnostics=diag[:6]), Temperatures(0.5, 0), True, [])
    assert continuous_only[sac_head.STAT_ENTCOEF] == pytest.approx(0.5, rel=1e-6)
    assert sac_head.STAT_DISC_ENTCOEF not in continuous_only
