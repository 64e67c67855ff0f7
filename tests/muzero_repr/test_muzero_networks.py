"""Learned-model networks: shapes for vector and visual observations, gradient scaling; batch draws."""
import pytest
import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionSpec, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.common.image_augment import random_shift
from mlagents_plugins.muzero_repr.networks import MuZeroModel, encode_actions


def vec_spec(n):
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vec")


def vis_spec(c, h, w):
    props = (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
             DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
    return ObservationSpec((c, h, w), props, ObservationType.DEFAULT, "cam")


def make_model(specs, action_spec, support=3, game_over=True, consistency=True):
    torch.manual_seed(0)
    return MuZeroModel(specs, action_spec, NetworkSettings(hidden_units=16, num_layers=1), latent_size=8,
                       hidden_units=16, num_layers=1, support_size=support, game_over_head=game_over,
                       consistency_head=consistency)


@pytest.mark.parametrize("support", [0, 3])
def test_unroll_shapes_vector_and_visual(support):
    spec = ActionSpec(2, (3,))
    model = make_model([vec_spec(5), vis_spec(3, 20, 20)], spec, support=support)
    B, K = 4, 3
    obs = [torch.randn(B, 5), torch.rand(B, 3, 20, 20)]
    acts = encode_actions(spec, torch.randn(B, K, 2), torch.randint(0, 3, (B, K, 1)))
    assert acts.shape == (B, K, 5)
    outs = model.unroll(obs, acts, 0.5)
    assert len(outs) == K + 1
    vshape = (B,) if support == 0 else (B, 2 * support + 1)
    for k, o in enumerate(outs):
        assert o.latent.shape == (B, 8)
        assert float(o.latent.detach().min()) >= 0.0 and float(o.latent.detach().max()) <= 1.0 + 1e-6
        assert o.value.shape == vshape
        assert o.policy.shape == (B, 5)
        assert o.game_over_logit.shape == (B,)
        assert (o.reward is None) == (k == 0)
        if k > 0:
            assert o.reward.shape == vshape
    assert model.consistency_online(outs[1].latent).shape == (B, 16)


def test_latent_scaling_reaches_h_and_every_dynamics_step():
    """``latent_scaling: tanh``: h's output and each unrolled latent are tanh of their linear layers' outputs
    (negative values appear, which min-max never gives), in the step-by-step and the stacked unroll alike."""
    from mlagents_plugins.muzero_repr.networks import Representation

    spec = ActionSpec(2, ())
    torch.manual_seed(0)
    rep = Representation([vec_spec(5)], NetworkSettings(hidden_units=16, num_layers=1), 8, "tanh")
    model = MuZeroModel([vec_spec(5)], spec, NetworkSettings(hidden_units=16, num_layers=1), latent_size=8,
                        hidden_units=16, num_layers=1, support_size=3, game_over_head=False,
                        consistency_head=False, representation=rep)
    assert model.scaling == "tanh"
    B, K = 6, 3
    obs = [torch.randn(B, 5) * 3.0]
    acts = torch.randn(B, K, 2)
    with torch.no_grad():
        s0 = rep(obs)
        assert torch.allclose(s0, torch.tanh(rep.out(rep.body(obs)[0])))
        outs = model.unroll(obs, acts, 0.5)
        s1 = torch.tanh(model.dynamics_latent(model.dynamics_trunk(torch.cat([s0, acts[:, 0]], dim=-1))))
        assert torch.allclose(outs[1].latent, s1, atol=1e-6)
        stacked = model.unroll_stacked(obs, acts, 0.5)
    assert torch.allclose(stacked.latent_k, torch.stack([o.latent for o in outs], dim=1), atol=1e-6)
    assert float(stacked.latent_k.min()) < 0.0 and float(stacked.latent_k.abs().max()) < 1.0


@pytest.mark.parametrize("support,K", [(0, 3), (3, 3), (3, 0)])
def test_stacked_unroll_equals_the_step_by_step_unroll_in_values_and_gradients(support, K):
    """The optimizer's ``unroll_stacked`` (f and the reward head on all steps at once) against ``unroll`` (one
    step at a time): the same predictions and the same gradients of a loss that weighs every output differently."""
    spec = ActionSpec(2, (3,))
    model = make_model([vec_spec(5)], spec, support=support)
    torch.manual_seed(2)
    B = 6
    obs = [torch.randn(B, 5) * torch.arange(1, 6.0)]
    acts = encode_actions(spec, torch.randn(B, K, 2), torch.randint(0, 3, (B, K, 1)))
    w_value = torch.randn(K + 1, *((2 * support + 1,) if support else ()))
    w_reward = torch.randn(max(K, 1), *((2 * support + 1,) if support else ()))
    w_policy = torch.randn(K + 1, 5)
    w_latent = torch.randn(K + 1, 8)

    def grads(loss):
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]

    outs = model.unroll(obs, acts, 0.5)
    value = torch.stack([o.value for o in outs], 1)
    policy = torch.stack([o.policy for o in outs], 1)
    latent = torch.stack([o.latent for o in outs], 1)
    game_over = torch.stack([o.game_over_logit for o in outs], 1)
    reward = torch.stack([o.reward for o in outs[1:]], 1) if K else None
    loss = (value * w_value).sum() + (policy * w_policy).sum() + (latent * w_latent).sum() + (game_over ** 2).sum()
    if K:
        loss = loss + (reward * w_reward).sum()
    want = grads(loss)

    got = model.unroll_stacked(obs, acts, 0.5)
    for name, a, b in (("value", got.value_k, value), ("policy", got.policy_k, policy), ("latent", got.latent_k, latent),
                       ("game over", got.game_over_logit_k, game_over)):
        assert a.shape == b.shape, name
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), name
    assert (got.reward_k is None) == (K == 0)
    loss = ((got.value_k * w_value).sum() + (got.policy_k * w_policy).sum() + (got.latent_k * w_latent).sum()
            + (got.game_over_logit_k ** 2).sum())
    if K:
        assert got.reward_k.shape == reward.shape
        assert torch.allclose(got.reward_k, reward, rtol=1e-5, atol=1e-6)
        loss = loss + (got.reward_k * w_reward).sum()
    for g, w in zip(grads(loss), want):
        assert torch.allclose(g, w, rtol=1e-4, atol=1e-6)
    assert any(float(w.abs().sum()) > 0 for w in want)


def _grad_wrt_repr(model, obs, acts, factor):
    model.zero_grad()
    outs = model.unroll(obs, acts, factor)
    # Loss only on the last step's reward: its gradient reaches h through K-1 scaled latents.
    outs[-1].reward.sum().backward()
    return model.representation.out.weight.grad.clone(), model.dynamics_reward.weight.grad.clone()


def test_recurrent_gradient_scaling_is_applied():
    spec = ActionSpec(1, ())
    model = make_model([vec_spec(3)], spec, support=0, game_over=False, consistency=False)
    torch.manual_seed(1)
    obs = [torch.randn(6, 3)]
    acts = torch.randn(6, 3, 1)  # K = 3 -> two scaled latents between h and the last reward
    g1_repr, g1_head = _grad_wrt_repr(model, obs, acts, 1.0)
    g5_repr, g5_head = _grad_wrt_repr(model, obs, acts, 0.5)
    assert g1_repr.abs().sum() > 0
    # Scaled twice (at s_1 and s_2): the representation's gradient is 0.25 of the unscaled one ...
    assert torch.allclose(g5_repr, 0.25 * g1_repr, rtol=1e-4, atol=1e-7)
    # ... while the head reading the last step directly is unaffected.
    assert torch.allclose(g5_head, g1_head, rtol=1e-5, atol=1e-7)


def test_random_draws_follow_the_generator_not_the_threads_default_device():
    """Under ``--torch-device cuda`` the trainer thread's default device is the GPU while the run's generator is a
    CPU one; each draw must use the generator's device (found on a GPU: "Expected a 'cuda' device type for
    generator but found 'cpu'").  The "meta" default device stands in for the GPU here: the draws must give the
    same values as under the CPU default."""
    from mlagents_envs.base_env import ActionSpec

    from mlagents_plugins.muzero_repr.batch import random_actions

    obs = torch.arange(3 * 2 * 4 * 6, dtype=torch.float32).reshape(3, 2, 4, 6)
    spec = ActionSpec(2, (3, 2))
    expected_shift = random_shift(obs, 2, generator=torch.Generator().manual_seed(5))
    expected_actions = random_actions(spec, 4, 3, torch.Generator().manual_seed(5), torch.device("cpu"))
    with torch.device("meta"):
        shifted = random_shift(obs, 2, generator=torch.Generator(device="cpu").manual_seed(5))
        actions = random_actions(spec, 4, 3, torch.Generator(device="cpu").manual_seed(5), torch.device("cpu"))
    assert shifted.device.type == "cpu" and torch.equal(shifted, expected_shift)
    assert actions.shape == (4, 3, 2 + 3 + 2) and torch.equal(actions, expected_actions)
