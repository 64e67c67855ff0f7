"""muzero_repr's SAC head is fast_sac's: one batch, equal losses and gradients; and which loss reaches which
parameters (model losses train h; the RL loss trains h only with ``rl_gradient_to_repr``, and then only the
critic's; the actor loss never reaches the critic)."""
import numpy as np
import pytest
import torch
from mlagents.torch_utils import nn
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import TrainerSettings

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import FastSACTrainer
from mlagents_plugins.sac.losses import SACBatch

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec

L, H, NL, B, N = 6, 16, 2, 12, 3


class IdentityRepresentation(nn.Module):
    """h(o) = o: the latent is the (vector) observation itself."""

    latent_size = L

    def forward(self, inputs):
        return inputs[0]


def _fast_sac(tmp_path, spec, **hyper):
    hp = FastSACSettings(batch_size=B, buffer_size=100, buffer_init_steps=10 ** 6, compile_update=False, **hyper)
    settings = TrainerSettings(trainer_type="fast_sac", hyperparameters=hp, max_steps=10000, summary_freq=10 ** 9)
    settings.network_settings.hidden_units = H
    settings.network_settings.num_layers = NL
    trainer = FastSACTrainer("F", 10, settings, True, False, 0, str(tmp_path / "F"))
    bid = BehaviorIdentifiers.from_name_behavior_id("F?team=0")
    trainer.add_policy(bid, trainer.create_policy(bid, spec))
    return trainer.optimizer


def _muzero(tmp_path, spec, **hyper):
    trainer = make_trainer(spec, tmp_path, latent_size=L, head_hidden_units=H, head_num_layers=NL,
                           batch_size=B, **hyper)
    opt = trainer.optimizer
    opt.actor.network_body.representation = IdentityRepresentation()
    if opt.actor.network_body.target_representation is not None:  # the head reads h's target copy
        opt.actor.network_body.target_representation = IdentityRepresentation()
    return opt


def _batch(spec, prioritized, seed=0):
    """Asymmetric inputs: rewards of both signs, a terminal, a window cut short, masked actions, PER weights."""
    g = torch.Generator().manual_seed(seed)
    a = spec.action_spec
    width = int(sum(a.discrete_branches))

    def mask():
        m = (torch.rand(B, width, generator=g) > 0.3).float()
        start = 0
        for n in a.discrete_branches:  # at least one allowed action per branch
            m[:, start] = 1.0
            start += n
        return m

    discount = torch.full((B, N, 1), 0.97)
    discount[1, 0, 0] = 0.0
    discount[4, 2, 0] = 0.0
    valid = torch.ones(B, N, dtype=torch.bool)
    valid[2, 1:] = False
    valid[5, 2] = False
    return SACBatch(
        s_tm1=[torch.rand(B, L, generator=g)],
        s_t=[torch.rand(B, L, generator=g)],
        a_tm1_cont=torch.rand(B, a.continuous_size, generator=g) * 2 - 1 if a.continuous_size else None,
        a_tm1_disc=torch.stack([torch.randint(0, n, (B,), generator=g) for n in a.discrete_branches], 1)
        if width else None,
        mask_tm1=mask() if width else None,
        mask_t=mask() if width else None,
        r_t=torch.randn(B, N, 1, generator=g) * 2 + 0.5,
        discount_t=discount,
        valid_t=valid,
        weights=torch.rand(B, generator=g) + 0.2 if prioritized else None,
    )


SHARED = dict(init_entcoef=0.3, continuous_target_entropy_scale=0.7, discrete_target_entropy_scale=0.4)


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("actor_min_q", [None, False, True])
@pytest.mark.parametrize("cont,branches", [(2, ()), (0, (3, 2)), (1, (2, 4))])
def test_fast_sac_and_muzero_heads_give_equal_losses_and_gradients(tmp_path, cont, branches, actor_min_q, prioritized):
    spec = behavior_spec(((L,),), cont, branches)
    torch.manual_seed(1)
    fs = _fast_sac(tmp_path, spec, actor_min_q=actor_min_q, prioritized_replay=prioritized, **SHARED)
    mz = _muzero(tmp_path, spec, actor_min_q=actor_min_q, prioritized_replay=prioritized, **SHARED)
    # Same weights: fast_sac's actor body is an MLP on the observation, muzero's head the same MLP on h(o) = o.
    mz_actor = {n.replace("network_body.head.", "network_body._body_endoder."): p
                for n, p in mz.actor.named_parameters() if p.requires_grad}
    fs_actor = {n: p for n, p in fs.policy.actor.named_parameters() if p.requires_grad}
    assert set(mz_actor) == set(fs_actor)
    mz_q, fs_q = dict(mz.head.q_net.named_parameters()), dict(fs.head.q_net.named_parameters())
    assert set(mz_q) == set(fs_q)
    with torch.no_grad():
        for n, p in fs_actor.items():
            p.copy_(mz_actor[n])
        fs.head.q_net.load_state_dict(mz.head.q_net.state_dict())
        fs.head.q_target.load_state_dict(mz.head.q_target.state_dict())
        for t in (fs.head.temperatures, mz.head.temperatures):  # distinct per branch, so a swapped branch shows
            t.log_alpha_cont.fill_(-0.4)
            t.log_alpha_disc.copy_(torch.linspace(-1.2, 0.3, len(branches)))
    batch = _batch(spec, prioritized)
    names = sorted(fs_actor) + sorted(fs_q)
    outs, grads = [], []
    for out_fn, actor_params, q_params, temps in (
        (fs.compute_losses, fs_actor, fs_q, fs.head.temperatures),
        (mz.rl_losses, mz_actor, mz_q, mz.head.temperatures),
    ):
        torch.manual_seed(7)
        out = out_fn(batch)
        total = out.q1_loss + out.q2_loss + out.policy_loss + out.temperature_loss
        params = [actor_params[n] for n in sorted(fs_actor)] + [q_params[n] for n in sorted(fs_q)] + [
            temps.log_alpha_cont, temps.log_alpha_disc]
        outs.append(out)
        grads.append(torch.autograd.grad(total, params, allow_unused=True))
    (fo, mo), (fg, mg) = outs, grads
    # The same operations on the same numbers in the same order: equal to the last bit (no tolerance to pick).
    for field in fo._fields:
        assert torch.equal(getattr(fo, field), getattr(mo, field)), field
    for name, x, y in zip(names + ["log_alpha_cont", "log_alpha_disc"], fg, mg):
        assert (x is None) == (y is None), name
        if x is not None:
            assert torch.equal(x, y), name
    assert fo.q1_loss.item() > 0 and fo.policy_loss.item() != 0  # not a degenerate batch


def _nonzero(loss, params):
    g = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return any(x is not None and bool(torch.any(x != 0)) for x in g)


@pytest.mark.parametrize("rl_grad", [False, True])
@pytest.mark.parametrize("cont,branches", [(2, ()), (0, (3,)), (1, (2,))])
def test_each_loss_reaches_only_its_parameters(tmp_path, cont, branches, rl_grad):
    spec = behavior_spec(((4,),), cont, branches)
    # The head reads h itself here (the target copy's routing: test_muzero_target_encoder.py).
    trainer = make_trainer(spec, tmp_path, rl_gradient_to_repr=rl_grad, actor_min_q=True, head_reads_target_repr=False)
    fill(trainer, spec, np.random.default_rng(2))
    opt = trainer.optimizer
    rep = list(opt.actor.representation.parameters())
    head = opt.actor.head_parameters()
    critic = list(opt.head.q_net.parameters())
    temps = list(opt.head.temperatures.parameters())
    dynamics = [p for n, p in opt.model.named_parameters() if not n.startswith("representation.")]
    out = opt.rl_losses(trainer.sample_rl_batch())
    for q_loss in (out.q1_loss, out.q2_loss):
        assert _nonzero(q_loss, critic)
        assert _nonzero(q_loss, rep) == rl_grad  # the critic's TD loss trains h only when allowed
        assert not _nonzero(q_loss, head) and not _nonzero(q_loss, temps) and not _nonzero(q_loss, dynamics)
    assert _nonzero(out.policy_loss, head)
    assert not _nonzero(out.policy_loss, critic)  # the critic is frozen for the actor's objective
    assert not _nonzero(out.policy_loss, rep)  # the actor sees the latent detached, always
    assert not _nonzero(out.policy_loss, temps)
    assert _nonzero(out.temperature_loss, temps)
    assert not any(_nonzero(out.temperature_loss, ps) for ps in (head, critic, rep))
    total = opt.model_loss(trainer.sample_model_batch()).losses.total
    assert _nonzero(total, rep) and _nonzero(total, dynamics)  # model losses train h and the model
    assert not _nonzero(total, head) and not _nonzero(total, critic) and not _nonzero(total, temps)
