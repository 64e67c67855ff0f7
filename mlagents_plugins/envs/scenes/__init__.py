"""The six headless stand-in scenes, by name (see docs/scenes.md)."""
from typing import Dict, Type

from mlagents_plugins.envs.scenes.balance import BalanceScene
from mlagents_plugins.envs.scenes.base import DIFFICULTY, Scene, SceneStep
from mlagents_plugins.envs.scenes.branches import BranchesScene
from mlagents_plugins.envs.scenes.camera import CameraScene
from mlagents_plugins.envs.scenes.hybrid import HybridScene
from mlagents_plugins.envs.scenes.reach import ReachScene
from mlagents_plugins.envs.scenes.switching import SwitchingScene

SCENES: Dict[str, Type[Scene]] = {
    "balance": BalanceScene,
    "branches": BranchesScene,
    "camera": CameraScene,
    "hybrid": HybridScene,
    "reach": ReachScene,
    "switching": SwitchingScene,
}


def scene_class(name: str) -> Type[Scene]:
    """The scene class for ``name`` (case-insensitive), with a clear error listing the allowed names."""
    key = str(name).lower()
    if key not in SCENES:
        raise ValueError(f"scene={name!r} is unknown; allowed: {', '.join(sorted(SCENES))}")
    return SCENES[key]


__all__ = ["SCENES", "Scene", "SceneStep", "DIFFICULTY", "scene_class"]
