"""Optimizer: both updates run for every action kind; gradient routing of the RL loss; priorities written by the
trainer."""
import copy

import numpy as np
import pytest
import torch

from mlagents_plugins.muzero_repr import batch as muzero_batch
from mlagents_plugins.muzero_repr import optimizer as O
from mlagents_plugins.sac import head as sac_head
from mlagents_plugins.sac import losses as sac_losses

from .muzero_helpers import fill, make_trainer, muzero_reward
from tests.builders import behavior_spec, trajectory


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def _changed(before, module):
    return [not torch.equal(b, p.detach()) for b, p in zip(before, module.parameters())]


@pytest.mark.parametrize("obs_shapes,cont,branches", [(((4,),), 2, ()), (((4,),), 0, (3, 2)),
                                                      (((3, 20, 20), (2,)), 1, (2,))])
def test_updates_run_and_report_stats(tmp_path, obs_shapes, cont, branches):
    spec = behavior_spec(obs_shapes, cont, branches)
    trainer = make_trainer(spec, tmp_path, train_repr_prediction=True, train_game_over=True,
                           policy_loss_weight=0.5, random_shift_pad=2, actions_after_end="random")
    fill(trainer, spec, np.random.default_rng(0))
    stats = trainer.update_once()
    for key in (O.STAT_MODEL_LOSS, O.STAT_VALUE_LOSS.format(k=0), O.STAT_VALUE_LOSS.format(k=3),
                O.STAT_REWARD_LOSS.format(k=1), O.STAT_REWARD_LOSS.format(k=3), O.STAT_POLICY_LOSS.format(k=0),
                O.STAT_CONSISTENCY_LOSS.format(k=1), O.STAT_GAME_OVER_LOSS, O.STAT_LATENT_NORM.format(k=2),
                sac_head.STAT_Q1_LOSS, sac_head.STAT_POLICY_LOSS, sac_head.STAT_Q_ABS, sac_head.STAT_ENTCOEF):
        assert key in stats and np.isfinite(stats[key]), key


@pytest.mark.parametrize("rl_grad", [False, True])
def test_rl_loss_reaches_representation_only_when_enabled(tmp_path, rl_grad):
    spec = behavior_spec(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path, rl_gradient_to_repr=rl_grad)
    fill(trainer, spec, np.random.default_rng(1))
    opt = trainer.optimizer
    repr_before = _params(opt.actor.representation)
    dyn_before = _params(opt.model.dynamics_trunk)
    head_before = _params(opt.actor.network_body.head)
    opt.update_rl(trainer.sample_rl_batch())
    assert any(_changed(head_before, opt.actor.network_body.head))
    assert not any(_changed(dyn_before, opt.model.dynamics_trunk))
    assert any(_changed(repr_before, opt.actor.representation)) == rl_grad


def test_model_update_trains_shared_representation_not_rl_head(tmp_path):
    spec = behavior_spec(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path)
    fill(trainer, spec, np.random.default_rng(2))
    opt = trainer.optimizer
    assert opt.model.representation is opt.actor.representation
    repr_before = _params(opt.actor.representation)
    head_before = _params(opt.actor.network_body.head)
    q_before = _params(opt.head.q_net)
    opt.update_model(trainer.sample_model_batch())
    assert any(_changed(repr_before, opt.actor.representation))
    assert not any(_changed(head_before, opt.actor.network_body.head))
    assert not any(_changed(q_before, opt.head.q_net))


def test_prioritized_model_update_writes_value_error_priorities(tmp_path):
    spec = behavior_spec(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, per_alpha=1.0, per_epsilon=1e-3)
    fill(trainer, spec, np.random.default_rng(3))
    opt = trainer.optimizer
    # The batch the trainer's next model update will sample (a copy of its generator), and its value errors
    # with the model at its pre-update weights: the priorities update_once must write for those rows.
    batch = trainer.sample_model_batch(copy.deepcopy(trainer.rng))
    with torch.no_grad():
        value_err = opt.model_loss(batch).losses.value_err
    before = trainer.replay.priorities.priorities(np.arange(trainer.replay.size)).copy()
    stats = trainer.update_once()
    got = trainer.replay.priorities.priorities(batch.starts)
    assert np.allclose(got, value_err.numpy() + 1e-3, rtol=1e-4)
    untouched = np.setdiff1d(np.arange(trainer.replay.size), batch.starts)
    assert len(untouched) and np.array_equal(trainer.replay.priorities.priorities(untouched), before[untouched])
    assert stats[O.STAT_PRIORITY_MAX] == pytest.approx(float(got.max()), rel=1e-6)


def test_model_target_network_follows_period(tmp_path):
    spec = behavior_spec(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, model_target_update_period=2, model_target_update_tau=1.0)
    fill(trainer, spec, np.random.default_rng(4))
    opt = trainer.optimizer
    opt.update_model(trainer.sample_model_batch())
    online = dict(opt.model.named_parameters())
    assert any(not torch.equal(p, online[n]) for n, p in opt.target_model.named_parameters())
    opt.update_model(trainer.sample_model_batch())
    online = dict(opt.model.named_parameters())
    assert all(torch.equal(p, online[n]) for n, p in opt.target_model.named_parameters())


def test_target_model_copies_normaliser_statistics(tmp_path):
    spec = behavior_spec(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, normalize=True, model_target_update_period=1,
                           model_target_update_tau=0.5)
    fill(trainer, spec, np.random.default_rng(6))
    opt = trainer.optimizer
    online = dict(opt.model.named_buffers())
    assert any("running_mean" in n for n in online)
    opt.update_model(trainer.sample_model_batch())
    for n, b in opt.target_model.named_buffers():
        assert torch.equal(b, dict(opt.model.named_buffers())[n]), n
    # weights moved only half way (tau = 0.5), so they still differ from the online model
    params = dict(opt.model.named_parameters())
    assert any(not torch.equal(p, params[n]) for n, p in opt.target_model.named_parameters())


def test_importance_weights_use_annealed_beta(tmp_path):
    spec = behavior_spec(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, per_beta=0.4)
    fill(trainer, spec, np.random.default_rng(7))
    rows = trainer.replay.size
    trainer.replay.update_priorities(np.arange(rows), np.linspace(0.1, 3.0, rows))
    trainer._step = trainer.trainer_settings.max_steps // 2
    assert trainer.per_beta() == pytest.approx(0.7)
    batch = trainer.sample_model_batch(np.random.default_rng(9))  # default: the annealed per_beta()
    pri = trainer.replay.priorities.priorities(batch.starts)
    total = trainer.replay.priorities.total
    w = [(rows * p / total) ** -0.7 for p in pri]
    assert np.allclose(batch.is_weights.numpy(), np.array(w) / max(w), rtol=1e-5)
    stats = trainer.update_once()
    assert stats[O.STAT_PER_BETA] == pytest.approx(0.7)


def test_rl_temperature_target_is_mask_aware(tmp_path, monkeypatch):
    """The RL head's discrete target entropy is scale * log(#allowed actions) per sample and branch (fast_sac's
    ``masked_target_entropy``), not scale * log(branch size)."""
    spec = behavior_spec(((4,),), 0, (4, 3))
    trainer = make_trainer(spec, tmp_path, discrete_target_entropy_scale=0.7, batch_size=16)
    rng = np.random.default_rng(3)
    # Per step a different mask (True = masked, as ML-Agents' AgentExperience): branch 0 keeps 1..4 actions.
    for i in range(4):
        traj = trajectory(spec, 6 + i, rng, done=True, agent_id=f"a{i}", reward=muzero_reward)
        steps = []
        for t, exp in enumerate(traj.steps):
            keep0 = 1 + (t + i) % 4
            keep1 = 1 + (t * 2 + i) % 3
            mask = [np.arange(4) >= keep0, np.arange(3) >= keep1]
            steps.append(exp._replace(action_mask=mask))
        trainer._process_trajectory(traj._replace(steps=steps))
    seen = {}
    real = sac_losses.temperature_loss

    def spy(log_alpha_cont, log_alpha_disc, lp_c, lp_d, target_cont, target_disc, branches):
        seen["target"] = torch.as_tensor(target_disc).clone()
        seen["lp_d"] = lp_d.detach().clone()
        return real(log_alpha_cont, log_alpha_disc, lp_c, lp_d, target_cont, target_disc, branches)

    monkeypatch.setattr(sac_losses, "temperature_loss", spy)
    trainer.optimizer.update_rl(trainer.sample_rl_batch())
    target = seen["target"]
    assert target.shape == (16, 2)
    # Naive reference: count the actions the policy could take (finite, non-negligible log-prob) per branch.
    probs = seen["lp_d"].exp()
    for b in range(16):
        allowed0 = sum(1 for a in range(4) if probs[b, a] > 1e-6)
        allowed1 = sum(1 for a in range(3) if probs[b, 4 + a] > 1e-6)
        assert abs(target[b, 0].item() - 0.7 * np.log(allowed0)) < 1e-5
        assert abs(target[b, 1].item() - 0.7 * np.log(allowed1)) < 1e-5
    assert len(set(target[:, 0].tolist())) > 1  # the batch really mixed masks


def test_actor_loss_never_reaches_representation(tmp_path, monkeypatch):
    """With rl_gradient_to_repr only the critic's TD loss trains h; the actor sees a detached latent (SAC-AE/DrQ)."""
    spec = behavior_spec(((4,),), 1, (3,))
    trainer = make_trainer(spec, tmp_path, rl_gradient_to_repr=True)
    fill(trainer, spec, np.random.default_rng(4))
    opt = trainer.optimizer
    real = sac_losses.twin_q_loss

    def critic_off(q1, q2, y, *args, **kwargs):
        l1, l2, td = real(q1, q2, y, *args, **kwargs)
        return l1 * 0.0, l2 * 0.0, td

    monkeypatch.setattr(sac_losses, "twin_q_loss", critic_off)
    repr_before = _params(opt.actor.representation)
    head_before = _params(opt.actor.network_body.head)
    opt.update_rl(trainer.sample_rl_batch())
    assert any(_changed(head_before, opt.actor.network_body.head))  # the actor loss did train the actor
    assert not any(_changed(repr_before, opt.actor.representation))


def test_rl_head_samples_by_model_priorities_with_importance_weights(tmp_path, monkeypatch):
    """With prioritized_replay the RL head draws from the same priorities as the model, and its critic loss
    carries the importance weights (N P)^-beta / max; without PER it samples uniformly, unweighted."""
    spec = behavior_spec(((4,),), 0, (3,))
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, per_beta=0.5, batch_size=32)
    fill(trainer, spec, np.random.default_rng(11))
    rows = trainer.replay.size
    favoured = np.array([2, 7])
    pri = np.full(rows, 1e-4)
    pri[favoured] = [1.0, 3.0]
    trainer.replay.update_priorities(np.arange(rows), pri)
    seen = {}
    real_window, real_loss = muzero_batch.window_batch, sac_losses.twin_q_loss

    def spy_window(replay, starts, *args):
        seen["starts"] = np.array(starts)
        return real_window(replay, starts, *args)

    def spy_loss(q1, q2, y, weights=None):
        seen["weights"] = None if weights is None else weights.clone()
        return real_loss(q1, q2, y, weights)

    monkeypatch.setattr(muzero_batch, "window_batch", spy_window)
    monkeypatch.setattr(sac_losses, "twin_q_loss", spy_loss)
    trainer.optimizer.update_rl(trainer.sample_rl_batch(np.random.default_rng(0), per_beta=0.8))
    starts = seen["starts"]
    assert set(starts.tolist()) <= set(favoured.tolist()) and len(set(starts.tolist())) == 2
    total = pri.sum()
    expected = [(rows * pri[i] / total) ** -0.8 for i in starts]
    m = max((rows * pri[i] / total) ** -0.8 for i in favoured)  # both favoured rows appear in the batch
    assert np.allclose(seen["weights"].numpy(), np.array(expected) / m, rtol=1e-5)
    assert seen["weights"].min() < 1.0  # row 7 (more likely) is down-weighted

    uniform = make_trainer(spec, tmp_path / "u", batch_size=32)
    fill(uniform, spec, np.random.default_rng(11))
    uniform.optimizer.update_rl(uniform.sample_rl_batch(np.random.default_rng(0)))
    assert seen["weights"] is None and len(set(seen["starts"].tolist())) > 2
