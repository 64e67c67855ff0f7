"""The SAC head reading a target copy of h (issue #52): settings, gradient routing, refresh cadence, checkpoints,
and latent self-prediction against the copy."""
import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.muzero_repr import losses
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings

from .muzero_helpers import drop_from_checkpoint, fill, make_trainer, save_checkpoint_at
from tests.builders import behavior_spec

VECTOR_CONT = (((4,),), 2, ())


def _params(module):
    return [p.detach().clone() for p in module.parameters()]


def _equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def _trainer(tmp_path, load=False, seed=0, spec_args=VECTOR_CONT, **hyper):
    spec = behavior_spec(*spec_args)
    trainer = make_trainer(spec, tmp_path, load=load, seed=seed, **hyper)
    if not load:
        fill(trainer, spec, np.random.default_rng(3))
    return trainer, spec


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize("obs_shapes,cont,branches,rl_grad,reads,grad", [
    (((4,),), 2, (), None, False, True),  # the default: the head reads h, and the critic's gradient trains it
    (((4,),), 2, (), False, False, False),  # set values win
    (((4,),), 0, (3,), None, False, True),  # discrete only: the critic's gradient trains h automatically
    (((4,),), 2, (), None, True, False),
    (((4,),), 0, (3,), None, True, False),  # reading the copy turns the automatic critic gradient off
    (((3, 20, 20),), 2, (), None, True, False),  # pixels: the same
    (((3, 20, 20),), 2, (), False, True, False),
])
def test_resolution(obs_shapes, cont, branches, rl_grad, reads, grad):
    spec = behavior_spec(obs_shapes, cont, branches)
    hp = MuZeroReprSettings(rl_gradient_to_repr=rl_grad, head_reads_target_repr=reads)
    assert hp.head_reads_target(spec.observation_specs, spec.action_spec) == reads
    assert hp.repr_gets_rl_gradient(spec.observation_specs, spec.action_spec) == grad
    assert hp.needs_target_repr(spec.observation_specs, spec.action_spec) == reads


def test_self_prediction_against_the_copy_keeps_one_without_the_head_reading_it():
    spec = behavior_spec(((4,),), 0, (3,))
    hp = MuZeroReprSettings(train_repr_prediction=True, repr_prediction_target="target")
    assert not hp.head_reads_target(spec.observation_specs, spec.action_spec)
    assert hp.needs_target_repr(spec.observation_specs, spec.action_spec)


@pytest.mark.parametrize("field,value,needle", [
    ("repr_prediction_target", "ema", "'online' or 'target'"),
    ("repr_prediction_loss", "l1", "'cosine' or 'mse'"),
    ("head_repr_update_tau", 1.5, "head_repr_update_tau"),
    ("head_repr_update_period", 0, "head_repr_update_period"),
    ("head_reads_target_repr", None, "head_reads_target_repr"),
])
def test_bad_values_name_the_field(field, value, needle):
    with pytest.raises(TrainerConfigError, match=field) as err:
        MuZeroReprSettings(**{field: value})
    assert needle in str(err.value) and repr(value) in str(err.value)


def test_reading_the_copy_with_the_critic_gradient_is_refused():
    with pytest.raises(TrainerConfigError, match="head_reads_target_repr") as err:
        MuZeroReprSettings(head_reads_target_repr=True, rl_gradient_to_repr=True)
    assert "rl_gradient_to_repr" in str(err.value)


# ---------------------------------------------------------------- gradient routing
def _reaches(loss, params):
    params = [p for p in params if p.requires_grad]
    if not params:
        return False
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return any(g is not None and bool(torch.any(g != 0)) for g in grads)


def test_head_losses_stay_out_of_both_encoders_and_model_losses_train_h(tmp_path):
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True)
    opt = trainer.optimizer
    body = opt.actor.network_body
    assert body.read_target and body.target_representation is not None
    online, copy = list(body.representation.parameters()), list(body.target_representation.parameters())
    assert not any(p.requires_grad for p in copy)  # nothing but the refresh moves the copy
    out = opt.rl_losses(trainer.sample_rl_batch())
    for loss in (out.q1_loss, out.q2_loss, out.policy_loss):
        assert loss.requires_grad
        assert not _reaches(loss, online)
    assert _reaches(out.q1_loss, list(opt.head.q_net.parameters()))
    assert _reaches(out.policy_loss, opt.actor.head_parameters())
    total = opt.model_loss(trainer.sample_model_batch()).losses.total
    assert _reaches(total, online)


def test_the_head_reads_the_copy_not_h(tmp_path):
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True)
    opt = trainer.optimizer
    body = opt.actor.network_body
    with torch.no_grad():  # make h and its copy differ
        for p in body.representation.parameters():
            p.add_(0.3)
    obs = [torch.rand(5, 4, generator=torch.Generator().manual_seed(0))]
    assert torch.equal(body.latent(obs), body.target_representation(obs))
    assert not torch.allclose(body.latent(obs), body.representation(obs))
    # the SAC losses see the copy's latent for both the start and the bootstrap observations
    batch = trainer.sample_rl_batch(rng=np.random.default_rng(5))
    seen = {}
    head_losses = opt.head.compute_losses

    def spy(actor_fn, latent_batch):
        seen["s_tm1"], seen["s_t"] = latent_batch.s_tm1[0], latent_batch.s_t[0]
        return head_losses(actor_fn, latent_batch)

    opt.head.compute_losses = spy
    opt.rl_losses(batch)
    with torch.no_grad():
        assert torch.allclose(seen["s_tm1"], body.target_representation(batch.s_tm1), atol=1e-6)
        assert torch.allclose(seen["s_t"], body.target_representation(batch.s_t), atol=1e-6)


# ---------------------------------------------------------------- refresh cadence
def test_hard_copy_every_period_model_updates(tmp_path):
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True, head_repr_update_period=3, head_repr_update_tau=1.0,
                          model_update_interval=1)
    body = trainer.optimizer.actor.network_body
    start = _params(body.target_representation)
    assert _equal(start, _params(body.representation))
    for n in (1, 2):
        trainer.update_once()
        assert trainer.optimizer.num_model_updates == n
        assert _equal(_params(body.target_representation), start)  # holds still
        assert not _equal(_params(body.representation), start)  # while h moves
    trainer.update_once()
    assert _equal(_params(body.target_representation), _params(body.representation))
    copied = _params(body.target_representation)
    trainer.update_once()
    assert _equal(_params(body.target_representation), copied)


def test_ema_refresh(tmp_path):
    tau = 0.25
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True, head_repr_update_period=2, head_repr_update_tau=tau)
    body = trainer.optimizer.actor.network_body
    before = _params(body.target_representation)
    trainer.update_once()
    assert _equal(_params(body.target_representation), before)
    trainer.update_once()
    h = _params(body.representation)
    expected = [c * (1 - tau) + o * tau for c, o in zip(before, h)]
    for got, want, old in zip(_params(body.target_representation), expected, before):
        assert torch.allclose(got, want, atol=1e-6)
    assert not _equal(_params(body.target_representation), h)


def test_model_updates_every_k_head_updates_count_for_the_cadence(tmp_path):
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True, head_repr_update_period=2, model_update_interval=3)
    for _ in range(4):  # head updates 0..3: model updates at 0 and 3
        trainer.update_once()
        trainer.num_updates += 1
    assert trainer.optimizer.num_model_updates == 2
    body = trainer.optimizer.actor.network_body
    assert _equal(_params(body.target_representation), _params(body.representation))


def test_normaliser_statistics_are_copied_on_refresh(tmp_path):
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True, head_repr_update_period=1, normalize=True)
    body = trainer.optimizer.actor.network_body
    online = [b.clone() for b in body.representation.buffers()]
    assert online and any(bool(torch.any(b != 0)) for b in online)
    trainer.update_once()
    for got, want in zip(body.target_representation.buffers(), body.representation.buffers()):
        assert torch.equal(got, want)


# ---------------------------------------------------------------- checkpoints
def test_checkpoint_restores_the_copy_and_the_cadence(tmp_path):
    # a model update on every update_once (the counted cadence below), whatever the automatic interval
    hyper = dict(head_reads_target_repr=True, head_repr_update_period=3, model_update_interval=1)
    trainer, spec = _trainer(tmp_path, **hyper)
    for _ in range(4):  # refreshed at 3, h moved at 4: copy != h
        trainer.update_once()
    body = trainer.optimizer.actor.network_body
    copy, h = _params(body.target_representation), _params(body.representation)
    assert not _equal(copy, h)
    save_checkpoint_at(trainer)
    loaded = make_trainer(spec, tmp_path, load=True, seed=5, **hyper)
    lbody = loaded.optimizer.actor.network_body
    assert _equal(_params(lbody.target_representation), copy)  # the copy, not the loaded h
    assert _equal(_params(lbody.representation), h)
    assert loaded.optimizer.num_model_updates == 4
    fill(loaded, spec, np.random.default_rng(4))
    loaded.update_once()  # update 5: no refresh
    assert _equal(_params(lbody.target_representation), copy)
    loaded.update_once()  # update 6: refresh on the saved cadence
    assert _equal(_params(lbody.target_representation), _params(lbody.representation))


def test_checkpoint_without_a_copy_gives_one_from_the_loaded_h(tmp_path):
    trainer, spec = _trainer(tmp_path, head_reads_target_repr=False)
    assert trainer.optimizer.actor.network_body.target_representation is None
    for _ in range(3):
        trainer.update_once()
    h = _params(trainer.optimizer.actor.network_body.representation)
    save_checkpoint_at(trainer)
    # drop the counter too, as a checkpoint written before it existed (release 0.1.0) lacks it
    drop_from_checkpoint(tmp_path / "B" / "checkpoint.pt", "network_body.model_updates")
    loaded = make_trainer(spec, tmp_path, load=True, seed=5, head_reads_target_repr=True)
    lbody = loaded.optimizer.actor.network_body
    assert _equal(_params(lbody.representation), h)
    assert _equal(_params(lbody.target_representation), h)
    assert int(lbody.target_synced) == 1


# ---------------------------------------------------------------- self-prediction against the copy
def test_self_prediction_targets_come_from_the_copy(tmp_path):
    trainer, _ = _trainer(tmp_path, head_reads_target_repr=True, train_repr_prediction=True,
                          repr_prediction_target="target", repr_prediction_loss="mse")
    opt = trainer.optimizer
    body = opt.actor.network_body
    with torch.no_grad():
        for p in body.representation.parameters():
            p.mul_(1.7).add_(0.1)
    batch = trainer.sample_model_batch(rng=np.random.default_rng(9))
    from_copy = opt.model_loss(batch).losses.consistency_k
    opt.hyperparameters.repr_prediction_target = "online"
    from_h = opt.model_loss(batch).losses.consistency_k
    assert not torch.allclose(from_copy, from_h)
    body.refresh_target(1.0)
    opt.hyperparameters.repr_prediction_target = "target"
    assert torch.allclose(opt.model_loss(batch).losses.consistency_k, from_h)
    assert _reaches(opt.model_loss(batch).losses.total, list(body.representation.parameters()))


def test_latent_mse_by_hand():
    pred = torch.tensor([[[1.0, 2.0, 0.0]], [[0.5, -1.0, 3.0]]], requires_grad=True)  # [B=2, K=1, D=3]
    target = torch.tensor([[[0.0, 2.0, 1.0]], [[0.5, 1.0, 0.0]]], requires_grad=True)
    got = losses.latent_mse(pred, target)
    assert got.shape == (2, 1)
    assert torch.allclose(got, torch.tensor([[2.0 / 3.0], [13.0 / 3.0]]))
    got.sum().backward()
    assert target.grad is None or not torch.any(target.grad != 0)  # the target branch takes no gradient
    assert torch.allclose(pred.grad, 2.0 / 3.0 * (pred - target).detach())
    with pytest.raises(ValueError):
        losses.latent_mse(pred, target[..., :2])
