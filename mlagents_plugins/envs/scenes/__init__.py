"""The headless stand-in scenes, by name (see docs/scenes.md): the seven base scenes, their variants, and the
scenes with several behaviors (``groups.py``)."""
from typing import Dict, List, Tuple, Type, Union

from mlagents_plugins.envs.scenes.balance import BalanceScene
from mlagents_plugins.envs.scenes.base import DIFFICULTY, Scene, SceneStep
from mlagents_plugins.envs.scenes.branches import BranchesScene
from mlagents_plugins.envs.scenes.camera import CameraScene
from mlagents_plugins.envs.scenes.groups import BalanceAndReach, SceneGroup
from mlagents_plugins.envs.scenes.hybrid import HybridScene
from mlagents_plugins.envs.scenes.reach import ReachScene
from mlagents_plugins.envs.scenes.reach_continuous import ReachContinuousScene
from mlagents_plugins.envs.scenes.switching import SwitchingScene
from mlagents_plugins.envs.scenes.variants import TUNING, VALIDATION, VARIANT_SPECS, build_variants

SCENES: Dict[str, Type[Scene]] = {
    "balance": BalanceScene,
    "branches": BranchesScene,
    "camera": CameraScene,
    "hybrid": HybridScene,
    "reach": ReachScene,
    "reach_continuous": ReachContinuousScene,
    "switching": SwitchingScene,
}

#: the scenes with several behaviors, by name
GROUPS: Dict[str, Type[SceneGroup]] = {"balance_and_reach": BalanceAndReach}

#: every scene by name: the base scenes, their named variants (``variants.py``) and the groups (``groups.py``)
ALL_SCENES: Dict[str, Union[Type[Scene], Type[SceneGroup]]] = {**SCENES, **build_variants(SCENES), **GROUPS}
#: tuning / validation split of ALL_SCENES (the base scenes are tuning: the shipped configs were tuned on them, and reach is the #14 diagnosis scene)
SPLIT: Dict[str, str] = {
    **{name: TUNING for name in SCENES},
    **{v.name: v.split for v in VARIANT_SPECS},
    **{name: g.split for name, g in GROUPS.items()},
}


def scenes_in(split: str) -> List[str]:
    """Names of the scenes of one split (``tuning`` or ``validation``), sorted."""
    if split not in (TUNING, VALIDATION):
        raise ValueError(f"split={split!r} is unknown; allowed: {TUNING}, {VALIDATION}")
    return sorted(name for name, s in SPLIT.items() if s == split)


#: a scene by name, or a ``Scene`` subclass that is listed nowhere (``envs/tiny.py``'s tasks)
SceneRef = Union[str, Type[Scene]]


def scene_behaviors(name: SceneRef) -> Tuple[Type[Scene], ...]:
    """The scene classes of ``name`` (case-insensitive), one per behavior: one for a plain scene, a group's parts
    for a group; a clear error listing the allowed names for an unknown one.  A ``Scene`` subclass given instead of
    a name is its own one behavior (scenes that are not listed by name, such as ``envs/tiny.py``'s)."""
    if isinstance(name, type) and issubclass(name, Scene):
        return (name,)
    key = str(name).lower()
    if key not in ALL_SCENES:
        raise ValueError(f"scene={name!r} is unknown; allowed: {', '.join(sorted(ALL_SCENES))}")
    found = ALL_SCENES[key]
    return found.parts if issubclass(found, SceneGroup) else (found,)


def scene_class(name: SceneRef) -> Type[Scene]:
    """The scene class of a one-behavior scene ``name``, for code that reads one scene's reward and threshold.

    A scene with several behaviors has neither (each behavior keeps its own), so it is refused with a clear error
    rather than read as its first behavior.
    """
    parts = scene_behaviors(name)
    if len(parts) != 1:
        names = ", ".join(p.behavior_name for p in parts)
        raise ValueError(
            f"scene={name!r} has {len(parts)} behaviors ({names}), each with its own reward and threshold; this "
            "needs a scene with one behavior. Run it with SceneEnv or as a build with mlagents-learn (one trainer "
            "per behavior)."
        )
    return parts[0]


__all__ = ["SCENES", "GROUPS", "ALL_SCENES", "SPLIT", "Scene", "SceneGroup", "SceneStep", "DIFFICULTY",
           "SceneRef", "scene_behaviors", "scene_class", "scenes_in"]
