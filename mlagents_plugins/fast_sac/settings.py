"""``fast_sac`` hyperparameters (the ``hyperparameters:`` block of a ``trainer_type: fast_sac`` behavior): the SAC
head's (``mlagents_plugins/sac/settings.py``) and the image augmentation of camera observations."""
from typing import Any, ClassVar, Optional, Sequence

import attr

from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.image_augment import automatic_shift_pad
from mlagents_plugins.common.validators import non_negative_int, optional_non_negative_int, strict_bool
from mlagents_plugins.sac.settings import SACHeadSettings


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class FastSACSettings(SACHeadSettings):
    TRAINER_TYPE: ClassVar[str] = "fast_sac"

    # DrQ random shifts (Kostrikov et al. 2020) of the camera frames in every sampled batch: each frame moved by a
    # whole number of pixels up to this many in each direction, edges repeated; observation and next observation
    # shifted independently, the actor and the critics seeing the same shifted frames.  0 = off; null =
    # automatic: DrQ's 4 pixels at 84x84 scaled to the frame size (at least 1) with camera observations, off
    # without (docs/fast_sac.md "Image augmentation").
    random_shift_pad: Optional[int] = attr.ib(default=None, validator=optional_non_negative_int)
    # Both critics' output layers start small: weights and biases uniform in [-3e-3, 3e-3] (DDPG's final layer,
    # Lillicrap et al. 2016) instead of ML-Agents' initialization, so the first Q values and their slopes in the
    # continuous actions are near 0 and the actor does not follow a random slope before the rewards have shaped one.
    # Off by default: on the tiny tasks it kept the continuous actions of the 2c2d hybrid task off the wrong sign
    # (finals 0.99 / 0.75 / 0.75 against 0.23 / -0.03 / 0.48) but the entity task fell from 3/3 to 0/3
    # (bench/results/tiny-fixes-2026-11-28).
    critic_small_init: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # With network_settings.memory: rows before each sampled sequence (same trajectory chunk) run through the
    # policy's and the critics' LSTMs only to bring their memories up to date, without a loss (R2D2's burn-in,
    # Kapturowski et al. 2019).  0 = none, as built-in sac: the policy starts from the memory stored when the
    # sequence's first step was acted, the critics from zeros.  Raise it (e.g. to sequence_length / 2) when the
    # sequences start deep into long episodes and the stored memories grow stale as the policy changes; each step
    # costs as much compute as a trained one.  Refused without memory.  (docs/fast_sac.md "Recurrent policies")
    burn_in: int = attr.ib(default=0, validator=non_negative_int)

    def shift_pad(self, observation_specs: Sequence[Any]) -> int:
        """``random_shift_pad``, or when null, ``image_augment.automatic_shift_pad`` of the observations."""
        if self.random_shift_pad is not None:
            return int(self.random_shift_pad)
        return automatic_shift_pad(observation_specs)
