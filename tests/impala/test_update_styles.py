"""impala's ``update_style: epochs``: per-pass targets, minibatch losses on shuffled steps, and the round cadence."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import strict_to_cls
from mlagents.trainers.torch_entities.networks import SharedActorCritic, SimpleActor

from mlagents_plugins.impala.optimizer import STAT_APPROX_KL, TorchImpalaOptimizer
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.impala.settings import ImpalaSettings
from mlagents_plugins.impala.trainer import ImpalaTrainer
from tests.impala.helpers import impala_spec, make_trajectory, trainer_settings
from tests.impala.test_components import _batch_for


def _params(policy, opt):
    return [p for p in list(policy.actor.parameters()) + list(opt.critic.parameters()) if p.requires_grad]


@pytest.mark.parametrize(
    "hyper,shared_critic",
    [
        ({}, False),  # clipped surrogate, advantages standardised
        ({}, True),
        ({"surrogate_clip": None, "normalize_advantage": False, "pg_rho_clip": 0.9}, False),  # the paper's gradient
    ],
)
def test_one_pass_over_every_step_equals_the_whole_batch_losses(hyper, shared_critic):
    """The epochs style's minibatch losses, over all steps in a shuffled order against the pass's targets, are the
    stream style's losses on the same batch (same networks): targets and rows line up, every mean is over steps."""
    torch.manual_seed(1)
    spec = impala_spec(2, (3, 2))
    settings = trainer_settings(shared_critic=shared_critic, **hyper)
    actor_cls = SharedActorCritic if shared_critic else SimpleActor
    policy = ImpalaPolicy(0, spec, settings.network_settings, actor_cls,
                          {"stream_names": ["extrinsic"]} if shared_critic else {})
    opt = TorchImpalaOptimizer(policy, settings)
    batch = _batch_for(spec)
    # behaviour log-probs away from the learner's so that rho differs from 1 and clips on some steps
    n = batch.real_rows.numel()
    whole = opt.compute_losses(batch)
    targets = opt.pass_targets(batch)
    assert targets.advantage.shape == (n,) and targets.vs["extrinsic"].shape == (n,)
    rows = torch.as_tensor(np.random.default_rng(0).permutation(n))
    assert not torch.equal(rows, torch.arange(n))
    part = opt.compute_row_losses(batch, rows, targets)
    params = _params(policy, opt)
    grads = []
    for terms in (whole, part):
        loss = terms.policy_loss + 0.5 * terms.value_loss + 0.01 * terms.entropy_loss
        g = torch.autograd.grad(loss, params, allow_unused=True)
        grads.append([torch.zeros_like(p) if x is None else x for p, x in zip(params, g)])
    # float32: the same per-step terms summed in another order (shuffled rows, [n, 1] against [T, B]) and the
    # networks run on a differently ordered batch, so they agree to a few ulps of the ~16 summed terms (~1e-6
    # relative), far inside these tolerances on any kernel.
    for name in ("policy_loss", "value_loss", "entropy_loss"):
        assert getattr(part, name).item() == pytest.approx(getattr(whole, name).item(), rel=1e-5, abs=1e-6), name
    assert part.approx_kl == pytest.approx(whole.approx_kl, rel=1e-5, abs=1e-7)
    assert part.importance.mean_clipped_rho == pytest.approx(whole.importance.mean_clipped_rho, rel=1e-6)
    assert abs(whole.policy_loss.item()) > 1e-3 and whole.value_loss.item() > 1e-3  # not trivially zero
    for a, b in zip(grads[0], grads[1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_minibatch_loss_is_the_mean_over_its_rows():
    """The value loss of a minibatch is 0.5 * mean((vs - V)^2) over its own rows only (computed here by hand)."""
    torch.manual_seed(2)
    spec = impala_spec(2, (3,))
    settings = trainer_settings()
    policy = ImpalaPolicy(0, spec, settings.network_settings, SimpleActor, {})
    opt = TorchImpalaOptimizer(policy, settings)
    batch = _batch_for(spec)
    targets = opt.pass_targets(batch)
    rows = torch.tensor([7, 2, 11])
    terms = opt.compute_row_losses(batch, rows, targets)
    with torch.no_grad():
        values, _ = opt.critic.critic_pass([o[rows] for o in batch.obs], sequence_length=1)
        expected = 0.5 * torch.mean((targets.vs["extrinsic"][rows] - values["extrinsic"].reshape(-1)) ** 2)
    # the same three rows through the same critic; the two means of 3 float32 squares differ by at most a few ulps
    assert terms.value_loss.item() == pytest.approx(expected.item(), rel=1e-6)


def _trainer(tmp_path, **hyper):
    spec = impala_spec(2, (3,))
    trainer = ImpalaTrainer("B", 10, trainer_settings(**hyper), True, False, 0, str(tmp_path))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    return trainer, spec


def test_epochs_round_waits_for_buffer_size_then_makes_max_reuse_passes(tmp_path):
    trainer, spec = _trainer(tmp_path, batch_size=32, buffer_size=96, unroll_length=16, max_reuse=3, kl_stop=None)
    calls = []
    passes = []
    real_pass, real_rows = trainer.optimizer.pass_targets, trainer.optimizer.update_rows
    trainer.optimizer.pass_targets = lambda batch: passes.append(batch.real_rows.numel()) or real_pass(batch)
    trainer.optimizer.update_rows = lambda batch, rows, targets: calls.append(rows.tolist()) or real_rows(
        batch, rows, targets)
    rng = np.random.default_rng(0)
    for k in range(3):  # pieces of 16 + 14 steps; 90 steps < buffer_size
        trainer._process_trajectory(make_trajectory(30, spec, True, False, rng, agent_id=f"a{k}"))
    assert trainer.piece_queue.fresh_steps == 90 and not trainer._is_ready_update()
    trainer._process_trajectory(make_trajectory(20, spec, False, False, rng, agent_id="a9"))  # pieces of 16 + 4
    assert trainer._is_ready_update()
    version = trainer.policy.version
    trainer._update_policy()
    # the round is the oldest pieces until they hold >= 96 steps: 90 + 16 = 106; the 4-step piece waits
    assert passes == [106, 106, 106]
    assert len(calls) == 3 * (106 // 32)
    for p in range(3):
        used = [r for rows in calls[3 * p:3 * p + 3] for r in rows]
        assert all(len(rows) == 32 for rows in calls[3 * p:3 * p + 3])
        assert len(set(used)) == 96 and max(used) < 106  # each step at most once per pass
    assert calls[0] != calls[3]  # every pass shuffles anew
    assert trainer.policy.version == version + 9
    assert trainer.piece_queue.fresh_steps == 4 and len(trainer.piece_queue) == 1  # nothing reused across rounds
    assert not trainer._is_ready_update()


def test_stream_style_keeps_the_piece_cadence(tmp_path):
    trainer, spec = _trainer(tmp_path, batch_size=32, buffer_size=96, unroll_length=16, max_reuse=2,
                             update_style="stream")
    updates = []
    real_update = trainer.optimizer.update
    trainer.optimizer.update = lambda batch: updates.append(batch.real_rows.numel()) or real_update(batch)
    trainer.optimizer.update_rows = None  # must not be used
    trainer._process_trajectory(make_trajectory(32, spec, True, False, np.random.default_rng(1)))
    assert trainer._is_ready_update()
    trainer._update_policy()
    assert updates == [32, 32]  # the fresh batch, then one reuse (max_reuse 2)


def test_update_style_error_names_field_value_and_choices():
    with pytest.raises(TrainerConfigError) as err:
        strict_to_cls({"update_style": "ppo"}, ImpalaSettings)
    message = str(err.value)
    assert "hyperparameters.update_style = 'ppo' is invalid" in message
    assert "epochs" in message and "stream" in message
    assert strict_to_cls({}, ImpalaSettings).update_style == "epochs"


def test_kl_stop_skips_the_step_and_ends_the_round(tmp_path):
    """A minibatch whose KL(mu || pi) estimate exceeds kl_stop makes no step and ends the round; below it, steps
    are made.  The trajectories' behaviour log-probs are random, so the estimate on them is far above 0.1."""
    spec = impala_spec(2, (3,))
    rng = np.random.default_rng(0)
    results = {}
    for kl_stop in (0.1, 1e9):
        trainer, _ = _trainer(tmp_path / str(kl_stop), batch_size=32, buffer_size=64, unroll_length=16,
                              max_reuse=2, kl_stop=kl_stop)
        seen = []
        real_rows = trainer.optimizer.update_rows

        def spy(batch, rows, targets, real_rows=real_rows, seen=seen):
            out = real_rows(batch, rows, targets)
            seen.append(out)
            return out

        trainer.optimizer.update_rows = spy
        before = [p.detach().clone() for p in trainer.policy.actor.parameters()]
        for k in range(3):
            trainer._process_trajectory(make_trajectory(25, spec, True, False, rng, agent_id=f"a{k}"))
        assert trainer._is_ready_update()
        trainer._update_policy()
        moved = any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.actor.parameters()))
        results[kl_stop] = (seen, trainer.policy.version, moved)
    seen, version, moved = results[0.1]
    assert seen == [None] and version == 0 and not moved  # stopped before the first step
    seen, version, moved = results[1e9]
    assert len(seen) == 2 * (75 // 32) and all(s is not None for s in seen) and version == len(seen) and moved
    assert seen[0][STAT_APPROX_KL] > 0.1


def test_kl_stop_error_names_the_field():
    with pytest.raises(TrainerConfigError, match="kl_stop"):
        strict_to_cls({"kl_stop": 0.0}, ImpalaSettings)
    assert strict_to_cls({"kl_stop": None}, ImpalaSettings).kl_stop is None
