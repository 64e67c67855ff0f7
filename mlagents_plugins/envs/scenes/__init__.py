"""The headless stand-in scenes, by name (see docs/scenes.md): the six base scenes and their variants."""
from typing import Dict, List, Type

from mlagents_plugins.envs.scenes.balance import BalanceScene
from mlagents_plugins.envs.scenes.base import DIFFICULTY, Scene, SceneStep
from mlagents_plugins.envs.scenes.branches import BranchesScene
from mlagents_plugins.envs.scenes.camera import CameraScene
from mlagents_plugins.envs.scenes.hybrid import HybridScene
from mlagents_plugins.envs.scenes.reach import ReachScene
from mlagents_plugins.envs.scenes.switching import SwitchingScene
from mlagents_plugins.envs.scenes.variants import TUNING, VALIDATION, VARIANT_SPECS, build_variants

SCENES: Dict[str, Type[Scene]] = {
    "balance": BalanceScene,
    "branches": BranchesScene,
    "camera": CameraScene,
    "hybrid": HybridScene,
    "reach": ReachScene,
    "switching": SwitchingScene,
}

#: every scene by name: the base scenes and their named variants (``variants.py``)
ALL_SCENES: Dict[str, Type[Scene]] = {**SCENES, **build_variants(SCENES)}
#: tuning / validation split of ALL_SCENES (the base scenes are tuning: the shipped configs were tuned on them, and reach is the #14 diagnosis scene)
SPLIT: Dict[str, str] = {**{name: TUNING for name in SCENES}, **{v.name: v.split for v in VARIANT_SPECS}}


def scenes_in(split: str) -> List[str]:
    """Names of the scenes of one split (``tuning`` or ``validation``), sorted."""
    if split not in (TUNING, VALIDATION):
        raise ValueError(f"split={split!r} is unknown; allowed: {TUNING}, {VALIDATION}")
    return sorted(name for name, s in SPLIT.items() if s == split)


def scene_class(name: str) -> Type[Scene]:
    """The scene class for ``name`` (case-insensitive), with a clear error listing the allowed names."""
    key = str(name).lower()
    if key not in ALL_SCENES:
        raise ValueError(f"scene={name!r} is unknown; allowed: {', '.join(sorted(ALL_SCENES))}")
    return ALL_SCENES[key]


__all__ = ["SCENES", "ALL_SCENES", "SPLIT", "Scene", "SceneStep", "DIFFICULTY", "scene_class", "scenes_in"]
