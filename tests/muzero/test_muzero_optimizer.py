"""Optimizer: both updates run for every action kind; gradient routing of the RL loss; priorities."""
import numpy as np
import pytest
import torch

from mlagents_plugins.muzero import optimizer as O

from .muzero_helpers import fill, make_trainer, spec_with


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def _changed(before, module):
    return [not torch.equal(b, p.detach()) for b, p in zip(before, module.parameters())]


@pytest.mark.parametrize("obs_shapes,cont,branches", [(((4,),), 2, ()), (((4,),), 0, (3, 2)),
                                                      (((3, 20, 20), (2,)), 1, (2,))])
def test_updates_run_and_report_stats(tmp_path, obs_shapes, cont, branches):
    spec = spec_with(obs_shapes, cont, branches)
    trainer = make_trainer(spec, tmp_path, train_repr_prediction=True, train_game_over=True,
                           policy_loss_weight=0.5, random_shift_pad=2, actions_after_end="random")
    fill(trainer, spec, np.random.default_rng(0))
    stats = trainer.update_once()
    for key in (O.STAT_MODEL_LOSS, O.STAT_VALUE_LOSS.format(k=0), O.STAT_VALUE_LOSS.format(k=3),
                O.STAT_REWARD_LOSS.format(k=1), O.STAT_REWARD_LOSS.format(k=3), O.STAT_POLICY_LOSS.format(k=0),
                O.STAT_CONSISTENCY_LOSS.format(k=1), O.STAT_GAME_OVER_LOSS, O.STAT_LATENT_NORM.format(k=2),
                O.STAT_Q1_LOSS, O.STAT_POLICY_LOSS_RL):
        assert key in stats and np.isfinite(stats[key]), key


@pytest.mark.parametrize("rl_grad", [False, True])
def test_rl_loss_reaches_representation_only_when_enabled(tmp_path, rl_grad):
    spec = spec_with(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path, rl_gradient_to_repr=rl_grad)
    fill(trainer, spec, np.random.default_rng(1))
    opt = trainer.optimizer
    repr_before = _params(opt.actor.representation)
    dyn_before = _params(opt.model.dynamics_trunk)
    head_before = _params(opt.actor.network_body.head)
    opt.update_rl(trainer.replay, trainer.rng)
    assert any(_changed(head_before, opt.actor.network_body.head))
    assert not any(_changed(dyn_before, opt.model.dynamics_trunk))
    assert any(_changed(repr_before, opt.actor.representation)) == rl_grad


def test_model_update_trains_shared_representation_not_rl_head(tmp_path):
    spec = spec_with(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path)
    fill(trainer, spec, np.random.default_rng(2))
    opt = trainer.optimizer
    assert opt.model.representation is opt.actor.representation
    repr_before = _params(opt.actor.representation)
    head_before = _params(opt.actor.network_body.head)
    q_before = _params(opt.q_net)
    opt.update_model(trainer.replay, trainer.rng)
    assert any(_changed(repr_before, opt.actor.representation))
    assert not any(_changed(head_before, opt.actor.network_body.head))
    assert not any(_changed(q_before, opt.q_net))


def test_prioritized_model_update_writes_value_error_priorities(tmp_path):
    spec = spec_with(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, per_alpha=1.0, per_epsilon=1e-3)
    fill(trainer, spec, np.random.default_rng(3))
    opt = trainer.optimizer
    # Recompute the expected priorities from the same batch with the model frozen at its pre-update weights.
    rng_copy = np.random.default_rng(5)
    batch = opt.sample_model_batch(trainer.replay, rng_copy)
    with torch.no_grad():
        _, _, value_err, _, _ = opt.model_loss(batch)
    opt.update_model(trainer.replay, np.random.default_rng(5))
    got = trainer.replay.priorities.priorities(batch.starts)
    assert np.allclose(got, value_err.numpy() + 1e-3, rtol=1e-4)


def test_model_target_network_follows_period(tmp_path):
    spec = spec_with(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, model_target_update_period=2, model_target_update_tau=1.0)
    fill(trainer, spec, np.random.default_rng(4))
    opt = trainer.optimizer
    opt.update_model(trainer.replay, trainer.rng)
    online = dict(opt.model.named_parameters())
    assert any(not torch.equal(p, online[n]) for n, p in opt.target_model.named_parameters())
    opt.update_model(trainer.replay, trainer.rng)
    online = dict(opt.model.named_parameters())
    assert all(torch.equal(p, online[n]) for n, p in opt.target_model.named_parameters())


def test_target_model_copies_normaliser_statistics(tmp_path):
    spec = spec_with(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, normalize=True, model_target_update_period=1,
                           model_target_update_tau=0.5)
    fill(trainer, spec, np.random.default_rng(6))
    opt = trainer.optimizer
    online = dict(opt.model.named_buffers())
    assert any("running_mean" in n for n in online)
    opt.update_model(trainer.replay, trainer.rng)
    for n, b in opt.target_model.named_buffers():
        assert torch.equal(b, dict(opt.model.named_buffers())[n]), n
    # weights moved only half way (tau = 0.5), so they still differ from the online model
    params = dict(opt.model.named_parameters())
    assert any(not torch.equal(p, params[n]) for n, p in opt.target_model.named_parameters())


def test_importance_weights_use_annealed_beta(tmp_path):
    spec = spec_with(((4,),), 1, ())
    trainer = make_trainer(spec, tmp_path, prioritized_replay=True, per_beta=0.4)
    fill(trainer, spec, np.random.default_rng(7))
    rows = trainer.replay.size
    trainer.replay.update_priorities(np.arange(rows), np.linspace(0.1, 3.0, rows))
    trainer._step = trainer.trainer_settings.max_steps // 2
    assert trainer.per_beta() == pytest.approx(0.7)
    batch = trainer.optimizer.sample_model_batch(trainer.replay, np.random.default_rng(9), trainer.per_beta())
    pri = trainer.replay.priorities.priorities(batch.starts)
    total = trainer.replay.priorities.total
    w = [(rows * p / total) ** -0.7 for p in pri]
    assert np.allclose(batch.weights_b.numpy(), np.array(w) / max(w), rtol=1e-5)
    stats = trainer.update_once()
    assert stats[O.STAT_PER_BETA] == pytest.approx(0.7)
