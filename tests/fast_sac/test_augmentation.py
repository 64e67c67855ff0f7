"""fast_sac's DrQ random shifts of camera frames: the ``random_shift_pad`` setting (validation, automatic value) and the
sampled batch (observations and bootstrap observations shifted independently, vectors untouched, stats)."""
import numpy as np
import pytest
import torch

from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions

from helpers import make_trainer
from mlagents_plugins.common.image_augment import shift_images
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import STAT_SHIFT_PAD
from tests.builders import behavior_spec, trajectory


def _structure(hyper: dict):
    cfg = {"behaviors": {"B": dict(trainer_type="fast_sac", hyperparameters=hyper)}}
    return RunOptions.from_dict(cfg).behaviors["B"].hyperparameters


@pytest.mark.parametrize("value", [-1, 1.5, True, "two"])
def test_bad_pad_names_field_value_and_allowed(value):
    with pytest.raises(TrainerConfigError) as e:
        _structure({"random_shift_pad": value})
    msg = str(e.value)
    assert "random_shift_pad" in msg and repr(value) in msg and "an integer >= 0 or null" in msg


def test_pad_written_as_a_string_or_whole_float_loads_as_an_integer():
    assert [_structure({"random_shift_pad": v}).random_shift_pad for v in ("3", 2.0)] == [3, 2]


@pytest.mark.parametrize(
    "shapes,expected",
    [
        (((3, 84, 84),), 4),  # DrQ's own size and pad
        (((3, 36, 36), (2,)), 2),
        (((1, 24, 32), (2,)), 1),  # the smaller side counts
        (((3, 18, 18),), 1),  # never below one pixel
        (((3, 84, 84), (3, 36, 36)), 2),  # the smallest frame counts
        (((8,),), 0),  # no camera: off
    ],
)
def test_automatic_pad_scales_drq_to_the_frame(shapes, expected):
    spec = behavior_spec(obs_shapes=shapes)
    assert _structure({}).random_shift_pad is None
    assert FastSACSettings().shift_pad(spec.observation_specs) == expected
    assert FastSACSettings(random_shift_pad=0).shift_pad(spec.observation_specs) == 0
    assert FastSACSettings(random_shift_pad=3).shift_pad(spec.observation_specs) == 3


def _filled(tmp_path, name, spec, **hyper):
    trainer = make_trainer(spec, tmp_path / name, batch_size=32, buffer_init_steps=10 ** 6, n_step=2, **hyper)
    rng = np.random.default_rng(5)
    for i in range(4):
        trainer._process_trajectory(trajectory(spec, 12, rng, done=i % 2 == 0, agent_id=f"a{i}"))
    return trainer


def test_batch_frames_are_shifted_independently_and_vectors_kept(tmp_path):
    spec = behavior_spec(obs_shapes=((3, 20, 24), (2,)), cont=1, branches=(3,))
    plain = _filled(tmp_path, "plain", spec, random_shift_pad=0)
    shifted = _filled(tmp_path, "shifted", spec, random_shift_pad=2)
    assert (plain.shift_pad, shifted.shift_pad) == (0, 2)
    a, b = plain.sample_batch(), shifted.sample_batch()  # same seed: the same rows
    # The trainer's generator draws columns then rows for the observations, then for the bootstrap observations.
    g = torch.Generator().manual_seed(int(shifted.seed))
    offsets = [torch.randint(0, 5, (32,), generator=g) for _ in range(4)]
    assert torch.equal(b.s_tm1[0], shift_images(a.s_tm1[0], offsets[0], offsets[1], 2))
    assert torch.equal(b.s_t[0], shift_images(a.s_t[0], offsets[2], offsets[3], 2))
    assert not torch.equal(offsets[0], offsets[2]) or not torch.equal(offsets[1], offsets[3])
    assert not torch.equal(b.s_tm1[0], a.s_tm1[0])
    for x, y in ((a.s_tm1[1], b.s_tm1[1]), (a.s_t[1], b.s_t[1]), (a.r_t, b.r_t), (a.a_tm1_disc, b.a_tm1_disc)):
        assert torch.equal(x, y)
    stats = shifted.update_once()
    assert stats[STAT_SHIFT_PAD] == 2.0 and np.isfinite(stats["Losses/Q1 Loss"])
    assert plain.update_once()[STAT_SHIFT_PAD] == 0.0


def test_vector_behaviors_are_not_augmented(tmp_path):
    spec = behavior_spec(obs_shapes=((4,),), cont=2)
    trainer = _filled(tmp_path, "vec", spec, random_shift_pad=3)
    batch = trainer.sample_batch()
    assert batch.s_tm1[0].shape == (32, 4)
    assert STAT_SHIFT_PAD not in trainer.update_once()
