"""DrQ random shifts (``common/image_augment.py``) against an independent computation: numpy's edge padding and a
crop at the drawn offsets, per sample, on images with H != W and several channels, so a swapped row/column offset
or a channel mix-up shows."""
import numpy as np
import pytest
import torch

from mlagents_plugins.common.image_augment import augment, random_shift, shift_images


def _pad_and_crop(obs: np.ndarray, dx: np.ndarray, dy: np.ndarray, pad: int) -> np.ndarray:
    """Replicate-pad each image by ``pad`` and crop ``H x W`` at row ``dy[b]``, column ``dx[b]`` (the paper's form)."""
    b, c, h, w = obs.shape
    out = np.empty_like(obs)
    for i in range(b):
        padded = np.pad(obs[i], ((0, 0), (pad, pad), (pad, pad)), mode="edge")
        out[i] = padded[:, dy[i]:dy[i] + h, dx[i]:dx[i] + w]
    return out


def _frames(b=6, c=3, h=5, w=7, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(b, c, h, w)).astype(np.uint8)


def test_shift_images_is_a_crop_of_the_replicate_padded_image():
    obs = _frames()
    dx = np.array([0, 4, 2, 1, 3, 4])
    dy = np.array([3, 0, 2, 4, 1, 4])
    out = shift_images(torch.from_numpy(obs).float(), torch.from_numpy(dx), torch.from_numpy(dy), pad=2)
    np.testing.assert_array_equal(out.numpy(), _pad_and_crop(obs, dx, dy, 2).astype(np.float32))
    # The centre offset is no shift at all.
    centre = torch.full((6,), 2)
    assert torch.equal(shift_images(torch.from_numpy(obs), centre, centre, 2), torch.from_numpy(obs))


def test_random_shift_draws_columns_then_rows_from_the_generator():
    obs = _frames(b=32, c=2, h=6, w=9, seed=1)
    pad = 3
    out = random_shift(torch.from_numpy(obs), pad, generator=torch.Generator().manual_seed(11))
    g = torch.Generator().manual_seed(11)
    dx = torch.randint(0, 2 * pad + 1, (32,), generator=g).numpy()
    dy = torch.randint(0, 2 * pad + 1, (32,), generator=g).numpy()
    assert out.dtype == torch.uint8  # frames as stored are shifted without a float copy
    np.testing.assert_array_equal(out.numpy(), _pad_and_crop(obs, dx, dy, pad))
    # 32 samples x 7 offsets: both directions move (a shift that only ever moved one way would show here).
    assert len(set(dx.tolist())) > 1 and len(set(dy.tolist())) > 1 and not np.array_equal(dx, dy)


def test_no_pad_and_bad_shapes():
    obs = torch.from_numpy(_frames()).float()
    assert random_shift(obs, 0) is obs
    with pytest.raises(ValueError, match="B, C, H, W"):
        random_shift(torch.zeros(2, 5), 2)
    with pytest.raises(ValueError, match="dx and dy"):
        shift_images(obs, torch.zeros(5, dtype=torch.long), torch.zeros(6, dtype=torch.long), 2)


def test_augment_shifts_images_independently_and_leaves_vectors():
    img_a = torch.from_numpy(_frames(b=16, seed=3)).float()
    img_b = img_a.clone()
    vec = torch.randn(16, 4)
    out = augment([img_a, vec, img_b], 2, torch.Generator().manual_seed(4))
    assert out[1] is vec
    # Same frames, separate draws: each image gets its own offsets (as DrQ's observation and next observation).
    g = torch.Generator().manual_seed(4)
    first = random_shift(img_a, 2, g)
    second = random_shift(img_b, 2, g)
    assert torch.equal(out[0], first) and torch.equal(out[2], second)
    assert not torch.equal(out[0], out[2])
    assert augment([img_a], 0, None)[0] is img_a
