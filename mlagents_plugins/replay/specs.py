"""Field specifications of a replay buffer: one fixed per-row shape and numpy dtype per named field."""
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple

import numpy as np


@dataclass(frozen=True)
class FieldSpec:
    """Per-row layout of one replay field.

    ``shape`` is the trailing shape of one row (``()`` for a scalar such as a reward) and ``dtype`` a numpy
    dtype string (``"float32"``, ``"uint8"``, ``"bool"``, ``"int64"``...).  Both are normalised on
    construction (shape to a tuple of ints, dtype to numpy's canonical name) so two specs written
    differently but meaning the same layout compare equal, which is what file/trainer spec checks rely on.
    """

    shape: Tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        try:
            shape = tuple(int(d) for d in self.shape)
        except TypeError as e:
            raise ValueError(f"FieldSpec.shape must be a tuple of ints, got {self.shape!r}") from e
        if any(d < 0 for d in shape):
            raise ValueError(f"FieldSpec.shape must have non-negative dimensions, got {shape!r}")
        try:
            dt = np.dtype(self.dtype)
        except TypeError as e:
            raise ValueError(
                f"FieldSpec.dtype must be a numpy dtype string such as 'float32', 'uint8', 'bool', "
                f"'int64', got {self.dtype!r}"
            ) from e
        if dt.hasobject or dt.fields is not None or dt.subdtype is not None:
            raise ValueError(
                f"FieldSpec.dtype must be a plain numeric or bool dtype, got {self.dtype!r}"
            )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dt.name)

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    def to_json(self) -> Dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> "FieldSpec":
        return FieldSpec(tuple(obj["shape"]), str(obj["dtype"]))

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


ReplaySpec = Dict[str, FieldSpec]


def as_replay_spec(fields: Mapping[str, Any]) -> ReplaySpec:
    """Copy ``fields`` into a ``ReplaySpec``, accepting ``FieldSpec`` or ``(shape, dtype)`` pairs."""
    out: ReplaySpec = {}
    if not fields:
        raise ValueError("a replay buffer needs at least one field, got none")
    for name, spec in fields.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"field names must be non-empty strings, got {name!r}")
        if isinstance(spec, FieldSpec):
            out[name] = spec
        elif isinstance(spec, (tuple, list)) and len(spec) == 2:
            out[name] = FieldSpec(tuple(spec[0]), spec[1])
        else:
            raise ValueError(
                f"field {name!r}: expected a FieldSpec or a (shape, dtype) pair, got {spec!r}"
            )
    return out
