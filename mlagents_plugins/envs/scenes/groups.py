"""Scenes with several behaviors, as a Unity scene whose agents carry different Behavior Names.

A group puts the agents of existing scenes side by side in every training area: each part is a whole scene
(its own observation and action specs, rewards, episode ends and ``success_threshold``) and its agents carry
that scene's behavior name, so a trainer config names one trainer per behavior
(``behaviors: {Balance: ..., Reach: ...}``).  ``academy.py`` runs the parts and tells the behaviors apart;
the parts never see each other.  A group is named and built like a scene (``--scene balance_and_reach``,
``builds/BalanceAndReach``) but has no reward or threshold of its own, so tools that read one scene's reward
(``harness.train_in_process``, ``bench/``) refuse it (``scenes.scene_class``).
"""
from typing import ClassVar, Tuple, Type

from mlagents_plugins.envs.scenes.balance import BalanceScene
from mlagents_plugins.envs.scenes.base import Scene
from mlagents_plugins.envs.scenes.reach import ReachScene
from mlagents_plugins.envs.scenes.variants import TUNING


class SceneGroup:
    """Several scenes in one build, one behavior each (subclasses set the class constants)."""

    #: the build's name (``builds/<behavior_name>``), as a one-behavior scene's build carries its behavior's name;
    #: the behaviors themselves are the parts' names
    behavior_name: ClassVar[str] = ""
    #: one scene per behavior, in the order their agents appear in every message
    parts: ClassVar[Tuple[Type[Scene], ...]] = ()
    #: TUNING or VALIDATION (see variants.py)
    split: ClassVar[str] = TUNING


class BalanceAndReach(SceneGroup):
    """Continuous Balance and discrete Reach agents in every area: two behaviors, two trainers.

    Tuning set: it checks the plumbing of several behaviors (routing, one trainer each), not how well a default
    generalises, and both parts' dynamics are tuning scenes already, so it cannot stand for an unseen game.
    """

    behavior_name = "BalanceAndReach"
    parts = (BalanceScene, ReachScene)
    split = TUNING
