"""Per-step extras: named arrays the acting policy records at every step, stored as named replay columns.

Why: some trainers must train on facts only the acting policy knows (TAAC: the previous trajectory
``tau^-``, the executed trajectory, the switch and the repeat count), and they must be known at *every*
row of a trajectory, including an episode's last one.  The hook has two ends:

* **Policy** (``Policy.evaluate``): ``run_out.update(extras.policy_outputs({"name": array[N, ...], ...}))``.
  The named arrays are also returned under ``run_out[STEP_EXTRAS_OUTPUT]`` for callers of ``evaluate``.
* **Trainer** (``OffPolicyTrainerBase.step_extras(behavior_spec)``): returns the same ``StepExtras``.  The
  base adds its fields to the replay layout and, for every trajectory chunk, reads them back with
  ``StepExtras.read(trajectory)`` and stores them next to the standard transition row.

Transport (the one ML-Agents 1.1.0 constraint): ``AgentExperience`` has a fixed set of fields, and the only
per-step, per-agent float vector that ``AgentProcessor._process_step`` copies from the policy's outputs into
the trajectory is ``outputs["log_probs"].continuous[idx]``.  Off-policy trainers of this package never train
on behaviour log-probabilities, so a trainer that declares extras gives that slot to them: ``StepExtras``
packs the named fields into it (flat, float32, in declaration order) and unpacks them by name.  No trainer
handles the packing itself, and a trainer that declares no extras leaves the slot alone.

Supported field dtypes: ``float32``, ``bool`` (stored as 0/1) and ``int32`` (exact up to ``2**24``).
"""
from typing import Any, Dict, Mapping, Tuple

import numpy as np

from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.trajectory import Trajectory

from mlagents_plugins.replay.specs import FieldSpec

# Key of the named extras in ``Policy.evaluate``'s output dict (informational; the transport is log_probs).
STEP_EXTRAS_OUTPUT = "step_extras"
_DTYPES = ("float32", "bool", "int32")
_MAX_EXACT_INT = 2 ** 24  # float32 represents every integer up to this exactly


class StepExtras:
    """An ordered set of named per-step fields and their packing into the log-probs transport slot."""

    def __init__(self, fields: Mapping[str, FieldSpec]):
        if not fields:
            raise ValueError("StepExtras needs at least one field")
        self.fields: Dict[str, FieldSpec] = dict(fields)
        self._slices: Dict[str, Tuple[int, int]] = {}
        offset = 0
        for name, spec in self.fields.items():
            if np.dtype(spec.dtype).name not in _DTYPES:
                raise ValueError(f"step extra {name!r}: dtype {spec.dtype!r} is not one of {', '.join(_DTYPES)}")
            size = int(np.prod(spec.shape, dtype=np.int64))
            self._slices[name] = (offset, offset + size)
            offset += size
        self.width = offset

    def pack(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """``[N, width]`` float32 from every declared field (``[N, *shape]`` each); names must match exactly."""
        if set(values) != set(self.fields):
            raise ValueError(f"step extras: got fields {sorted(values)}, declared {sorted(self.fields)}")
        n = None
        cols = []
        for name, spec in self.fields.items():
            x = np.asarray(values[name])
            if n is None:
                n = x.shape[0] if x.ndim > 0 else -1
            if x.shape != (n,) + tuple(spec.shape):
                raise ValueError(
                    f"step extra {name!r}: expected shape {(n,) + tuple(spec.shape)} ([N, *{tuple(spec.shape)}]), "
                    f"got {x.shape}"
                )
            if np.dtype(spec.dtype).name == "int32" and np.any(np.abs(x) > _MAX_EXACT_INT):
                raise ValueError(f"step extra {name!r}: integer values beyond 2**24 do not survive float32")
            cols.append(x.reshape(n, -1).astype(np.float32))
        return np.concatenate(cols, axis=1)

    def unpack(self, flat: np.ndarray) -> Dict[str, np.ndarray]:
        """Named ``[N, *shape]`` arrays in their declared dtypes from ``[N, width]`` packed rows."""
        flat = np.asarray(flat, dtype=np.float32)
        if flat.ndim != 2 or flat.shape[1] != self.width:
            raise ValueError(
                f"step extras must be [N, {self.width}] for fields {list(self.fields)}, got shape {flat.shape}: "
                "was this trajectory produced by this trainer's policy with the same settings?"
            )
        out: Dict[str, np.ndarray] = {}
        for name, spec in self.fields.items():
            lo, hi = self._slices[name]
            col = flat[:, lo:hi].reshape((flat.shape[0],) + tuple(spec.shape))
            kind = np.dtype(spec.dtype).name
            if kind == "bool":
                out[name] = col > 0.5
            elif kind == "int32":
                out[name] = np.rint(col).astype(np.int32)
            else:
                out[name] = col.astype(np.float32)
        return out

    def policy_outputs(self, values: Mapping[str, np.ndarray]) -> Dict[str, Any]:
        """Entries for ``Policy.evaluate``'s output dict: the transport and the named arrays."""
        return {"log_probs": LogProbsTuple(continuous=self.pack(values)), STEP_EXTRAS_OUTPUT: dict(values)}

    def read(self, trajectory: Trajectory) -> Dict[str, np.ndarray]:
        """The extras of every step of a trajectory chunk (each step's continuous log-probs slot)."""
        return self.unpack(np.asarray([e.action_probs.continuous for e in trajectory.steps], dtype=np.float32))
