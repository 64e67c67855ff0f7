"""``losses.sac_losses`` checks what it is given: wrong shapes name the argument (or the callable) at fault."""
import pytest
import torch

from mlagents_plugins.sac import losses

B, N, C, BRANCHES = 4, 2, 2, (3, 2)
A = sum(BRANCHES)


def _actor(state, mask):
    g = torch.Generator().manual_seed(0)
    lp_d = torch.log_softmax(torch.randn(B, A, generator=g), dim=-1)
    return torch.tanh(torch.randn(B, C, generator=g)), torch.randn(B, generator=g), lp_d


def _critic(state, a):
    return torch.ones(B, 1, A) * state, torch.ones(B, 1, A) * 2 * state


def _frozen(state, a, first_only):
    q1, q2 = _critic(state, a)
    return q1, None if first_only else q2


def _kwargs(**override):
    kw = dict(
        s_tm1=torch.tensor(1.0), a_tm1_cont=torch.zeros(B, C),
        a_tm1_disc=torch.zeros(B, len(BRANCHES), dtype=torch.long),
        mask_tm1=torch.ones(B, A), r_t=torch.zeros(B, N, 1), discount_t=torch.full((B, N, 1), 0.9),
        valid_t=torch.ones(B, N, dtype=torch.bool), s_t=torch.tensor(1.5), mask_t=torch.ones(B, A),
        log_alpha_cont=torch.zeros(1, requires_grad=True), log_alpha_disc=torch.zeros(2, requires_grad=True),
        target_entropy_cont=-2.0, discrete_entropy_scale=0.2, branches=BRANCHES, cont_size=C, actor_min_q=True,
        weights=None,
    )
    kw.update(override)
    return kw


def _sac_losses(actor, critic, frozen, target, **kw):
    """``losses.sac_losses`` on ``_kwargs()``'s fields, split into its typed arguments."""
    nets = losses.SACNetworks(actor, critic, frozen, target, kw.pop("log_alpha_cont"), kw.pop("log_alpha_disc"))
    settings = losses.SACLossSettings(**{f: kw.pop(f) for f in losses.SACLossSettings._fields if f in kw})
    return losses.sac_losses(nets, losses.SACBatch(**kw), settings)


def test_well_formed_inputs_give_finite_losses():
    out = _sac_losses(_actor, _critic, _frozen, _critic, **_kwargs())
    assert all(torch.isfinite(getattr(out, f)).all() for f in out._fields)


@pytest.mark.parametrize("name,value", [
    ("discount_t", torch.zeros(B, N + 1, 1)),
    ("valid_t", torch.ones(B, N + 1, dtype=torch.bool)),
    ("a_tm1_cont", torch.zeros(B, C + 1)),
    ("a_tm1_disc", torch.zeros(B, 1, dtype=torch.long)),
    ("mask_tm1", torch.ones(B, A - 1)),
    ("mask_t", torch.ones(B + 1, A)),
    ("weights", torch.ones(B + 1)),
    ("log_alpha_disc", torch.zeros(3)),
])
def test_wrong_input_shape_names_the_argument(name, value):
    with pytest.raises(ValueError, match=name):
        _sac_losses(_actor, _critic, _frozen, _critic, **_kwargs(**{name: value}))


def test_wrong_callable_output_names_the_callable():
    def short_critic(state, a):
        return torch.ones(B, 1, A - 1), torch.ones(B, 1, A - 1)

    with pytest.raises(ValueError, match=r"target_critic\(s_t\) Q1"):
        _sac_losses(_actor, _critic, _frozen, short_critic, **_kwargs())

    def no_disc_actor(state, mask):
        cont, lp_c, _ = _actor(state, mask)
        return cont, lp_c, None

    with pytest.raises(ValueError, match=r"actor\(s_t\) must return discrete log-probabilities"):
        _sac_losses(no_disc_actor, _critic, _frozen, _critic, **_kwargs())


def test_entropy_reward_false_bootstraps_the_expected_q_alone():
    """Without the entropy reward the target is ``r + discount * E_pi[min Q]`` whatever the temperatures; with it
    the entropy terms enter.  Here ``min(Q1, Q2)(s_t) = Q1 = 1.5`` for every action, so ``E_pi[min Q] = 1.5`` for
    any policy, the window has 2 zero rewards with discount 0.9, and ``Q1(s_tm1) = 1``: q1_loss is
    ``0.5 * (1 - 0.81 * 1.5) ** 2``."""
    expected = 0.5 * (1.0 - 0.81 * 1.5) ** 2

    def actor(state, mask):  # a policy per branch (each branch's probabilities sum to 1)
        cont, lp_c, lp_d = _actor(state, mask)
        return cont, lp_c, torch.cat([torch.log_softmax(x, -1) for x in lp_d.split(list(BRANCHES), -1)], -1)

    for log_alpha in (0.0, 1.3):
        kw = _kwargs(log_alpha_cont=torch.full((1,), log_alpha, requires_grad=True),
                     log_alpha_disc=torch.tensor([log_alpha, -log_alpha], requires_grad=True))
        plain = _sac_losses(actor, _critic, _frozen, _critic, entropy_reward=False, **kw)
        assert abs(plain.q1_loss.item() - expected) < 1e-6
        soft = _sac_losses(actor, _critic, _frozen, _critic, **kw)
        assert abs(soft.q1_loss.item() - expected) > 1e-3
        # The actor and temperature losses keep the entropy terms either way.
        assert torch.allclose(plain.policy_loss, soft.policy_loss)
        assert torch.allclose(plain.temperature_loss, soft.temperature_loss)
