"""Unity-side store of environment parameters (what C#'s ``EnvironmentParameters`` does).

Python sends parameters through ``EnvironmentParametersChannel`` either as a fixed float or as a
sampler (uniform, gaussian, multi-range uniform) with its own seed.  Like Unity, a sampler is *drawn
each time the scene reads the parameter* (the scenes read their parameters at every episode start),
so ``environment_parameters: {difficulty: {sampler_type: uniform, ...}}`` gives one draw per episode.
"""
from typing import Callable, Dict, List, Optional, Union

import numpy as np

from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.incoming_message import IncomingMessage

_DATA = EnvironmentParametersChannel.EnvironmentDataTypes
_SAMPLER = EnvironmentParametersChannel.SamplerTypes


class Sampler:
    """A seeded distribution over floats; ``kind`` is one of uniform / gaussian / multirange."""

    def __init__(self, kind: str, seed: int, args: List[float]):
        self.kind = kind
        self.args = list(args)
        self._rng = np.random.default_rng(seed)
        if kind == "uniform":
            lo, hi = args
            self._draw: Callable[[], float] = lambda: float(self._rng.uniform(lo, hi))
        elif kind == "gaussian":
            mean, std = args
            self._draw = lambda: float(self._rng.normal(mean, std))
        elif kind == "multirange":
            if len(args) % 2 != 0 or not args:
                raise ValueError(f"multirange sampler needs (min, max) pairs, got {args}")
            lows = np.array(args[0::2], dtype=np.float64)
            highs = np.array(args[1::2], dtype=np.float64)
            widths = np.maximum(highs - lows, 0.0)
            # Like Unity's MultiRangeUniformSampler: pick an interval with probability proportional to
            # its width, then draw uniformly inside it.
            probs = widths / widths.sum() if widths.sum() > 0 else np.full(len(widths), 1.0 / len(widths))

            def draw() -> float:
                i = int(self._rng.choice(len(lows), p=probs))
                return float(self._rng.uniform(lows[i], highs[i]))

            self._draw = draw
        else:
            raise ValueError(f"unknown sampler kind {kind!r}; allowed: uniform, gaussian, multirange")

    def sample(self) -> float:
        return self._draw()


class ParameterStore:
    """Float parameters and samplers keyed by name, fed by EnvironmentParametersChannel messages."""

    def __init__(self, initial: Optional[Dict[str, float]] = None):
        self._values: Dict[str, Union[float, Sampler]] = {}
        for k, v in (initial or {}).items():
            self.set_float(k, v)

    def set_float(self, key: str, value: float) -> None:
        self._values[key] = float(value)

    def set_sampler(self, key: str, sampler: Sampler) -> None:
        self._values[key] = sampler

    def get(self, key: str, default: float) -> float:
        """The parameter's value (a fresh draw for samplers), or ``default`` if Python never set it."""
        v = self._values.get(key)
        if v is None:
            return float(default)
        if isinstance(v, Sampler):
            return v.sample()
        return v

    def keys(self) -> List[str]:
        return sorted(self._values)

    def describe(self, key: str) -> Optional[Union[float, Sampler]]:
        return self._values.get(key)

    def apply_message(self, msg: IncomingMessage) -> str:
        """Decode one EnvironmentParametersChannel message (the format Python's channel writes)."""
        key = msg.read_string()
        data_type = msg.read_int32()
        if data_type == _DATA.FLOAT:
            self.set_float(key, msg.read_float32())
        elif data_type == _DATA.SAMPLER:
            seed = msg.read_int32()
            sampler_type = msg.read_int32()
            if sampler_type == _SAMPLER.UNIFORM:
                self.set_sampler(key, Sampler("uniform", seed, [msg.read_float32(), msg.read_float32()]))
            elif sampler_type == _SAMPLER.GAUSSIAN:
                self.set_sampler(key, Sampler("gaussian", seed, [msg.read_float32(), msg.read_float32()]))
            elif sampler_type == _SAMPLER.MULTIRANGEUNIFORM:
                self.set_sampler(key, Sampler("multirange", seed, msg.read_float32_list()))
            else:
                raise ValueError(f"environment parameter {key!r}: unknown sampler type {sampler_type}")
        else:
            raise ValueError(f"environment parameter {key!r}: unknown data type {data_type}")
        return key
