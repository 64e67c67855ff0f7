"""``fast_sac`` hyperparameters (the ``hyperparameters:`` block of a ``trainer_type: fast_sac`` behavior): the SAC
head's (``mlagents_plugins/sac/settings.py``), nothing added."""
from typing import ClassVar

import attr

from mlagents_plugins.sac.settings import SACHeadSettings


@attr.s(auto_attribs=True)
class FastSACSettings(SACHeadSettings):
    TRAINER_TYPE: ClassVar[str] = "fast_sac"
