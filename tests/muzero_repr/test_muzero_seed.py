"""Randomness of muzero_repr's updates comes from the run seed (``--seed``, passed to the trainer): start rows
(the trainer's numpy generator), DrQ shifts and random actions after an episode's end (the trainer's torch
generator)."""
import numpy as np
import torch

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec

SPEC = behavior_spec(((3, 20, 20), (2,)), 1, (3,))


def _trainer(tmp_path, seed):
    trainer = make_trainer(SPEC, tmp_path / f"s{seed}-{np.random.default_rng().integers(1 << 30)}", seed=seed,
                           random_shift_pad=2, actions_after_end="random")
    fill(trainer, SPEC, np.random.default_rng(0), n_traj=8)  # the same rows in every trainer
    return trainer


def _draws(trainer, rows_rng):
    """Tensors of one model batch and one RL batch sampled with ``rows_rng`` picking the start rows."""
    mb = trainer.sample_model_batch(rows_rng)
    rb = trainer.sample_rl_batch(rows_rng)
    return [torch.as_tensor(mb.starts), mb.obs_0[0], mb.actions_enc_k, rb.s_tm1[0], rb.s_t[0]]


def _equal(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_same_run_seed_same_batches_other_seed_other_batches(tmp_path):
    a, b, c = _trainer(tmp_path, 3), _trainer(tmp_path, 3), _trainer(tmp_path, 4)
    # Start rows from each trainer's own generator (seeded by the run seed).
    da, db, dc = (_draws(t, t.rng) for t in (a, b, c))
    assert _equal(da, db)
    assert not torch.equal(da[0], dc[0])
    # Same start rows for all: the shifts and the random actions after the end still follow the run seed.
    da, db, dc = (_draws(t, np.random.default_rng(0)) for t in (a, b, c))
    assert torch.equal(da[0], dc[0])
    assert _equal(da, db)
    assert not torch.equal(da[1], dc[1]) and not torch.equal(da[3], dc[3])  # DrQ shifts
    assert not torch.equal(da[2], dc[2])  # random actions after an episode's end
