"""Crash-safe, versioned, checksummed replay files.

File layout (all integers little-endian)::

    offset 0   8 bytes   MAGIC b"MLAPRPLY"
    offset 8   uint32    format version (FORMAT_VERSION)
    offset 12  uint64    header length H
    offset 20  H bytes   UTF-8 JSON header: field specs, capacity, size, write_pos, total_added,
                         segment_counter, prioritized/max_priority, the payload array table, extra
    ...        P bytes   payload: the arrays of the table, in order, raw C-order little-endian bytes of the
                         filled rows only (ring order as in memory, so a resume continues with the same
                         contents, order and write position)
    ...        8 bytes   END_MAGIC b"MLAPEND."
    ...        32 bytes  SHA-256 of every byte before END_MAGIC (prefix + header + payload)

Crash safety: ``save_replay`` writes ``<path>.tmp-<pid>``, flushes and fsyncs it, ``os.replace``s it over
``path`` (atomic on POSIX) and fsyncs the directory, so a crash or SIGKILL at any point leaves either the
previous file or the new one, never a mix.  Loading checks the magic, version, exact length and checksum
and raises ``ReplayFileError`` (never an empty buffer) when anything is off.
"""
import hashlib
import json
import os
import re
import struct
import time
from typing import Any, BinaryIO, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.errors import (
    ReplayFileError,
    ReplayFileNotFoundError,
    ReplaySaveError,
    ReplaySpecMismatchError,
)
from mlagents_plugins.replay.specs import FieldSpec, ReplaySpec, as_replay_spec
from mlagents_plugins.util.fsync import fsync_dir

MAGIC = b"MLAPRPLY"
END_MAGIC = b"MLAPEND."
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sIQ")  # magic, version, header length
_DIGEST_SIZE = hashlib.sha256().digest_size
_TRAILER_SIZE = len(END_MAGIC) + _DIGEST_SIZE
_MAX_HEADER_BYTES = 64 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024

PathLike = Union[str, "os.PathLike[str]"]


def _bytes_view(a: np.ndarray) -> memoryview:
    return memoryview(a).cast("B") if a.size else memoryview(b"")


def _le(a: np.ndarray) -> np.ndarray:
    """Contiguous little-endian version of ``a`` (a no-op view on little-endian machines)."""
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _payload_arrays(buffer: ReplayBuffer) -> Tuple[List[Tuple[str, np.ndarray]], dict]:
    st = buffer.state()
    arrays = [(f"field:{name}", _le(a)) for name, a in st["arrays"].items()]
    arrays.append(("segments", _le(st["segments"])))
    if st["priorities"] is not None:
        arrays.append(("priorities", _le(st["priorities"])))
    return arrays, st



def _remove_stale_tmp_files(path: str) -> None:
    """Delete ``<path>.tmp-<pid>`` left by saves whose process died (killed mid-save).

    POSIX only: liveness is probed with ``os.kill(pid, 0)``, which on Windows would terminate the process.
    """
    if os.name != "posix":
        return
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    pattern = re.compile(re.escape(base) + r"\.tmp-(\d+)$")
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # that process still runs (maybe saving right now): leave its file alone
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, OSError):
            continue
        try:
            os.remove(os.path.join(directory, name))
        except OSError:
            pass


def save_replay(path: PathLike, buffer: ReplayBuffer, extra: Optional[dict] = None) -> int:
    """Atomically write ``buffer`` (and JSON-serialisable ``extra``) to ``path``; returns the file size.

    A crash or kill mid-save leaves the previous file at ``path`` intact (see module docstring).
    """
    path = os.fspath(path)
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise ValueError(f"save_replay: extra must be a dict of JSON-serialisable metadata, got {type(extra)}")
    arrays, st = _payload_arrays(buffer)
    table = [
        {"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "nbytes": int(a.nbytes)}
        for name, a in arrays
    ]
    header = {
        "format": "mlagents-plugins-replay",
        "capacity": st["capacity"],
        "size": st["size"],
        "write_pos": st["write_pos"],
        "total_added": st["total_added"],
        "segment_counter": st["segment_counter"],
        "fields": {name: spec.to_json() for name, spec in st["fields"].items()},
        "prioritized": st["priorities"] is not None,
        "max_priority": st["max_priority"],
        "arrays": table,
        "payload_nbytes": int(sum(t["nbytes"] for t in table)),
        "checksum": "sha256",
        "saved_unix": time.time(),
        "extra": extra,
    }
    try:
        header_bytes = json.dumps(header, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ValueError(f"save_replay: extra must be JSON-serialisable (no NaN/inf): {e}") from e

    directory = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp-{os.getpid()}"
    existed = os.path.exists(path)
    digest = hashlib.sha256()
    try:
        os.makedirs(directory, exist_ok=True)
        _remove_stale_tmp_files(path)
        with open(tmp, "wb") as f:
            for chunk in (_PREFIX.pack(MAGIC, FORMAT_VERSION, len(header_bytes)), header_bytes):
                digest.update(chunk)
                f.write(chunk)
            for _, a in arrays:
                view = _bytes_view(a)
                digest.update(view)
                f.write(view)
            f.write(END_MAGIC)
            f.write(digest.digest())
            f.flush()
            os.fsync(f.fileno())
            nbytes = f.tell()
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(err, OSError):
            before = "the previous file there is unchanged" if existed else "no file was written"
            raise ReplaySaveError(
                f"could not save the replay buffer to {path}: {err.strerror or err} ({type(err).__name__}); "
                f"{before}. Free disk space (or fix the folder's permissions) and run again with --resume to "
                "continue from the last complete save."
            ) from err
        raise
    fsync_dir(directory)
    return nbytes


# ---------------------------------------------------------------------------------------------- reading
def _read_exact(f: BinaryIO, n: int, path: str, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ReplayFileError(f"replay file {path!r} is truncated: ended inside the {what}")
    return data


def _read_header(f: BinaryIO, path: str, file_size: int) -> Tuple[dict, bytes]:
    """Parse and validate prefix and header; checks the file length against the header's payload size."""
    if file_size < _PREFIX.size:
        raise ReplayFileError(
            f"replay file {path!r} is truncated or not a replay file: {file_size} bytes, "
            f"shorter than the {_PREFIX.size}-byte prefix"
        )
    prefix = _read_exact(f, _PREFIX.size, path, "prefix")
    magic, version, header_len = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ReplayFileError(
            f"replay file {path!r} is not a mlagents-plugins replay file: magic bytes {magic!r}, expected {MAGIC!r}"
        )
    if version != FORMAT_VERSION:
        raise ReplayFileError(
            f"replay file {path!r} has format version {version}; this reader supports version {FORMAT_VERSION}"
        )
    if header_len > min(_MAX_HEADER_BYTES, file_size - _PREFIX.size):
        raise ReplayFileError(
            f"replay file {path!r} is truncated or corrupt: header length {header_len} does not fit in "
            f"the file ({file_size} bytes)"
        )
    header_bytes = _read_exact(f, header_len, path, "header")
    try:
        header = json.loads(header_bytes.decode("utf-8"))
        _validate_header(header)
    except (ValueError, KeyError, TypeError) as e:
        raise ReplayFileError(f"replay file {path!r} has a corrupt header: {e}") from e
    expected = _PREFIX.size + header_len + header["payload_nbytes"] + _TRAILER_SIZE
    if file_size < expected:
        raise ReplayFileError(
            f"replay file {path!r} is truncated: {file_size} bytes, the header describes {expected}"
        )
    if file_size > expected:
        raise ReplayFileError(
            f"replay file {path!r} is corrupt: {file_size} bytes, {file_size - expected} more than the "
            f"{expected} the header describes"
        )
    return header, prefix + header_bytes


def _validate_header(h: Any) -> None:
    """Type/consistency checks so a damaged header fails here rather than deep inside numpy."""
    if not isinstance(h, dict):
        raise ValueError("header is not a JSON object")
    for key in ("capacity", "size", "write_pos", "total_added", "segment_counter", "payload_nbytes"):
        if not isinstance(h[key], int) or isinstance(h[key], bool) or h[key] < 0:
            raise ValueError(f"{key!r} must be a non-negative int, got {h[key]!r}")
    if h["capacity"] < 1 or h["size"] > h["capacity"]:
        raise ValueError(f"size {h['size']} / capacity {h['capacity']} are inconsistent")
    fields = {name: FieldSpec.from_json(spec) for name, spec in h["fields"].items()}
    if not fields:
        raise ValueError("no fields")
    if not isinstance(h["prioritized"], bool) or not isinstance(h["extra"], dict):
        raise ValueError("'prioritized' must be a bool and 'extra' an object")
    expect = [(f"field:{n}", s.np_dtype, (h["size"],) + s.shape) for n, s in fields.items()]
    expect.append(("segments", np.dtype(np.int64), (h["size"],)))
    if h["prioritized"]:
        if not isinstance(h["max_priority"], (int, float)) or not h["max_priority"] > 0:
            raise ValueError(f"'max_priority' must be a positive number, got {h['max_priority']!r}")
        expect.append(("priorities", np.dtype(np.float64), (h["size"],)))
    table = h["arrays"]
    if len(table) != len(expect):
        raise ValueError(f"array table has {len(table)} entries, expected {len(expect)}")
    total = 0
    for entry, (name, dtype, shape) in zip(table, expect):
        got_dtype = np.dtype(entry["dtype"])
        if entry["name"] != name or got_dtype != dtype.newbyteorder("<") or tuple(entry["shape"]) != shape:
            raise ValueError(
                f"array table entry {entry!r} does not match name {name!r}, dtype {dtype}, shape {shape}"
            )
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if entry["nbytes"] != nbytes:
            raise ValueError(f"array {name!r} has nbytes {entry['nbytes']}, expected {nbytes}")
        total += nbytes
    if total != h["payload_nbytes"]:
        raise ValueError(f"payload_nbytes {h['payload_nbytes']} != sum of arrays {total}")


def _open(path: str) -> Tuple[BinaryIO, int]:
    try:
        f = open(path, "rb")
    except FileNotFoundError as e:
        raise ReplayFileNotFoundError(f"replay file {path!r} does not exist") from e
    except IsADirectoryError as e:
        raise ReplayFileError(f"replay file {path!r} is a directory") from e
    except OSError as e:
        raise ReplayFileError(f"cannot open replay file {path!r}: {e}") from e
    return f, os.fstat(f.fileno()).st_size


def _check_trailer(f: BinaryIO, path: str, digest: "hashlib._Hash") -> None:
    trailer = _read_exact(f, _TRAILER_SIZE, path, "trailer")
    if trailer[: len(END_MAGIC)] != END_MAGIC:
        raise ReplayFileError(f"replay file {path!r} is corrupt: end marker missing")
    if trailer[len(END_MAGIC) :] != digest.digest():
        raise ReplayFileError(
            f"replay file {path!r} is corrupt: SHA-256 checksum mismatch (the file was damaged after saving)"
        )


def _spec_mismatch(path: str, file_fields: ReplaySpec, expected: ReplaySpec) -> Optional[str]:
    lines = []
    for name in sorted(set(file_fields) | set(expected)):
        got, want = file_fields.get(name), expected.get(name)
        if got == want:
            continue
        got_s = "missing" if got is None else f"shape {got.shape} dtype {got.dtype}"
        want_s = "not expected" if want is None else f"shape {want.shape} dtype {want.dtype}"
        lines.append(f"  field {name!r}: file has {got_s}, expected {want_s}")
    if not lines:
        return None
    return f"replay file {path!r} does not match the expected fields:\n" + "\n".join(lines)


def load_replay(
    path: PathLike,
    expected_fields: Optional[Mapping[str, FieldSpec]] = None,
    capacity: Optional[int] = None,
    prioritized: Optional[bool] = None,
) -> Tuple[ReplayBuffer, dict]:
    """Load a file written by ``save_replay``; returns ``(buffer, extra)``.

    Verifies magic, version, length and checksum (``ReplayFileError`` otherwise) and, when
    ``expected_fields`` is given, that the field specs match exactly (``ReplaySpecMismatchError``).

    ``capacity``: ``None`` or the saved capacity restores the buffer exactly (same ring layout, write
    position and counters).  A different capacity keeps the newest ``min(size, capacity)`` rows in time
    order, placed at ring rows ``0..m-1`` (``write_pos = m % capacity``), with their segment ids and
    priorities; ``total_added`` and ``segment_counter`` keep counting from the saved values.

    ``prioritized``: ``None`` keeps the file's choice; ``True`` on a file without priorities gives every
    row the initial max priority 1.0 (as if just added); ``False`` drops the file's priorities.
    """
    path = os.fspath(path)
    if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1):
        raise ValueError(f"load_replay: capacity must be a positive int or None, got {capacity!r}")
    if prioritized is not None and not isinstance(prioritized, bool):
        raise ValueError(f"load_replay: prioritized must be True, False or None, got {prioritized!r}")
    f, file_size = _open(path)
    with f:
        header, head_bytes = _read_header(f, path, file_size)
        digest = hashlib.sha256(head_bytes)
        fields = {name: FieldSpec.from_json(s) for name, s in header["fields"].items()}
        saved_cap, size = header["capacity"], header["size"]
        same_layout = capacity is None or capacity == saved_cap
        want_priorities = header["prioritized"] if prioritized is None else prioritized
        target = ReplayBuffer(saved_cap if same_layout else capacity, fields, prioritized=want_priorities)
        # Same capacity: read straight into the preallocated arrays (no copy).  Otherwise into temporaries.
        dest: Dict[str, np.ndarray] = {}
        for name in fields:
            dest[f"field:{name}"] = (
                target.field_array(name)[:size]
                if same_layout
                else np.empty((size,) + fields[name].shape, dtype=fields[name].np_dtype)
            )
        dest["segments"] = target.segment_array()[:size] if same_layout else np.empty(size, np.int64)
        if header["prioritized"]:
            dest["priorities"] = np.empty(size, dtype=np.float64)
        for entry in header["arrays"]:
            a = dest[entry["name"]]
            view = _bytes_view(a)
            if a.size and f.readinto(view) != entry["nbytes"]:
                raise ReplayFileError(f"replay file {path!r} is truncated: ended inside {entry['name']!r}")
            digest.update(view)
            if not np.little_endian and a.dtype.itemsize > 1:  # the file is little-endian
                a.byteswap(inplace=True)
        _check_trailer(f, path, digest)

    if expected_fields is not None:
        msg = _spec_mismatch(path, fields, as_replay_spec(expected_fields))
        if msg:
            raise ReplaySpecMismatchError(msg)

    try:
        if same_layout:
            target.restore_counters(size, header["write_pos"], header["total_added"], header["segment_counter"])
            keep = np.arange(size, dtype=np.int64)
        else:
            keep = _restore_resized(target, header, dest, fields)
        # ring row j < len(keep) of ``target`` holds the file's row keep[j]
        if target.priorities is not None:
            if header["prioritized"]:
                pri = np.zeros(target.capacity)
                pri[: len(keep)] = dest["priorities"][keep]
                target.priorities.load_state(pri, header["max_priority"])
            else:
                target.priorities.set_to_max(np.arange(len(keep)))
    except ValueError as e:
        raise ReplayFileError(f"replay file {path!r} has inconsistent contents: {e}") from e
    return target, header["extra"]


def _restore_resized(
    target: ReplayBuffer, header: dict, dest: Dict[str, np.ndarray], fields: ReplaySpec
) -> np.ndarray:
    """Copy the newest rows into ``target`` ring rows ``0..m-1``; returns the file rows used, in order."""
    saved_cap, size, cap = header["capacity"], header["size"], target.capacity
    oldest = header["write_pos"] if size == saved_cap else 0
    chron = (oldest + np.arange(size, dtype=np.int64)) % saved_cap
    keep = chron[size - min(size, cap) :]
    m = len(keep)
    for name in fields:
        target.field_array(name)[:m] = dest[f"field:{name}"][keep]
    target.segment_array()[:m] = dest["segments"][keep]
    target.restore_counters(m, m % cap, header["total_added"], header["segment_counter"])
    return keep


def inspect_replay(path: PathLike, verify: bool = False) -> dict:
    """Header summary of a replay file without loading its arrays; ``verify`` also checks the checksum.

    Returns ``{"path", "format_version", "count", "capacity", "write_pos", "total_added",
    "segment_counter", "prioritized", "fields": {name: {"shape", "dtype"}}, "bytes", "payload_bytes",
    "saved_unix", "extra", "verified"}`` (``verified`` is None when not checked).  Raises
    ``ReplayFileError`` for a bad file.
    """
    path = os.fspath(path)
    f, file_size = _open(path)
    with f:
        header, head_bytes = _read_header(f, path, file_size)
        verified = None
        if verify:
            digest = hashlib.sha256(head_bytes)
            remaining = header["payload_nbytes"]
            while remaining:
                chunk = f.read(min(_CHUNK, remaining))
                if not chunk:
                    raise ReplayFileError(f"replay file {path!r} is truncated: ended inside the payload")
                digest.update(chunk)
                remaining -= len(chunk)
            _check_trailer(f, path, digest)
            verified = True
    return {
        "path": path,
        "format_version": FORMAT_VERSION,
        "count": header["size"],
        "capacity": header["capacity"],
        "write_pos": header["write_pos"],
        "total_added": header["total_added"],
        "segment_counter": header["segment_counter"],
        "prioritized": header["prioritized"],
        "fields": header["fields"],
        "bytes": file_size,
        "payload_bytes": header["payload_nbytes"],
        "saved_unix": header.get("saved_unix"),
        "extra": header["extra"],
        "verified": verified,
    }
