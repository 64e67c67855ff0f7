"""``fast_sac`` hyperparameters (the ``hyperparameters:`` block of a ``trainer_type: fast_sac`` behavior): the SAC
head's (``mlagents_plugins/sac/settings.py``) and the image augmentation of camera observations."""
from typing import Any, ClassVar, Sequence

import attr

from mlagents_plugins.common.image_augment import automatic_shift_pad
from mlagents_plugins.common.validators import optional_bool, optional_non_negative_int
from mlagents_plugins.sac.settings import SACHeadSettings


@attr.s(auto_attribs=True)
class FastSACSettings(SACHeadSettings):
    TRAINER_TYPE: ClassVar[str] = "fast_sac"

    # DrQ random shifts (Kostrikov et al. 2020) of the camera frames in every sampled batch: each frame moved by a
    # whole number of pixels up to this many in each direction, edges repeated; observation and next observation
    # shifted independently, the actor and the critics seeing the same shifted frames.  0 = off; null =
    # automatic: DrQ's 4 pixels at 84x84 scaled to the frame size (at least 1) with camera observations, off
    # without (docs/fast_sac.md "Image augmentation").
    random_shift_pad: Any = attr.ib(default=None, validator=optional_non_negative_int)  # Optional[int]
    # Both critics' output layers start small: weights and biases uniform in [-3e-3, 3e-3] (DDPG's final layer,
    # Lillicrap et al. 2016) instead of ML-Agents' initialization, so the first Q values and their slopes in the
    # continuous actions are near 0 and the actor does not follow a random slope before the rewards have shaped
    # one.  null = automatic: on with continuous actions (a tanh policy saturates on such a slope within ~100
    # updates and then never samples the other sign; tiny hybrid task, bench/results/tiny-fixes-2026-11-28), off
    # for discrete-only actions (ML-Agents' initialization).
    critic_small_init: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]

    def critic_small_init_on(self, continuous_size: int) -> bool:
        """``critic_small_init``, or when null, whether there are continuous actions."""
        if self.critic_small_init is not None:
            return bool(self.critic_small_init)
        return continuous_size > 0

    def shift_pad(self, observation_specs: Sequence[Any]) -> int:
        """``random_shift_pad``, or when null, ``image_augment.automatic_shift_pad`` of the observations."""
        if self.random_shift_pad is not None:
            return int(self.random_shift_pad)
        return automatic_shift_pad(observation_specs)
