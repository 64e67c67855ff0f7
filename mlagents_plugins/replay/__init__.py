"""Shared replay machinery: preallocated ring buffer with segments, prioritized sum-tree, crash-safe files.

See docs/replay.md for the interface and the file format.
"""
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.errors import (
    ReplayFileError,
    ReplayFileNotFoundError,
    ReplaySpecMismatchError,
)
from mlagents_plugins.replay.prioritized import SumTree, importance_weights
from mlagents_plugins.replay.specs import FieldSpec, ReplaySpec

__all__ = [
    "FieldSpec",
    "ReplaySpec",
    "ReplayBuffer",
    "SumTree",
    "importance_weights",
    "ReplayFileError",
    "ReplayFileNotFoundError",
    "ReplaySpecMismatchError",
]
