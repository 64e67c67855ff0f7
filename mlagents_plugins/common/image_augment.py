"""DrQ's random shifts of camera frames (Kostrikov et al. 2020, "Image Augmentation Is All You Need"; Yarats et al.
2021, DrQ-v2): every image of a sampled batch is replicate-padded by ``pad`` pixels on each side and cropped back
to its size at a random offset, i.e. moved by a whole number of pixels in ``[-pad, pad]`` in each direction, its
border pixels repeated into the gap.  One implementation for every trainer that augments (fast_sac, muzero_repr).

Replicate padding followed by a crop at offset ``(dy, dx)`` reads the source pixel
``(clamp(i + dy - pad, 0, H - 1), clamp(j + dx - pad, 0, W - 1))`` for output pixel ``(i, j)``, so the shift is
computed as that one gather over the flattened pixels: no padded copy is made, it works for any dtype (uint8 frames
as stored, or float), and the result equals a crop of the replicate-padded image (tests/test_image_augment.py) at a
fraction of its CPU time (``python -m bench speed camera`` times it).
"""
from typing import Any, List, Optional, Sequence

from mlagents.torch_utils import torch

#: DrQ's shift: 4 pixels on 84x84 frames (Kostrikov et al. 2020, Sec. 3.1).
DRQ_PAD = 4
DRQ_SIZE = 84


def image_sizes(observation_specs: Sequence[Any]) -> List[int]:
    """The smaller side of every camera observation (rank 3, ``(C, H, W)``) among ``observation_specs``."""
    return [min(int(spec.shape[1]), int(spec.shape[2])) for spec in observation_specs if len(spec.shape) == 3]


def automatic_shift_pad(observation_specs: Sequence[Any]) -> int:
    """DrQ's 4 pixels at 84x84 scaled to the smallest camera frame, at least 1 (36x36: 2, 24x24: 1); 0 without
    camera observations."""
    sizes = image_sizes(observation_specs)
    if not sizes:
        return 0
    return max(1, int(round(DRQ_PAD * min(sizes) / DRQ_SIZE)))


def shift_images(obs: torch.Tensor, dx: torch.Tensor, dy: torch.Tensor, pad: int) -> torch.Tensor:
    """``obs`` [B, C, H, W] with sample ``b`` moved as a replicate-padded crop at column offset ``dx[b]`` and row
    offset ``dy[b]`` (each in ``[0, 2 * pad]``; ``pad`` is no shift)."""
    if obs.dim() != 4:
        raise ValueError(f"random_shift needs [B, C, H, W] observations, got shape {tuple(obs.shape)}")
    b, c, h, w = obs.shape
    if tuple(dx.shape) != (b,) or tuple(dy.shape) != (b,):
        raise ValueError(f"dx and dy must have shape [{b}], got {list(dx.shape)} and {list(dy.shape)}")
    rows = (dy.view(b, 1) - pad + torch.arange(h, device=obs.device).view(1, h)).clamp_(0, h - 1)  # [B, H]
    cols = (dx.view(b, 1) - pad + torch.arange(w, device=obs.device).view(1, w)).clamp_(0, w - 1)  # [B, W]
    # One gather over each image's flattened pixels, the same source pixel for every channel.
    source = (rows.view(b, h, 1) * w + cols.view(b, 1, w)).view(b, 1, h * w).expand(b, c, h * w)
    return obs.reshape(b, c, h * w).gather(2, source).view(b, c, h, w)


def random_shift(obs: torch.Tensor, pad: int, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """DrQ random shift of ``[B, C, H, W]`` images by up to ``pad`` pixels (``shift_images`` at uniform offsets);
    ``pad <= 0`` returns ``obs`` itself.

    The offsets (columns, then rows) are drawn on the generator's device (a CPU generator under
    ``--torch-device cuda``, where the trainer thread's default device is the GPU), then moved to the images'.
    """
    if obs.dim() != 4:
        raise ValueError(f"random_shift needs [B, C, H, W] observations, got shape {tuple(obs.shape)}")
    if pad <= 0:
        return obs
    b = obs.shape[0]
    rng_device = generator.device if generator is not None else obs.device
    dx = torch.randint(0, 2 * pad + 1, (b,), generator=generator, device=rng_device).to(obs.device)
    dy = torch.randint(0, 2 * pad + 1, (b,), generator=generator, device=rng_device).to(obs.device)
    return shift_images(obs, dx, dy, pad)


def augment(obs: List[torch.Tensor], pad: int, generator: Optional[torch.Generator]) -> List[torch.Tensor]:
    """``random_shift`` of each image (``[B, C, H, W]``) of an observation list when ``pad > 0``, independent
    offsets per image and sample; vectors (and everything when ``pad <= 0``) unchanged."""
    if pad <= 0:
        return obs
    return [random_shift(o, pad, generator) if o.dim() == 4 else o for o in obs]
