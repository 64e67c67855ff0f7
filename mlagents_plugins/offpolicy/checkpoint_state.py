"""``CheckpointState``: plain Python training state (counters, RNG states) saved in the model checkpoint.

Why: ML-Agents' ``TorchModelSaver`` writes ``module.state_dict()`` of every module an optimizer lists in
``get_modules()`` into the ``.pt`` checkpoint and loads it back on ``--resume``.  Counters and random
generators that decide *what* training does next (e.g. TAAC's target-update period counter, the RNG of
``randomize_first_state_tau``) are not tensors; wrapping them here as an ``nn.Module`` whose
``get_extra_state``/``set_extra_state`` carry a dict puts them in the same file, written at the same moment
as the weights, whether or not the replay buffer is saved.  Only ints, floats, strings, lists and dicts
go in (so the checkpoint still loads with ``torch.load(weights_only=True)``).

A checkpoint written before a key existed simply lacks it: ``set_extra_state`` restores the keys it finds
and leaves the others at their current (fresh-run) values.
"""
from typing import Any, Callable, Dict

import numpy as np

from mlagents.torch_utils import nn


class CheckpointState(nn.Module):
    """Named getters/setters of non-tensor state, saved as this module's extra state."""

    def __init__(self) -> None:
        super().__init__()
        self._getters: Dict[str, Callable[[], Any]] = {}
        self._setters: Dict[str, Callable[[Any], None]] = {}

    def register(self, name: str, get: Callable[[], Any], set_: Callable[[Any], None]) -> None:
        if name in self._getters:
            raise ValueError(f"checkpoint state {name!r} is registered twice")
        self._getters[name] = get
        self._setters[name] = set_

    def register_rng(self, name: str, rng: np.random.Generator) -> None:
        """A numpy ``Generator``: its bit generator state (128-bit integers kept as decimal strings)."""
        self.register(name, lambda: _encode_rng(rng), lambda s: _decode_rng(rng, s))

    def get_extra_state(self) -> Dict[str, Any]:
        return {name: get() for name, get in self._getters.items()}

    def set_extra_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise ValueError(f"checkpoint state must be a dict, got {type(state).__name__}")
        for name, value in state.items():
            if name in self._setters:
                self._setters[name](value)


def _encode(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _encode(v) for k, v in x.items()}
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return str(x)
    return x


def _decode(x: Any, like: Any) -> Any:
    if isinstance(like, dict):
        return {k: _decode(x[k], v) for k, v in like.items()}
    if isinstance(like, bool):
        return bool(x)
    if isinstance(like, int):
        return int(x)
    return x


def _encode_rng(rng: np.random.Generator) -> Dict[str, Any]:
    return _encode(rng.bit_generator.state)


def _decode_rng(rng: np.random.Generator, state: Dict[str, Any]) -> None:
    current = rng.bit_generator.state
    if state.get("bit_generator") != current["bit_generator"]:
        raise ValueError(
            f"checkpoint RNG state is for {state.get('bit_generator')!r}, this run uses {current['bit_generator']!r}"
        )
    rng.bit_generator.state = _decode(state, current)
