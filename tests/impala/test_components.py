"""Pieces, learner queue, acting-version log, gradient routing, settings and trainer intake."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.buffer import RewardSignalUtil
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import NetworkSettings, strict_to_cls
from mlagents.trainers.torch_entities.networks import SharedActorCritic, SimpleActor
from mlagents_envs.base_env import DecisionSteps

from mlagents_plugins.impala.optimizer import STAT_GRAD_NORM, TorchImpalaOptimizer
from mlagents_plugins.impala.pieces import UNKNOWN_VERSION, PieceQueue, cut_trajectory, make_batch
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.impala.settings import ImpalaSettings
from mlagents_plugins.impala.trainer import ImpalaTrainer
from tests.impala.helpers import OBS_SIZE, impala_spec, make_trajectory, trainer_settings


def _buffer_with_rewards(traj, names=("extrinsic",)):
    buf = traj.to_agentbuffer()
    for name in names:
        buf[RewardSignalUtil.rewards_key(name)].extend(np.arange(len(traj.steps), dtype=np.float32) + 0.5)
    return buf


@pytest.mark.parametrize("done,interrupted", [(True, False), (True, True), (False, False)])
def test_cut_trajectory_pieces_bootstrap_and_terminal(done, interrupted):
    spec = impala_spec(2, (3,))
    traj = make_trajectory(11, spec, done, interrupted, np.random.default_rng(0), obs_offset=100.0)
    versions = np.arange(11) + 7
    pieces = cut_trajectory(_buffer_with_rewards(traj), 1, done and not interrupted, ["extrinsic"], versions, 4)
    assert [p.length for p in pieces] == [4, 4, 3]
    for k, p in enumerate(pieces):
        start = 4 * k
        assert p.obs[0][:, 0].tolist() == [100.0 + start + i for i in range(p.length)]
        # bootstrap observation = the observation after the piece's last step (next piece's first)
        assert p.bootstrap_obs[0][0] == 100.0 + start + p.length
        assert p.acting_version.tolist() == list(versions[start : start + p.length])
        assert p.rewards["extrinsic"].tolist() == [start + i + 0.5 for i in range(p.length)]
        np.testing.assert_allclose(
            p.behaviour_log_probs,
            [np.concatenate([s.action_probs.continuous, s.action_probs.discrete]) for s in traj.steps[start : start + p.length]],
        )
    # only a true terminal (not a time-out, not a cut) stops bootstrapping, and only on the last piece
    assert [p.terminal for p in pieces] == [False, False, done and not interrupted]


def test_make_batch_is_time_major_and_keeps_only_real_steps_for_the_networks():
    spec = impala_spec(1, (2, 3))
    rng = np.random.default_rng(1)
    pieces = []
    for n, (length, done) in enumerate([(5, False), (3, True)]):
        traj = make_trajectory(length, spec, done, False, rng, obs_offset=10.0 * n)
        pieces += cut_trajectory(_buffer_with_rewards(traj), 1, done, ["extrinsic"], np.zeros(length, int), 5)
    batch = make_batch(pieces, 5)
    assert batch.mask_t.tolist() == [[1, 1], [1, 1], [1, 1], [1, 0], [1, 0]]
    assert batch.terminal_t[:, 1].tolist() == [0, 0, 1, 0, 0] and batch.terminal_t[:, 0].sum() == 0
    # 8 real steps of the 10 padded rows; row t * B + b holds piece b's step t, in time-major order
    assert batch.real_rows.tolist() == [0, 1, 2, 3, 4, 5, 6, 8]
    assert batch.obs[0][:, 0].tolist() == [0.0, 10.0, 1.0, 11.0, 2.0, 12.0, 3.0, 4.0]
    assert batch.continuous_action.shape == (8, 1) and batch.discrete_action.shape == (8, 2)
    assert batch.action_mask.shape == (8, 5) and batch.behaviour_log_probs.shape[0] == 8
    assert batch.bootstrap_obs[0][:, 0].tolist() == [5.0, 13.0]
    assert batch.rewards["extrinsic"].shape == (5, 2)
    # time_major puts per-step values back at (t, b), zero on padding
    tm = batch.time_major(torch.arange(1.0, 9.0))
    assert tm.tolist() == [[1, 2], [3, 4], [5, 6], [7, 0], [8, 0]]
    with pytest.raises(ValueError, match="x_n must be"):
        batch.time_major(torch.zeros(10))


def test_piece_queue_counts_steps_fifo_reuse_bound_and_capacity():
    spec = impala_spec(1)
    traj = make_trajectory(12, spec, False, False, np.random.default_rng(2))
    pieces = cut_trajectory(_buffer_with_rewards(traj), 1, False, ["extrinsic"], np.zeros(12, int), 2)  # 6 x 2 steps
    queue = PieceQueue(capacity=10, max_reuse=2, seed=0)
    queue.add(pieces)
    assert len(queue) == 5 and queue.dropped == 1 and queue.fresh_steps == 10  # oldest fresh piece dropped
    first = queue.take_fresh(3)  # whole pieces until >= 3 steps: two pieces
    assert first == pieces[1:3]  # oldest first
    assert queue.fresh_steps == 6 and queue.reusable_steps == 4
    assert queue.sample_reusable(5) == []  # only 4 reusable steps
    again = queue.sample_reusable(4)
    assert sorted(map(id, again)) == sorted(map(id, first))
    assert all(p.uses == 2 for p in first)
    assert queue.sample_reusable(1) == [] and queue.reusable_steps == 0  # used max_reuse times: gone
    assert queue.fresh_steps == 6


def test_piece_queue_batch_of_short_pieces_holds_batch_size_steps():
    """Episodes of 3 steps give pieces of 3 steps: a batch of 32 steps takes 11 of them (not 32 pieces)."""
    spec = impala_spec(1)
    rng = np.random.default_rng(5)
    pieces = []
    for _ in range(20):
        traj = make_trajectory(3, spec, True, False, rng)
        pieces += cut_trajectory(_buffer_with_rewards(traj), 1, True, ["extrinsic"], np.zeros(3, int), 16)
    queue = PieceQueue(capacity=1000, max_reuse=1, seed=0)
    queue.add(pieces)
    batch = queue.take_fresh(32)
    assert [p.length for p in batch] == [3] * 11 and queue.fresh_steps == 60 - 33


def test_policy_records_acting_versions_by_observation():
    spec = impala_spec(2)
    policy = ImpalaPolicy(0, spec, trainer_settings().network_settings, SimpleActor, {})

    def decide(values, version):
        policy.version = version
        obs = np.stack([np.full(OBS_SIZE, v, dtype=np.float32) for v in values])
        steps = DecisionSteps([obs], np.zeros(len(values), np.float32), np.arange(len(values)), None, np.zeros(len(values), np.int32), np.zeros(len(values), np.float32))
        info = policy.get_action(steps, worker_id=3)
        assert info.outputs["policy_version"].tolist() == [version] * len(values)

    decide([0.0, 50.0], 4)
    decide([1.0, 51.0], 5)
    decide([2.0, 52.0], 7)
    # agent 0 reads back its own steps; an unmatched observation gets UNKNOWN_VERSION
    got = policy.acting_versions("agent_3-0", [[np.full(OBS_SIZE, v, np.float32)] for v in (0.0, 9.0, 2.0)])
    assert got.tolist() == [4, UNKNOWN_VERSION, 7]
    assert policy.acting_versions("agent_3-1", [[np.full(OBS_SIZE, 51.0, np.float32)]]).tolist() == [5]


def _batch_for(spec, streams=("extrinsic",)):
    rng = np.random.default_rng(3)
    pieces = []
    for length, done in [(6, True), (4, False), (6, False)]:
        traj = make_trajectory(length, spec, done, False, rng, obs_offset=rng.normal())
        pieces += cut_trajectory(_buffer_with_rewards(traj, streams), 1, done, list(streams), np.zeros(length, int), 6)
    return make_batch(pieces, 6)


def _grads(loss, params):
    params = [p for p in params if p.requires_grad]  # skips mlagents' constant version/size parameters
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return [0.0 if g is None else float(g.abs().sum()) for g in grads]


def test_gradient_routing_separate_critic():
    spec = impala_spec(2, (3,))
    settings = trainer_settings(shared_critic=False)
    policy = ImpalaPolicy(0, spec, settings.network_settings, SimpleActor, {})
    opt = TorchImpalaOptimizer(policy, settings)
    terms = opt.compute_losses(_batch_for(spec))
    actor_params, critic_params = list(policy.actor.parameters()), list(opt.critic.parameters())
    assert sum(_grads(terms.value_loss, actor_params)) == 0.0  # value loss never moves the policy
    assert sum(_grads(terms.value_loss, critic_params)) > 0.0
    assert sum(_grads(terms.policy_loss, critic_params)) == 0.0  # advantages / targets carry no gradient
    assert sum(_grads(terms.policy_loss, actor_params)) > 0.0
    assert sum(_grads(terms.entropy_loss, critic_params)) == 0.0


def test_gradient_routing_shared_critic_and_update_moves_parameters():
    spec = impala_spec(2)
    settings = trainer_settings(streams=(("extrinsic", 0.9), ("curiosity", 0.5)), shared_critic=True)
    policy = ImpalaPolicy(0, spec, settings.network_settings, SharedActorCritic, {"stream_names": ["extrinsic", "curiosity"]})
    opt = TorchImpalaOptimizer(policy, settings)
    assert opt.critic is policy.actor
    batch = _batch_for(spec, ("extrinsic", "curiosity"))
    terms = opt.compute_losses(batch)
    body = list(policy.actor.network_body.parameters())
    heads = list(policy.actor.value_heads.parameters())
    assert sum(_grads(terms.value_loss, body)) > 0.0 and sum(_grads(terms.value_loss, heads)) > 0.0
    assert sum(_grads(terms.policy_loss, heads)) == 0.0
    before = [p.detach().clone() for p in policy.actor.parameters()]
    stats = opt.update(batch)
    assert any(not torch.equal(b, p) for b, p in zip(before, policy.actor.parameters()))
    assert 0.0 < stats["IMPALA/Mean Clipped Rho"] <= 1.0


def _padded(batch):
    """The same batch with the networks' inputs padded to all ``T * B`` rows (padding: zeros, every action
    allowed), as the learner computed it before it ran on real steps only."""
    T, B = batch.mask_t.shape

    def pad(x, fill=0.0):
        out = torch.full((T * B,) + tuple(x.shape[1:]), fill, dtype=x.dtype)
        out[batch.real_rows] = x
        return out

    return batch._replace(
        obs=[pad(o) for o in batch.obs], continuous_action=pad(batch.continuous_action),
        discrete_action=pad(batch.discrete_action), action_mask=pad(batch.action_mask, 1.0),
        behaviour_log_probs=pad(batch.behaviour_log_probs), real_rows=torch.arange(T * B))


@pytest.mark.parametrize("shared_critic", [False, True])
def test_losses_on_real_steps_equal_the_padded_computation(shared_critic):
    """Running the networks on the real steps only changes no loss and no gradient: padded rows are masked."""
    torch.manual_seed(0)
    spec = impala_spec(2, (3, 2))
    settings = trainer_settings(shared_critic=shared_critic)
    actor_cls = SharedActorCritic if shared_critic else SimpleActor
    policy = ImpalaPolicy(0, spec, settings.network_settings, actor_cls, {"stream_names": ["extrinsic"]} if shared_critic else {})
    opt = TorchImpalaOptimizer(policy, settings)
    batch = _batch_for(spec)
    assert batch.real_rows.numel() == int(batch.mask_t.sum()) < batch.mask_t.numel()
    params = [p for p in list(policy.actor.parameters()) + list(opt.critic.parameters()) if p.requires_grad]
    results = []
    for b in (batch, _padded(batch)):
        terms = opt.compute_losses(b)
        loss = terms.policy_loss + 0.5 * terms.value_loss + 0.01 * terms.entropy_loss
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        results.append((terms, [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]))
    (real, g_real), (padded, g_padded) = results
    for name in ("policy_loss", "value_loss", "entropy_loss"):
        assert getattr(real, name).item() == pytest.approx(getattr(padded, name).item(), rel=1e-5, abs=1e-6), name
    assert real.approx_kl == pytest.approx(padded.approx_kl, rel=1e-5, abs=1e-7)
    # float32: the weight gradients sum the same nonzero row terms (padded rows add exact zeros) in another
    # blocking order, so they agree to a few ulps of the summed magnitudes, far inside these tolerances.
    for a, b in zip(g_real, g_padded):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "field,value",
    [("rho_clip", -1.0), ("unroll_length", 0), ("trace_lambda", 1.5), ("optimizer", "sgd"), ("max_reuse", 0), ("entropy_weight", -0.1),
     ("fast_cpu_matmul", "yes"), ("fast_cpu_matmul", None)],
)
def test_settings_errors_name_field_value_and_allowed(field, value):
    with pytest.raises(TrainerConfigError) as err:
        strict_to_cls({field: value}, ImpalaSettings)
    assert f"hyperparameters.{field} = {value!r} is invalid: it must be " in str(err.value)


def test_settings_buffer_smaller_than_batch_and_unknown_field():
    with pytest.raises(TrainerConfigError, match="buffer_size"):
        strict_to_cls({"batch_size": 64, "buffer_size": 40}, ImpalaSettings)
    # an old piece-counting config (it set unroll_length) gets told what its value now means
    with pytest.raises(TrainerConfigError, match="batch_size.*counts steps.*8 pieces of unroll_length steps are 256"):
        strict_to_cls({"batch_size": 8, "unroll_length": 32}, ImpalaSettings)
    with pytest.raises(TrainerConfigError, match="num_epochs"):
        strict_to_cls({"num_epochs": 3}, ImpalaSettings)
    assert strict_to_cls({"rho_clip": None, "optimizer": "rmsprop"}, ImpalaSettings).rho_clip is None


@pytest.mark.parametrize("batch_size,unroll_length,expected", [
    (512, None, 32),  # the default batch: pieces of 32 steps
    (16, None, 16),  # a small ppo batch (ML-Agents' learning-test configs): pieces no longer than the batch
    (33, None, 32),
    (16, 8, 8),  # a set value is kept
])
def test_unroll_length_automatic_is_at_most_the_batch(batch_size, unroll_length, expected):
    given = {"batch_size": batch_size, "buffer_size": 1024}
    if unroll_length is not None:
        given["unroll_length"] = unroll_length
    assert strict_to_cls(given, ImpalaSettings).unroll_length == expected


def test_trainer_takes_a_recurrent_policy(tmp_path):
    """network_settings.memory is trained on whole unrolls (tests/impala/test_recurrent.py has the rest)."""
    settings = trainer_settings()
    settings.network_settings.memory = NetworkSettings.MemorySettings(sequence_length=8, memory_size=16)
    trainer = ImpalaTrainer("B", 10, settings, True, False, 0, str(tmp_path))
    assert trainer.trainer_settings.network_settings.memory.memory_size == 16


@pytest.mark.parametrize("reward_scale, clipped", [(1.0, False), (1000.0, True)])
def test_default_gradient_clip_binds_only_on_large_returns(reward_scale, clipped):
    """grad_clip_norm's default (2.0, on the mean losses' gradient) leaves an ordinary batch's gradient alone and
    scales a batch with large returns (the critic's error grows with them) down to norm 2.0 before Adam's step;
    the reported norm is the one before the clip."""
    torch.manual_seed(4)
    spec = impala_spec(2, (3,))
    settings = trainer_settings()
    assert settings.hyperparameters.grad_clip_norm == 2.0
    policy = ImpalaPolicy(0, spec, settings.network_settings, SimpleActor, {})
    opt = TorchImpalaOptimizer(policy, settings)
    batch = _batch_for(spec)
    batch.rewards["extrinsic"].mul_(reward_scale)
    params = [p for p in list(policy.actor.parameters()) + list(opt.critic.parameters()) if p.requires_grad]
    stats = opt._step(opt.compute_losses(batch))
    after_clip = float(torch.norm(torch.stack([p.grad.norm() for p in params if p.grad is not None])))
    reported = stats[STAT_GRAD_NORM]
    if clipped:
        assert reported > 20.0  # the unclipped norm is far above the clip
        assert after_clip == pytest.approx(2.0, rel=1e-4)  # clip_grad_norm_ scales by 2 / (norm + 1e-6)
    else:
        assert reported < 2.0
        assert after_clip == pytest.approx(reported, rel=1e-5)
