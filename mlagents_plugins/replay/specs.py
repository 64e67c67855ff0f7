"""Field specifications of a replay buffer: one fixed per-row shape and numpy dtype per named field.

A field may be declared the *successor* of another (``next_of``): its value at a row is the other field's value
at the next row of the same segment (a transition's next observation is the following transition's
observation).  The buffer then stores it once: only a segment's last row keeps its own value (the true final
observation after a time-out or chunk end), in a small table; every other row reads the next row.
"""
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class FieldSpec:
    """Per-row layout of one replay field.

    ``shape`` is the trailing shape of one row (``()`` for a scalar such as a reward) and ``dtype`` a numpy
    dtype string (``"float32"``, ``"uint8"``, ``"bool"``, ``"int64"``...).  Both are normalised on
    construction (shape to a tuple of ints, dtype to numpy's canonical name) so two specs written
    differently but meaning the same layout compare equal, which is what file/trainer spec checks rely on.
    ``next_of``: the name of the field this one succeeds (see the module docstring), or None.
    """

    shape: Tuple[int, ...]
    dtype: str
    next_of: Optional[str] = None

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
        if self.next_of is not None and (not isinstance(self.next_of, str) or not self.next_of):
            raise ValueError(f"FieldSpec.next_of must be a field name or None, got {self.next_of!r}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dt.name)

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @property
    def values(self) -> "FieldSpec":
        """The same shape and dtype without ``next_of``: what one stored value of the field looks like."""
        return FieldSpec(self.shape, self.dtype)

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        if self.next_of is not None:
            out["next_of"] = self.next_of
        return out

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> "FieldSpec":
        return FieldSpec(tuple(obj["shape"]), str(obj["dtype"]), obj.get("next_of"))

    def __str__(self) -> str:
        link = f" (next of {self.next_of})" if self.next_of is not None else ""
        return f"{self.dtype}{list(self.shape)}{link}"


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
    for name, spec in out.items():
        if spec.next_of is None:
            continue
        source = out.get(spec.next_of)
        if source is None or source.next_of is not None:
            raise ValueError(
                f"field {name!r} is declared next_of {spec.next_of!r}, which must be a stored field of the same "
                f"buffer (not itself a next_of field); fields: {sorted(out)}"
            )
        if source.values != spec.values:
            raise ValueError(
                f"field {name!r} ({spec.values}) is declared next_of {spec.next_of!r} ({source.values}); "
                "a successor field needs its source's shape and dtype"
            )
    return out


def successor_fields(fields: Mapping[str, FieldSpec]) -> Dict[str, str]:
    """``{field: the field it succeeds}`` for the fields declared ``next_of``."""
    return {name: spec.next_of for name, spec in fields.items() if spec.next_of is not None}
