"""The stats a user needs to see a collapse coming are reported, and equal a direct computation: per-step
model losses, latent norms and spread, value-target range and value prediction, and the SAC head's Q
magnitudes and temperatures (fast_sac's keys)."""
import numpy as np
import pytest
import torch

from mlagents_plugins.muzero_repr import losses as ML
from mlagents_plugins.muzero_repr import optimizer as O
from mlagents_plugins.sac import head as sac_head

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec

# float32 means of at most a few dozen terms, summed in another order here (numpy, loops): a few ulp each.
RTOL, ATOL = 1e-5, 1e-6


def _close(got, want, key):
    assert got == pytest.approx(float(want), rel=RTOL, abs=ATOL), key


def test_model_stats_equal_a_direct_computation(tmp_path):
    spec = behavior_spec(((4,),), 1, (2,))
    trainer = make_trainer(spec, tmp_path, num_unroll_steps=3, td_steps=4, support_size=3)
    fill(trainer, spec, np.random.default_rng(0), n_traj=8)
    opt, hp = trainer.optimizer, trainer.optimizer.hyperparameters
    K = hp.num_unroll_steps
    batch = trainer.sample_model_batch(np.random.default_rng(5))
    with torch.no_grad():
        outs = opt.model.unroll(batch.obs_0, batch.actions_enc_k, hp.recurrent_gradient_scaling_factor)
        # The targets themselves are checked against a loop in test_muzero_targets.
        tg = opt.model_loss(batch).targets
        value_l = [ML.scalar_prediction_loss(o.value.unsqueeze(1), tg.value_target_k[:, k:k + 1], 3, opt.transform_eps)[:, 0]
                   for k, o in enumerate(outs)]
        reward_l = [ML.scalar_prediction_loss(outs[k].reward.unsqueeze(1), tg.reward_target_k[:, k - 1:k], 3,
                                              opt.transform_eps)[:, 0] for k in range(1, K + 1)]
        v0 = ML.prediction_to_scalar(outs[0].value, 3, opt.transform_eps)
    latents = [o.latent.numpy().astype(np.float64) for o in outs]
    z0 = tg.value_target_k[:, 0].numpy().astype(np.float64)
    stats, _ = opt.update_model(batch)

    def masked_mean(values, mask):
        rows = [float(v) for v, m in zip(values, mask) if m]
        return sum(rows) / len(rows) if rows else 0.0

    for k in range(K + 1):
        _close(stats[O.STAT_VALUE_LOSS.format(k=k)], masked_mean(value_l[k], tg.value_mask_k[:, k]), f"value {k}")
        _close(stats[O.STAT_LATENT_NORM.format(k=k)], np.linalg.norm(latents[k], axis=1).mean(), f"norm {k}")
    for k in range(1, K + 1):
        _close(stats[O.STAT_REWARD_LOSS.format(k=k)], masked_mean(reward_l[k - 1], tg.reward_mask_k[:, k - 1]),
               f"reward {k}")
    assert O.STAT_REWARD_LOSS.format(k=0) not in stats and O.STAT_VALUE_LOSS.format(k=K + 1) not in stats
    _close(stats[O.STAT_LATENT_STD], latents[0].std(axis=0).mean(), "latent std")
    _close(stats[O.STAT_VALUE_TARGET], z0.mean(), "target mean")
    _close(stats[O.STAT_VALUE_TARGET_MIN], z0.min(), "target min")
    _close(stats[O.STAT_VALUE_TARGET_MAX], z0.max(), "target max")
    assert z0.min() < z0.max()  # a real range, so a swapped min/max would show
    _close(stats[O.STAT_VALUE_PREDICTION], v0.double().mean(), "value prediction")


def test_sac_head_stats_equal_a_direct_computation(tmp_path):
    spec = behavior_spec(((4,),), 1, (3,))
    trainer = make_trainer(spec, tmp_path, rl_gradient_to_repr=True, init_entcoef=0.3)
    fill(trainer, spec, np.random.default_rng(1), n_traj=8)
    opt = trainer.optimizer
    batch = trainer.sample_rl_batch(np.random.default_rng(6))
    with torch.no_grad():
        z = opt.actor.representation(batch.s_tm1)
        q1_all, q2_all = opt.head.q_net([z], batch.a_tm1_cont)
    a = batch.a_tm1_disc[:, 0].numpy()
    q1 = np.array([q1_all[b, 0, a[b]].item() for b in range(len(a))], np.float64)  # one branch: its entry
    q2 = np.array([q2_all[b, 0, a[b]].item() for b in range(len(a))], np.float64)
    stats = opt.update_rl(batch)
    _close(stats[sac_head.STAT_Q_ABS], np.abs(q1).mean(), "Q1 abs")
    _close(stats[sac_head.STAT_Q_STD], q1.std(), "Q1 std")
    _close(stats[sac_head.STAT_TWIN_GAP], np.abs(q1 - q2).mean(), "twin gap")
    _close(stats[sac_head.STAT_Q_MEAN], q1.mean(), "Q mean")
    alpha_c = float(opt.head.temperatures.log_alpha_cont.exp().item())  # after the step, as fast_sac reports
    alpha_d = float(opt.head.temperatures.log_alpha_disc.exp().item())
    assert alpha_c != pytest.approx(0.3, abs=1e-9)  # the step moved it, so "before" would not match
    _close(stats[sac_head.STAT_CONT_ENTCOEF], alpha_c, "alpha cont")
    _close(stats[sac_head.STAT_DISC_ENTCOEF], alpha_d, "alpha disc")
    _close(stats[sac_head.STAT_ENTCOEF], (alpha_c + alpha_d) / 2, "alpha mean")
    _close(stats[sac_head.STAT_BRANCH_ENTCOEF.format(0)], alpha_d, "branch temperature, after the step as the others")
    for key in (sac_head.STAT_Q1_LOSS, sac_head.STAT_Q2_LOSS, sac_head.STAT_POLICY_LOSS, sac_head.STAT_ENTCOEF_LOSS, sac_head.STAT_TARGET_MEAN,
                sac_head.STAT_TARGET_DRIFT, sac_head.STAT_LR, sac_head.STAT_ENTROPY):
        assert np.isfinite(stats[key]), key


def test_stats_reach_the_summaries(tmp_path):
    """Through the trainer's update cadence into ML-Agents' stats reporter (what TensorBoard shows)."""
    spec = behavior_spec(((4,),), 2, ())
    trainer = make_trainer(spec, tmp_path)
    fill(trainer, spec, np.random.default_rng(2), n_traj=8)
    reporter = trainer._stats_reporter
    reporter.stats_dict[reporter.category].clear()  # class-level store: start from nothing other tests wrote
    trainer._step = 5
    assert trainer._update_policy()
    summary = reporter.get_stats_summaries
    for key in (sac_head.STAT_Q_ABS, sac_head.STAT_ENTCOEF, O.STAT_VALUE_LOSS.format(k=1), O.STAT_LATENT_NORM.format(k=0),
                O.STAT_LATENT_STD, O.STAT_VALUE_TARGET_MIN, O.STAT_VALUE_TARGET_MAX, O.STAT_VALUE_PREDICTION):
        assert summary(key).num > 0, key
