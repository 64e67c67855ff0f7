"""CrossQ's and XQC's critic options of fast_sac (issue #56): ``critic_batch_renorm`` (batch renormalization, no
target critics, the joint critic pass), ``critic_hidden_units``, ``adam_beta1``, ``actor_update_every``.

The batch renormalization is checked against a float64 numpy loop written here from Ioffe 2017's Algorithm 1 (on
inputs whose features differ in mean and spread, past the warm-up, with both clips engaged); the joint pass's
gradients against a critic loss assembled by hand with the targets as constants; the running statistics through a
checkpoint and ``--resume`` bit for bit; the ONNX export stays the plain actor.
"""
import copy

import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionSpec

from mlagents_plugins.common import batch_renorm
from mlagents_plugins.common.batch_renorm import BatchRenorm, RenormedSequential
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.sac import losses
from mlagents_plugins.sac.networks import TwinQ
from tests.builders import behavior_spec, trajectory
from tests.fast_sac.helpers import make_trainer

CROSSQ = dict(critic_batch_renorm=True, adam_beta1=0.5, actor_update_every=3)


# ----------------------------------------------------------------------------------- batch renormalization math
def _reference_brn(batches, momentum, warmup, scale, bias, eps=1e-3, rmax=3.0, dmax=5.0):
    """Ioffe 2017, Algorithm 1 in float64: each batch's outputs and the running statistics after it."""
    mean = np.zeros(batches[0].shape[1])
    var = np.ones(batches[0].shape[1])
    outs = []
    for step, x in enumerate(batches):
        mu_b = x.mean(axis=0)
        var_b = ((x - mu_b) ** 2).mean(axis=0)
        sigma_b = np.sqrt(var_b + eps)
        sigma = np.sqrt(var + eps)
        if step >= warmup:
            r = np.clip(sigma_b / sigma, 1.0 / rmax, rmax)
            d = np.clip((mu_b - mean) / sigma, -dmax, dmax)
        else:
            r, d = np.ones_like(mu_b), np.zeros_like(mu_b)
        outs.append(((x - mu_b) / sigma_b * r + d) * scale + bias)
        mean = mean + momentum * (mu_b - mean)
        var = var + momentum * (var_b - var)
    return outs, mean, var


def _asymmetric_batches(n, rows=13, seed=0):
    rng = np.random.default_rng(seed)
    centre = np.array([4.0, -0.5, 0.0, 12.0, 0.3])
    spread = np.array([0.05, 2.0, 9.0, 0.7, 1.0])
    # later batches drift, so the running statistics lag them by more than the clips allow
    return [(rng.standard_normal((rows, 5)) * spread * (1 + 0.5 * k) + centre * (1 + 0.2 * k)).astype(np.float32)
            for k in range(n)]


def test_batch_renorm_matches_a_float64_reference_through_warmup_and_clips():
    layer = BatchRenorm(5, momentum=0.3, warmup_steps=2)
    with torch.no_grad():
        layer.scale.copy_(torch.tensor([1.5, 0.5, -1.0, 2.0, 1.0]))
        layer.bias.copy_(torch.tensor([0.1, -0.2, 0.0, 3.0, -1.0]))
    batches = _asymmetric_batches(6)
    got = [layer(torch.from_numpy(x), batch_stats=True).detach().numpy() for x in batches]
    want, mean, var = _reference_brn([x.astype(np.float64) for x in batches], 0.3, 2,
                                     layer.scale.detach().double().numpy(), layer.bias.detach().double().numpy())
    # (that r and d reach their clips on these batches: test_batch_renorm_clips_engage_on_these_inputs)
    for g, w in zip(got, want):
        # float32 inputs up to ~40 with spreads down to 0.05: a relative 1e-5 of the normalized values, and values
        # pushed through the d clip (up to 5 x scale + bias ~ 13) keep absolute rounding below 1e-4
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(layer.running_mean.numpy(), mean, rtol=1e-5)
    np.testing.assert_allclose(layer.running_var.numpy(), var, rtol=1e-4)
    assert int(layer.steps) == 6
    # with running statistics: (x - mean) / sqrt(var + eps), affine, nothing updated
    x = batches[0]
    before = (layer.running_mean.clone(), layer.running_var.clone(), int(layer.steps))
    out = layer(torch.from_numpy(x)).detach().numpy()
    ref = (x - layer.running_mean.numpy()) / np.sqrt(layer.running_var.numpy() + 1e-3)
    np.testing.assert_allclose(out, ref * layer.scale.detach().numpy() + layer.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert torch.equal(before[0], layer.running_mean) and torch.equal(before[1], layer.running_var)
    assert before[2] == int(layer.steps)


def test_batch_renorm_clips_engage_on_these_inputs():
    """The reference test above is only strong if r and d hit their clips; check that on the same batches."""
    batches = [x.astype(np.float64) for x in _asymmetric_batches(6)]
    mean, var = np.zeros(5), np.ones(5)
    hit_r = hit_d = False
    for step, x in enumerate(batches):
        mu_b, var_b = x.mean(axis=0), x.var(axis=0)
        if step >= 2:
            hit_r |= bool((np.sqrt(var_b + 1e-3) / np.sqrt(var + 1e-3) > 3.0).any()
                          or (np.sqrt(var_b + 1e-3) / np.sqrt(var + 1e-3) < 1 / 3.0).any())
            hit_d |= bool((np.abs(mu_b - mean) / np.sqrt(var + 1e-3) > 5.0).any())
        mean, var = mean + 0.3 * (mu_b - mean), var + 0.3 * (var_b - var)
    assert hit_r and hit_d


def test_batch_renorm_r_and_d_carry_no_gradient():
    """Past the warm-up the gradient flows through the batch mean and spread only (r, d are constants):
    d/dx of sum(w * y) equals that of the same formula with r and d frozen at their values."""
    layer = BatchRenorm(5, momentum=0.3, warmup_steps=1)
    batches = _asymmetric_batches(3, seed=2)
    layer(torch.from_numpy(batches[0]), batch_stats=True)
    state = copy.deepcopy(layer.state_dict())
    x = torch.from_numpy(batches[1]).double().requires_grad_(True)
    w = torch.linspace(-1.0, 2.0, 5 * 13, dtype=torch.float64).reshape(13, 5)
    layer.double()
    (layer(x, batch_stats=True) * w).sum().backward()
    layer.load_state_dict(state)
    x2 = torch.from_numpy(batches[1]).double().requires_grad_(True)
    mu_b = x2.mean(0)
    var_b = (x2 - mu_b).square().mean(0)
    sigma_b = torch.sqrt(var_b + 1e-3)
    sigma = torch.sqrt(layer.running_var.double() + 1e-3)
    r = (sigma_b / sigma).clamp(1 / 3.0, 3.0).detach()
    d = ((mu_b - layer.running_mean.double()) / sigma).clamp(-5.0, 5.0).detach()
    ((((x2 - mu_b) / sigma_b * r + d) * layer.scale.double() + layer.bias.double()) * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-9, atol=1e-12)
    # and r, d not frozen would give another gradient (the check can fail)
    x3 = torch.from_numpy(batches[1]).double().requires_grad_(True)
    mu3 = x3.mean(0)
    s3 = torch.sqrt((x3 - mu3).square().mean(0) + 1e-3)
    r3 = (s3 / sigma).clamp(1 / 3.0, 3.0)
    d3 = ((mu3 - layer.running_mean.double()) / sigma).clamp(-5.0, 5.0)
    ((((x3 - mu3) / s3 * r3 + d3) * layer.scale.double() + layer.bias.double()) * w).sum().backward()
    assert not np.allclose(x3.grad.numpy(), x2.grad.numpy(), atol=1e-6)


def test_renormed_sequential_places_a_layer_before_every_linear_and_before_the_heads():
    torch.manual_seed(3)
    seq = torch.nn.Sequential(torch.nn.Linear(6, 9), torch.nn.SiLU(), torch.nn.Linear(9, 4), torch.nn.SiLU())
    wrapped = RenormedSequential(copy.deepcopy(seq), momentum=0.1, warmup_steps=10)
    assert [m.num_features for m in wrapped.renorm] == [6, 9, 4]
    # the linear layers keep ML-Agents' names; the renormalization layers sit under "renorm"
    names = [k for k in wrapped.state_dict() if not k.startswith("renorm.")]
    assert names == list(seq.state_dict())
    with torch.no_grad():
        for i, m in enumerate(wrapped.renorm):
            m.scale.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.5, 0.5)
    x = torch.randn(7, 6) * torch.tensor([0.1, 5.0, 1.0, -2.0, 0.3, 8.0]) + 2.0
    probe = copy.deepcopy(wrapped)
    got = wrapped(x, batch_stats=True)
    n0, n1, n2 = probe.renorm
    want = n2(torch.nn.functional.silu(seq[2](n1(torch.nn.functional.silu(seq[0](n0(x, True))), True))), True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    for a, b in zip(wrapped.renorm, probe.renorm):  # the same updates of the running statistics
        assert torch.equal(a.running_mean, b.running_mean) and torch.equal(a.running_var, b.running_var)
        assert int(a.steps) == 1


# ----------------------------------------------------------------------------------- the joint critic pass
def _renorm_twin(seed=0, momentum=0.2) -> TwinQ:
    torch.manual_seed(seed)
    spec = behavior_spec(((4,),), cont=2)
    return TwinQ(["extrinsic"], spec.observation_specs, NetworkSettings(hidden_units=12, num_layers=2),
                 ActionSpec(2, ()), batch_renorm=(momentum, 100))


def _joint_batch(b=6, seed=5):
    g = torch.Generator().manual_seed(seed)
    s_tm1 = [torch.randn(b, 4, generator=g) * torch.tensor([0.5, 2.0, 1.0, 4.0]) + 1.0]
    s_t = [torch.randn(b, 4, generator=g) * 3.0 - 2.0]  # another distribution than s_tm1
    return losses.SACBatch(
        s_tm1=s_tm1, a_tm1_cont=torch.rand(b, 2, generator=g) * 2 - 1, a_tm1_disc=None, mask_tm1=None,
        r_t=torch.randn(b, 2, 1, generator=g), discount_t=torch.full((b, 2, 1), 0.9),
        valid_t=torch.tensor([[True, True]] * (b - 2) + [[True, False]] * 2), s_t=s_t, mask_t=None,
    )


def _fixed_actor(a_t):
    def actor(obs, mask):
        b = obs[0].shape[0]
        return a_t[:b], torch.linspace(-1.0, 1.0, b), None
    return actor


def test_joint_pass_routes_the_critic_gradient_through_the_taken_half_only():
    twin = _renorm_twin()
    batch = _joint_batch()
    a_t = torch.tensor([[0.3, -0.8], [0.9, 0.1], [-0.2, 0.4], [0.0, 0.7], [-0.9, -0.1], [0.5, 0.5]])
    settings = losses.SACLossSettings(branches=[], cont_size=2, target_entropy_cont=-2.0, discrete_entropy_scale=0.2,
                                      actor_min_q=False, entropy_reward=True, joint_critic=True)
    alpha = torch.tensor([0.3]).log()
    reference = copy.deepcopy(twin)
    nets = losses.SACNetworks(_fixed_actor(a_t), twin, twin.frozen, None, alpha, torch.zeros(0))
    out = losses.sac_losses(nets, batch, settings, update_actor=False)
    (out.q1_loss + out.q2_loss).backward()

    # By hand: one pass over [s_tm1; s_t] in training mode, targets from its second half as constants
    obs = [torch.cat([batch.s_tm1[0], batch.s_t[0]])]
    q1, q2 = reference(obs, torch.cat([batch.a_tm1_cont, a_t]))
    b = 6
    with torch.no_grad():
        v = torch.minimum(q1[b:, :, 0], q2[b:, :, 0]) - 0.3 * torch.linspace(-1.0, 1.0, b).unsqueeze(-1)
        y, _ = losses.n_step_targets(batch.r_t, batch.discount_t, batch.valid_t, v)
    loss = 0.5 * ((q1[:b, :, 0] - y) ** 2).mean() + 0.5 * ((q2[:b, :, 0] - y) ** 2).mean()
    loss.backward()
    params, ref_params = dict(twin.named_parameters()), dict(reference.named_parameters())
    for name, p in params.items():
        torch.testing.assert_close(p.grad, ref_params[name].grad, rtol=1e-5, atol=1e-7, msg=name)
    # the running statistics saw both halves: once each, as in the hand-made pass
    for name, buf in twin.named_buffers():
        torch.testing.assert_close(buf, dict(reference.named_buffers())[name], rtol=0, atol=0)

    # had the bootstrap half carried gradient, the critics' gradients would differ (the check can fail)
    leaky = copy.deepcopy(twin)
    leaky.zero_grad()
    lq1, lq2 = leaky(obs, torch.cat([batch.a_tm1_cont, a_t]))
    lv = torch.minimum(lq1[b:, :, 0], lq2[b:, :, 0]) - 0.3 * torch.linspace(-1.0, 1.0, b).unsqueeze(-1)
    ly, _ = losses.n_step_targets(batch.r_t, batch.discount_t, batch.valid_t, lv)
    (0.5 * ((lq1[:b, :, 0] - ly) ** 2).mean() + 0.5 * ((lq2[:b, :, 0] - ly) ** 2).mean()).backward()
    w = "q1.network_body._body_endoder.seq_layers.0.weight"
    assert not torch.allclose(dict(leaky.named_parameters())[w].grad, params[w].grad, atol=1e-6)


def test_joint_pass_gives_no_gradient_to_the_bootstrap_actions_and_the_actor_reads_running_statistics():
    twin = _renorm_twin(seed=2)
    batch = _joint_batch(seed=8)
    a_t = (torch.rand(6, 2) * 2 - 1).requires_grad_(True)
    a_pi = (torch.rand(6, 2) * 2 - 1).requires_grad_(True)

    def actor(obs, mask):  # the bootstrap call gets a_t, the actor-loss call a_pi
        return (a_t if obs[0] is batch.s_t[0] else a_pi), torch.zeros(obs[0].shape[0]), None

    settings = losses.SACLossSettings(branches=[], cont_size=2, target_entropy_cont=-2.0, discrete_entropy_scale=0.2,
                                      actor_min_q=False, entropy_reward=True, joint_critic=True)
    nets = losses.SACNetworks(actor, twin, twin.frozen, None, torch.zeros(1), torch.zeros(0))
    out = losses.sac_losses(nets, batch, settings)
    stats_after_pass = [buf.clone() for buf in twin.buffers()]
    out.total().backward()
    assert a_t.grad is None  # the bootstrap actions are read without gradient
    assert a_pi.grad is not None and a_pi.grad.abs().sum() > 0  # the actor loss reaches the actor's actions
    # the actor loss's pass used (and did not update) the running statistics: one training pass only
    assert all(int(layer.steps) == 1 for seq in twin._normed for layer in seq.renorm)
    for before, after in zip(stats_after_pass, twin.buffers()):
        assert torch.equal(before, after)
    with torch.no_grad():
        q_running, _ = twin(batch.s_tm1, a_pi, first_only=True, batch_stats=False)
    torch.testing.assert_close(out.policy_loss, -q_running[:, 0, 0].mean(), rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------------- in the trainer
def _filled(tmp_path, spec, load=False, **hyper):
    trainer = make_trainer(spec, tmp_path, load=load, batch_size=16, buffer_init_steps=10 ** 6, **hyper)
    rng = np.random.default_rng(1)
    for i in range(4):
        trainer._process_trajectory(trajectory(spec, 9, rng, done=i % 2 == 0))
    return trainer


@pytest.mark.parametrize("cont, branches", [(2, ()), (2, (2, 3)), (0, (3,))])
def test_crossq_trainer_has_no_target_and_updates_every_action_kind(tmp_path, cont, branches):
    trainer = _filled(tmp_path, behavior_spec(((5,),), cont=cont, branches=branches), **CROSSQ)
    head = trainer.optimizer.head
    assert head.q_target is None and head.joint_critic
    assert "Optimizer:target_q_network" not in trainer.optimizer.get_modules()
    assert head.q_net.layer_norm is False  # batch renormalization replaces the automatic layer norm
    assert all(g["betas"] == (0.5, 0.999) for g in head.adam.param_groups)
    for _ in range(3):
        stats = trainer.update_once()
        assert all(np.isfinite(v) for v in stats.values()), stats
    assert all(int(layer.steps) == 3 for seq in head.q_net._normed for layer in seq.renorm)


def test_actor_update_every_moves_the_actor_and_temperatures_on_every_kth_update_only(tmp_path):
    trainer = _filled(tmp_path, behavior_spec(((5,),), cont=2), actor_update_every=3, compile_update=False)
    actor = trainer.policy.actor
    head = trainer.optimizer.head
    moved = []
    for k in range(1, 7):
        a0 = [p.detach().clone() for p in actor.parameters()]
        t0 = head.temperatures.log_alpha_cont.detach().clone()
        q0 = [p.detach().clone() for p in head.q_net.parameters()]
        stats = trainer.update_once()
        actor_moved = any(not torch.equal(a, p) for a, p in zip(a0, actor.parameters()))
        temp_moved = not torch.equal(t0, head.temperatures.log_alpha_cont)
        assert any(not torch.equal(q, p) for q, p in zip(q0, head.q_net.parameters()))  # critics: every update
        assert actor_moved == temp_moved
        assert ("Losses/Policy Loss" in stats) == actor_moved
        moved.append(actor_moved)
    assert moved == [False, False, True, False, False, True]


def test_critic_hidden_units_widens_the_critics_only(tmp_path):
    trainer = _filled(tmp_path, behavior_spec(((5,),), cont=2), critic_hidden_units=40)
    critic_layers = [m for m in trainer.optimizer.head.q_net.modules() if isinstance(m, torch.nn.Linear)]
    actor_layers = [m for m in trainer.policy.actor.modules() if isinstance(m, torch.nn.Linear)]
    assert {m.out_features for m in critic_layers if m.out_features > 1} == {40}
    assert max(m.out_features for m in actor_layers) == 16  # the helper's network_settings.hidden_units
    assert trainer.optimizer.head.q_target.q1.value_heads.value_heads["extrinsic"].in_features == 40


def test_running_statistics_survive_checkpoint_and_resume_exactly(tmp_path):
    spec = behavior_spec(((5,),), cont=2)
    first = _filled(tmp_path, spec, **CROSSQ)
    for _ in range(4):
        first.update_once()
    first.save_model()
    saved = {k: v.clone() for k, v in first.optimizer.head.q_net.state_dict().items()}
    assert any(k.endswith("renorm.0.running_mean") for k in saved)
    assert int(saved["q1.network_body._body_endoder.seq_layers.renorm.0.steps"]) == 4
    second = make_trainer(spec, tmp_path, load=True, batch_size=16, buffer_init_steps=10 ** 6, **CROSSQ)
    restored = second.optimizer.head.q_net.state_dict()
    assert restored.keys() == saved.keys()
    for k, v in saved.items():
        assert torch.equal(restored[k], v), k
    # not a fresh module's statistics: those are zeros and ones
    assert not torch.equal(saved["q1.network_body._body_endoder.seq_layers.renorm.1.running_var"],
                           torch.ones_like(saved["q1.network_body._body_endoder.seq_layers.renorm.1.running_var"]))


def test_onnx_export_is_the_plain_actor(tmp_path):
    from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch, export_policy

    spec = behavior_spec(((5,),), cont=2)
    trainer = _filled(tmp_path, spec, critic_hidden_units=24, **CROSSQ)
    for _ in range(3):
        trainer.update_once()
    path = export_policy(trainer.policy, str(tmp_path / "crossq"))
    obs = [np.random.default_rng(0).uniform(-2, 2, (4, 5)).astype(np.float32)]
    compare_onnx_with_torch(trainer.policy, path, obs, np.ones((4, 0), np.float32), np.zeros((4, 1, 0), np.float32))
    assert not any(isinstance(m, BatchRenorm) for m in trainer.policy.actor.modules())
    import onnx

    ops = {node.op_type for node in onnx.load(path).graph.node}
    assert "BatchNormalization" not in ops


# ----------------------------------------------------------------------------------- settings
@pytest.mark.parametrize("field, value", [
    ("batch_renorm_momentum", 0.0), ("batch_renorm_momentum", 1.5), ("batch_renorm_warmup", 0),
    ("critic_hidden_units", 0), ("adam_beta1", 1.0), ("adam_beta1", -0.1), ("actor_update_every", 0),
    ("critic_batch_renorm", "yes"),
])
def test_bad_values_name_the_field(field, value):
    with pytest.raises(TrainerConfigError, match=field):
        FastSACSettings(**{field: value})


def test_batch_renorm_refuses_an_explicit_layer_norm():
    with pytest.raises(TrainerConfigError, match="critic_layer_norm"):
        FastSACSettings(critic_batch_renorm=True, critic_layer_norm=True)
    assert FastSACSettings(critic_batch_renorm=True, critic_layer_norm=False).batch_renorm_spec() == (0.01, 100000)


def test_defaults_leave_fast_sac_as_it_was(tmp_path):
    hp = FastSACSettings()
    assert (hp.critic_batch_renorm, hp.critic_hidden_units, hp.adam_beta1, hp.actor_update_every, hp.n_step) == (
        False, None, None, None, None)
    assert (hp.resolved_adam_beta1(), hp.resolved_actor_update_every(), hp.resolved_n_step()) == (0.9, 1, 2)
    trainer = _filled(tmp_path, behavior_spec(((5,),), cont=2))
    head = trainer.optimizer.head
    assert head.q_target is not None and not head.joint_critic and head.critic_step is None
    assert all(g["betas"] == (0.9, 0.999) for g in head.adam.param_groups)
    assert not any(isinstance(m, BatchRenorm) for m in head.q_net.modules())
    assert trainer.sample_batch().r_t.shape[1] == 2  # [B, n_step, streams]


def test_critic_batch_renorm_alone_turns_on_crossqs_recipe(tmp_path):
    """adam_beta1, actor_update_every and n_step null follow critic_batch_renorm: CrossQ's 0.5, 3 and 1 with it."""
    hp = FastSACSettings(critic_batch_renorm=True)
    assert (hp.resolved_adam_beta1(), hp.resolved_actor_update_every(), hp.resolved_n_step()) == (0.5, 3, 1)
    trainer = _filled(tmp_path / "cq", behavior_spec(((5,),), cont=2), critic_batch_renorm=True)
    head = trainer.optimizer.head
    assert head.q_target is None and head.joint_critic and head.actor_update_every == 3
    assert all(g["betas"] == (0.5, 0.999) for g in head.adam.param_groups)
    assert trainer.sample_batch().r_t.shape[1] == 1  # one-step targets
    # an explicit value wins either way
    for renorm in (True, False):
        set_ = FastSACSettings(critic_batch_renorm=renorm, adam_beta1=0.7, actor_update_every=2, n_step=3)
        assert (set_.resolved_adam_beta1(), set_.resolved_actor_update_every(), set_.resolved_n_step()) == (0.7, 2, 3)
    explicit = _filled(tmp_path / "n2", behavior_spec(((5,),), cont=2), critic_batch_renorm=True, n_step=2,
                       actor_update_every=1)
    assert explicit.sample_batch().r_t.shape[1] == 2 and explicit.optimizer.head.critic_step is None


def test_hypernetwork_goal_conditioning_is_refused_clearly():
    from mlagents.trainers.settings import ConditioningType
    from mlagents_envs.base_env import DimensionProperty, ObservationSpec, ObservationType

    specs = [ObservationSpec((4,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs"),
             ObservationSpec((2,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")]
    settings = NetworkSettings(hidden_units=8, num_layers=1, goal_conditioning_type=ConditioningType.HYPER)
    with pytest.raises(ValueError, match="critic_batch_renorm.*hyper"):
        TwinQ(["extrinsic"], specs, settings, ActionSpec(2, ()), batch_renorm=(0.01, 10))
    assert batch_renorm.renorm_bodies([], 0.01, 10) == []


# ----------------------------------------------------------------------------------- compiled
@pytest.mark.slow  # about 70 s of compiling on a 2-core Xeon; CrossQ is opt-in (docs/fast_sac.md), and the default
# critics' compiled whole steps are checked in the default run (tests/test_whole_step.py)
def test_compiled_whole_steps_match_the_two_graph_path_with_renorm_and_actor_delay(tmp_path, monkeypatch):
    """Five CrossQ updates (actor every 2nd) through the compiled whole steps and, from the same weights, Adam
    state, running statistics and draws, through the loss-only graphs + eager Adam: same parameters, running
    statistics and step counters (the in-place buffer updates are part of the compiled graph)."""
    from tests.compiled_helpers import exact_compile

    monkeypatch.setenv("MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL", "1")
    with exact_compile(monkeypatch):
        spec = behavior_spec(((5,),), cont=2)
        trainer = _filled(tmp_path, spec, critic_batch_renorm=True, actor_update_every=2, compile_update=True)
        head = trainer.optimizer.head
        batches = [trainer.sample_batch() for _ in range(7)]
        torch.manual_seed(0)
        trainer.optimizer.update(batches[0])  # critic-only step 1: eager, creates the critics' Adam state
        trainer.optimizer.update(batches[1])  # full step 2: eager, creates the actor's and temperatures' state
        modules = {"actor": trainer.policy.actor, "q": head.q_net, "t": head.temperatures}
        start = {k: copy.deepcopy(m.state_dict()) for k, m in modules.items()}
        adam = copy.deepcopy(head.adam.state_dict())
        runs = {}
        for path in ("whole", "two-graph"):
            for k, m in modules.items():
                m.load_state_dict(start[k])
            head.adam.load_state_dict(copy.deepcopy(adam))
            head.num_updates = 2
            if path == "two-graph":
                head.loss_step._whole = None
                head.critic_step._whole = None
            for i, batch in enumerate(batches[2:]):
                torch.manual_seed(100 + i)
                trainer.optimizer.update(batch)
            if path == "whole":
                assert head.loss_step.whole_mode == "on", head.loss_step.whole_error
                assert head.critic_step.whole_mode == "on", head.critic_step.whole_error
            runs[path] = {k: copy.deepcopy(m.state_dict()) for k, m in modules.items()}
    moved = 0.0
    for k in modules:
        for key, value in runs["whole"][k].items():
            other = runs["two-graph"][k][key]
            if value.dtype == torch.long:
                assert torch.equal(value, other), key
                continue
            # as in tests/test_whole_step.py: float32 summation order only; a wrong buffer update or a skipped
            # parameter moves values by >= lr 3e-4 (parameters) or momentum x a batch statistic (buffers)
            torch.testing.assert_close(value, other, rtol=0, atol=1e-5, msg=f"{k}.{key}")
            if value.numel():  # (no discrete temperatures here: an empty tensor)
                moved = max(moved, float((value - start[k][key]).abs().max()))
    assert moved > 5e-4
    assert int(runs["whole"]["q"]["q1.network_body._body_endoder.seq_layers.renorm.0.steps"]) == 7


@pytest.mark.parametrize("task", ["halfcheetah", "hopper"])
def test_crossq_preset_configs_hold_the_screened_recipe_and_build_a_target_free_trainer(tmp_path, task):
    """configs/gym/fast_sac_crossq_<task>.yaml: the 100k study's ``crossq256`` settings (critics as wide as the actor)
    over configs/gym/fast_sac_<task>.yaml (bench/results/fast-sac-crossq-100k-2026-11-28)."""
    import os

    import yaml
    from mlagents.trainers.settings import RunOptions, TrainerSettings

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "configs", "gym", f"fast_sac_crossq_{task}.yaml")) as f:
        preset = yaml.safe_load(f)
    with open(os.path.join(root, "configs", "gym", f"fast_sac_{task}.yaml")) as f:
        plain = yaml.safe_load(f)
    (name, cfg), = preset["behaviors"].items()
    base = plain["behaviors"][name]
    recipe = dict(learning_rate=1.0e-3, critic_batch_renorm=True, adam_beta1=0.5, actor_update_every=3)
    assert cfg["hyperparameters"] == {**{k: v for k, v in base["hyperparameters"].items() if k != "tau"}, **recipe}
    # the preset keeps the screened network: observations not normalized (fast_sac's gym configs normalize since
    # bench/results/fast-sac-norm-bins-2026-12-01)
    assert cfg["network_settings"] == dict(base["network_settings"], normalize=False)
    assert {k: v for k, v in cfg.items() if k not in ("hyperparameters", "network_settings")} == {
        k: v for k, v in base.items() if k not in ("hyperparameters", "network_settings")}
    try:
        settings = RunOptions.from_dict(preset).behaviors[name]
    finally:
        TrainerSettings.default_override = None
    hp = settings.hyperparameters
    assert hp.batch_renorm_spec() == (0.01, 100000) and hp.critic_hidden_units is None
    assert hp.resolved_n_step() == 1  # CrossQ's one-step targets (n_step null with critic_batch_renorm)
    units = settings.network_settings.hidden_units
    assert units == 256
    spec = behavior_spec(((11,),), cont=3)
    trainer = make_trainer(spec, tmp_path, hidden_units=units, **{k: getattr(hp, k) for k in recipe},
                           compile_update=False)
    head = trainer.optimizer.head
    assert head.q_target is None and head.actor_update_every == 3
    # the critics take the actor's width (critic_hidden_units unset)
    assert {m.out_features for m in head.q_net.modules() if isinstance(m, torch.nn.Linear)} == {units, 1}
