"""``fast_sac`` hyperparameters (the ``hyperparameters:`` block of a ``trainer_type: fast_sac`` behavior): the SAC
head's (``mlagents_plugins/sac/settings.py``) and the image augmentation of camera observations."""
from typing import Any, ClassVar, Optional, Sequence

import attr

from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.image_augment import automatic_shift_pad
from mlagents_plugins.common.validators import optional_non_negative_int
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

    def shift_pad(self, observation_specs: Sequence[Any]) -> int:
        """``random_shift_pad``, or when null, ``image_augment.automatic_shift_pad`` of the observations."""
        if self.random_shift_pad is not None:
            return int(self.random_shift_pad)
        return automatic_shift_pad(observation_specs)
