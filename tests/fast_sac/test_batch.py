"""FastSACTrainer.sample_batch: n-step windows, discounts at terminals/time-outs/segment ends, bootstrap obs."""
import numpy as np
import pytest

from helpers import make_trainer
from tests.builders import behavior_spec, trajectory
from mlagents_plugins.offpolicy import rows as R


def test_n_step_windows_match_stored_trajectories(tmp_path):
    spec = behavior_spec(cont=1, branches=(2,))
    trainer = make_trainer(spec, tmp_path, batch_size=4, n_step=3, buffer_init_steps=10 ** 6)
    rng = np.random.default_rng(0)
    trajs = [
        trajectory(spec, 4, rng, done=True),  # rows 0-3, terminal at 3
        trajectory(spec, 3, rng, done=True, interrupted=True),  # rows 4-6, time-out at 6
        trajectory(spec, 5, rng),  # rows 7-11, chunk end (no done) at 11
    ]
    for t in trajs:
        trainer._process_trajectory(t)
    starts = np.arange(12)
    trainer.replay.sample_indices = lambda n, rng: starts
    trainer.hyperparameters.batch_size = 12
    batch = trainer.sample_batch()
    gamma = 0.99
    seg_of = [0] * 4 + [1] * 3 + [2] * 5
    seg_start = [0, 4, 7]
    seg_len = [4, 3, 5]
    for i in starts:
        s = seg_of[i]
        k = i - seg_start[s]
        n_valid = min(3, seg_len[s] - k)
        traj = trajs[s]
        valid = batch.valid_t[i].numpy()
        assert valid.tolist() == [j < n_valid for j in range(3)], i
        for j in range(n_valid):
            assert batch.r_t[i, j, 0].item() == traj.steps[k + j].reward
            terminal = s == 0 and k + j == 3
            assert batch.discount_t[i, j, 0].item() == np.float32(0.0 if terminal else gamma), (i, j)
        last = k + n_valid - 1
        want_next = traj.next_obs[0] if last == seg_len[s] - 1 else traj.steps[last + 1].obs[0]
        np.testing.assert_allclose(batch.s_t[0][i].numpy(), want_next)
        np.testing.assert_allclose(batch.s_tm1[0][i].numpy(), traj.steps[k].obs[0])
        np.testing.assert_allclose(batch.a_tm1_cont[i].numpy(), traj.steps[k].action.continuous)
        assert batch.a_tm1_disc[i].tolist() == traj.steps[k].action.discrete.tolist()
    assert batch.weights is None
    assert R.TERMINAL in trainer.replay.fields


def test_annealed_per_beta_hand_values():
    from mlagents_plugins.sac.batch import annealed_per_beta

    assert annealed_per_beta(0.4, 0, 10000) == 0.4
    assert annealed_per_beta(0.4, 2500, 10000) == pytest.approx(0.55)  # 0.4 + 0.6 * 1/4
    assert annealed_per_beta(0.4, 20000, 10000) == 1.0
    assert annealed_per_beta(0.7, 5, 0) == 1.0  # max_steps 0 counts as 1: annealed at once
