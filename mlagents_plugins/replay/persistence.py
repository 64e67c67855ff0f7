"""Crash-safe, versioned, checksummed replay files; the small state file of a disk-backed buffer.

File layout (all integers little-endian)::

    offset 0   8 bytes   MAGIC b"MLAPRPLY"
    offset 8   uint32    format version (FORMAT_VERSION; version 1, the release's, is read too)
    offset 12  uint64    header length H
    offset 20  H bytes   UTF-8 JSON header: field specs (with ``next_of``), capacity, size, write_pos,
                         total_added, segment_counter, first_live_segment, prioritized/max_priority, storage,
                         the payload array table, extra
    ...        P bytes   payload: the arrays of the table, in order, raw C-order little-endian bytes
    ...        8 bytes   END_MAGIC b"MLAPEND."
    ...        32 bytes  SHA-256 of every byte before END_MAGIC (prefix + header + payload)

Payload of a self-contained file (``storage.kind == "memory"``, what ``save_replay`` writes): ``field:<name>``
of every stored field (the filled rows in ring order, so a resume continues with the same contents, order and
write position), ``final:<name>`` of every successor field (one value per live segment, oldest first),
``segments`` and ``priorities`` (if prioritized).  Version 1 files store successor fields per row like any other
field (``field:<name>``, no ``final:``); loading them into a buffer that stores those fields once checks every
row against its successor and keeps the segments' last values.

A disk-backed buffer (``storage.kind == "disk"``, what ``save_replay_state`` writes) keeps its rows in a folder
of memory-mapped files next to the state file (``<state file>.rows-<store id>/``, see ``replay.storage``); the
state file holds the counters, where the rows are (folder, store id, physical rows, next physical row, finals
slots, a save id) and the priorities.  A checkpoint flushes the mapped rows (msync) and then writes only this
state, atomically.  Until the next save the buffer does not overwrite the rows and finals that state refers to
(``ReplayBuffer.mark_saved``), so a crash at any moment leaves the last state exact; where it has to (more rows
between two saves than it keeps spare), it first writes ``<state file>.overwritten`` naming that save, and
loading the state then fails with the reason instead of returning rows that changed.

Crash safety: every file is written as ``<path>.tmp-<pid>``, flushed and fsynced, ``os.replace``d over
``path`` (atomic on POSIX) and the directory fsynced, so a crash or SIGKILL at any point leaves either the
previous file or the new one, never a mix.  Loading checks the magic, version, exact length and checksum
and raises ``ReplayFileError`` (never an empty buffer) when anything is off.
"""
import hashlib
import json
import os
import re
import struct
import time
import uuid
from typing import Any, BinaryIO, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.errors import (
    ReplayFileError,
    ReplayFileNotFoundError,
    ReplaySaveError,
    ReplaySpecMismatchError,
)
from mlagents_plugins.replay.specs import FieldSpec, ReplaySpec, as_replay_spec, successor_fields
from mlagents_plugins.replay.storage import DiskStorage, remove_rows_folders
from mlagents_plugins.util.fsync import fsync_dir

MAGIC = b"MLAPRPLY"
END_MAGIC = b"MLAPEND."
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
STORAGE_MEMORY = "memory"
STORAGE_DISK = "disk"
OVERWRITTEN_SUFFIX = ".overwritten"
_PREFIX = struct.Struct("<8sIQ")  # magic, version, header length
_DIGEST_SIZE = hashlib.sha256().digest_size
_TRAILER_SIZE = len(END_MAGIC) + _DIGEST_SIZE
_MAX_HEADER_BYTES = 64 * 1024 * 1024
_CHUNK = 16 * 1024 * 1024

PathLike = Union[str, "os.PathLike[str]"]
#: ``(capacity, fields, prioritized) -> ReplayBuffer``: makes the buffer a file is loaded into.
BufferFactory = Callable[[int, ReplaySpec, bool], ReplayBuffer]


def _bytes_view(a: np.ndarray) -> memoryview:
    return memoryview(a).cast("B") if a.size else memoryview(b"")


def _le(a: np.ndarray) -> np.ndarray:
    """Contiguous little-endian version of ``a`` (a no-op view on little-endian machines)."""
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _chunk_rows(row_bytes: int) -> int:
    return max(1, _CHUNK // max(1, row_bytes))


class _Array:
    """One payload array: its table entry and its rows, produced in chunks (``rows(start, stop)``)."""

    def __init__(self, name: str, spec: FieldSpec, count: int, rows: Callable[[int, int], np.ndarray]) -> None:
        self.name, self.spec, self.count, self.rows = name, spec, count, rows

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.spec.shape, dtype=np.int64)) * self.spec.np_dtype.itemsize

    def entry(self) -> dict:
        dtype = self.spec.np_dtype.newbyteorder("<")
        return {"name": self.name, "dtype": dtype.str, "shape": [self.count, *self.spec.shape],
                "nbytes": self.count * self.row_bytes}

    def chunks(self) -> Iterator[np.ndarray]:
        step = _chunk_rows(self.row_bytes)
        for start in range(0, self.count, step):
            yield _le(self.rows(start, min(self.count, start + step)))


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


def _header(buffer: ReplayBuffer, arrays: List[_Array], storage: dict, extra: Optional[dict]) -> bytes:
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise ValueError(f"save_replay: extra must be a dict of JSON-serialisable metadata, got {type(extra)}")
    table = [a.entry() for a in arrays]
    header = {
        "format": "mlagents-plugins-replay",
        "capacity": buffer.capacity,
        "size": buffer.size,
        "write_pos": buffer.write_pos,
        "total_added": buffer.total_added,
        "segment_counter": buffer.segment_counter,
        "first_live_segment": buffer.first_live_segment,
        "fields": {name: spec.to_json() for name, spec in buffer.fields.items()},
        "prioritized": buffer.prioritized,
        "max_priority": buffer.priorities.max_priority if buffer.priorities is not None else None,
        "storage": storage,
        "arrays": table,
        "payload_nbytes": int(sum(t["nbytes"] for t in table)),
        "checksum": "sha256",
        "saved_unix": time.time(),
        "extra": extra,
    }
    try:
        return json.dumps(header, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ValueError(f"save_replay: extra must be JSON-serialisable (no NaN/inf): {e}") from e


def _small_arrays(buffer: ReplayBuffer) -> List[_Array]:
    out = []
    if buffer.priorities is not None:
        pri = buffer.priorities.priorities()
        out.append(_Array("priorities", FieldSpec((), "float64"), buffer.size, lambda a, b: pri[a:b]))
    return out


def _write_atomically(path: str, header_bytes: bytes, arrays: List[_Array]) -> int:
    """Write prefix, header, the arrays' chunks and the trailer to ``path`` (see the module docstring)."""
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
            for array in arrays:
                for chunk in array.chunks():
                    view = _bytes_view(chunk)
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


def save_replay(path: PathLike, buffer: ReplayBuffer, extra: Optional[dict] = None) -> int:
    """Atomically write ``buffer`` (and JSON-serialisable ``extra``) to ``path`` as one self-contained file;
    returns the file size.  A crash or kill mid-save leaves the previous file at ``path`` intact."""
    path = os.fspath(path)
    fields = buffer.fields
    arrays = [
        _Array(f"field:{name}", spec, buffer.size, lambda a, b, name=name: buffer.rows_of(name, a, b))
        for name, spec in fields.items()
        if name not in buffer.successors
    ]
    first = buffer.first_live_segment
    live = buffer.segment_counter - first
    for name in buffer.successors:
        arrays.append(_Array(f"final:{name}", fields[name].values, live,
                             lambda a, b, name=name: buffer.finals(name, np.arange(first + a, first + b))))
    segments = buffer.segment_array()
    arrays.append(_Array("segments", FieldSpec((), "int64"), buffer.size, lambda a, b: segments[a:b]))
    arrays += _small_arrays(buffer)
    nbytes = _write_atomically(path, _header(buffer, arrays, {"kind": STORAGE_MEMORY}, extra), arrays)
    # The file holds every row now: rows folders an earlier disk-backed state here referred to are unused.
    own = buffer.storage.folder if buffer.storage.persistent else None
    remove_rows_folders(os.path.dirname(os.path.abspath(path)), os.path.basename(path), keep=own)
    return nbytes


def save_replay_state(path: PathLike, buffer: ReplayBuffer, extra: Optional[dict] = None) -> int:
    """Save a disk-backed ``buffer`` in place: flush its mapped rows, then atomically write the small state file
    ``path`` referring to them (see the module docstring); returns the state file's size.

    The buffer's rows folder must lie in ``path``'s folder.  Afterwards the buffer keeps this save's rows intact
    until the next one, and files of earlier saves (replaced finals, other rows folders) are removed.
    """
    path = os.fspath(path)
    storage = buffer.storage
    directory = os.path.dirname(os.path.abspath(path))
    if not storage.persistent or os.path.dirname(os.path.abspath(storage.folder)) != directory:
        raise ValueError(f"save_replay_state needs a disk-backed buffer whose rows folder lies in {directory}")
    save_id = uuid.uuid4().hex
    state = {
        "kind": STORAGE_DISK,
        "folder": os.path.basename(storage.folder),
        "store_id": storage.store_id,
        "physical_rows": buffer.physical_rows,
        "phys_next": buffer.phys_next,
        "finals_slots": buffer.finals_slots,
        "save_id": save_id,
    }
    arrays = _small_arrays(buffer)
    header = _header(buffer, arrays, state, extra)
    try:
        buffer.flush()
    except OSError as err:
        raise ReplaySaveError(
            f"could not write the replay rows in {storage.folder} to disk: {err}; the replay state {path} is "
            "unchanged (it refers to the rows of its own save, which are kept). Free disk space and run again "
            "with --resume."
        ) from err
    nbytes = _write_atomically(path, header, arrays)
    _protect(buffer, path, save_id)
    try:
        os.remove(path + OVERWRITTEN_SUFFIX)
    except OSError:
        pass
    storage.remove_other_files()
    remove_rows_folders(directory, os.path.basename(path), keep=storage.folder)
    return nbytes


def _protect(buffer: ReplayBuffer, path: str, save_id: str) -> None:
    """Keep the rows of save ``save_id`` (state file ``path``) until the next save; record when that fails."""

    def overwritten(reason: str) -> None:
        _write_overwritten_mark(path, save_id, reason)

    buffer.on_saved_rows_overwritten = overwritten
    buffer.mark_saved()


def _write_overwritten_mark(path: str, save_id: str, reason: str) -> None:
    mark = path + OVERWRITTEN_SUFFIX
    tmp = f"{mark}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump({"save_id": save_id, "reason": reason, "unix": time.time()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, mark)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


# ---------------------------------------------------------------------------------------------- reading
def _read_exact(f: BinaryIO, n: int, path: str, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ReplayFileError(f"replay file {path!r} is truncated: ended inside the {what}")
    return data


def _read_header(f: BinaryIO, path: str, file_size: int) -> Tuple[dict, bytes, int]:
    """Parse and validate prefix and header; checks the file length against the header's payload size.
    Returns ``(header, prefix + header bytes, format version)``."""
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
    if version not in READABLE_VERSIONS:
        raise ReplayFileError(
            f"replay file {path!r} has format version {version}; this reader supports version {FORMAT_VERSION} "
            "(and reads the release's version 1)"
        )
    if header_len > min(_MAX_HEADER_BYTES, file_size - _PREFIX.size):
        raise ReplayFileError(
            f"replay file {path!r} is truncated or corrupt: header length {header_len} does not fit in "
            f"the file ({file_size} bytes)"
        )
    header_bytes = _read_exact(f, header_len, path, "header")
    try:
        header = json.loads(header_bytes.decode("utf-8"))
        _validate_header(header, version)
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
    return header, prefix + header_bytes, version


def _live_segments(h: dict) -> int:
    return h["segment_counter"] - h["first_live_segment"] if h["size"] else 0


def _validate_header(h: Any, version: int) -> None:
    """Type/consistency checks so a damaged header fails here rather than deep inside numpy."""
    if not isinstance(h, dict):
        raise ValueError("header is not a JSON object")
    if version == 1:  # the release's header: every field per row, no storage section
        h.setdefault("storage", {"kind": STORAGE_MEMORY})
        h.setdefault("first_live_segment", 0)
    counters = ("capacity", "size", "write_pos", "total_added", "segment_counter", "payload_nbytes",
                "first_live_segment")
    for key in counters:
        if not isinstance(h[key], int) or isinstance(h[key], bool) or h[key] < 0:
            raise ValueError(f"{key!r} must be a non-negative int, got {h[key]!r}")
    if h["capacity"] < 1 or h["size"] > h["capacity"]:
        raise ValueError(f"size {h['size']} / capacity {h['capacity']} are inconsistent")
    if h["first_live_segment"] > h["segment_counter"]:
        raise ValueError(f"first_live_segment {h['first_live_segment']} > segment_counter {h['segment_counter']}")
    fields = as_replay_spec({name: FieldSpec.from_json(spec) for name, spec in h["fields"].items()})
    successors = successor_fields(fields)
    if version == 1 and successors:
        raise ValueError("version 1 files have no next_of fields")
    if not isinstance(h["prioritized"], bool) or not isinstance(h["extra"], dict):
        raise ValueError("'prioritized' must be a bool and 'extra' an object")
    storage = h["storage"]
    if not isinstance(storage, dict) or storage.get("kind") not in (STORAGE_MEMORY, STORAGE_DISK):
        raise ValueError(f"'storage' must name kind {STORAGE_MEMORY!r} or {STORAGE_DISK!r}, got {storage!r}")
    expect: List[Tuple[str, np.dtype, tuple]] = []
    if storage["kind"] == STORAGE_MEMORY:
        expect = [(f"field:{n}", s.np_dtype, (h["size"],) + s.shape) for n, s in fields.items() if n not in successors]
        expect += [(f"final:{n}", fields[n].np_dtype, (_live_segments(h),) + fields[n].shape) for n in successors]
        expect.append(("segments", np.dtype(np.int64), (h["size"],)))
    else:
        _validate_disk_state(storage, h)
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


def _validate_disk_state(storage: dict, h: dict) -> None:
    for key in ("physical_rows", "phys_next", "finals_slots"):
        if not isinstance(storage.get(key), int) or isinstance(storage.get(key), bool) or storage[key] < 0:
            raise ValueError(f"storage {key!r} must be a non-negative int, got {storage.get(key)!r}")
    for key in ("folder", "store_id", "save_id"):
        if not isinstance(storage.get(key), str) or not storage[key]:
            raise ValueError(f"storage {key!r} must be a non-empty string, got {storage.get(key)!r}")
    if os.path.basename(storage["folder"]) != storage["folder"] or storage["folder"] in (".", ".."):
        raise ValueError(f"storage folder {storage['folder']!r} must be a folder name next to the state file")
    if storage["physical_rows"] < h["capacity"] or storage["phys_next"] >= storage["physical_rows"]:
        raise ValueError(f"storage rows {storage['physical_rows']}/{storage['phys_next']} do not fit capacity "
                         f"{h['capacity']}")


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
    """Fields whose names, shapes or dtypes differ; a field the buffer stores once that the file stores per row
    (a version 1 file) is the same field."""
    lines = []
    for name in sorted(set(file_fields) | set(expected)):
        got, want = file_fields.get(name), expected.get(name)
        if got is not None and want is not None and got.values == want.values:
            if got.next_of is not None and got.next_of != want.next_of:
                lines.append(f"  field {name!r}: file stores it once as the next row's {got.next_of!r}, expected "
                             f"{'one value per row' if want.next_of is None else 'the next row of ' + want.next_of}")
            elif want.next_of is not None and got.next_of is None and want.next_of not in file_fields:
                lines.append(f"  field {name!r}: expected as the next row of {want.next_of!r}, which the file lacks")
            continue
        got_s = "missing" if got is None else f"shape {got.shape} dtype {got.dtype}"
        want_s = "not expected" if want is None else f"shape {want.shape} dtype {want.dtype}"
        lines.append(f"  field {name!r}: file has {got_s}, expected {want_s}")
    if not lines:
        return None
    return f"replay file {path!r} does not match the expected fields:\n" + "\n".join(lines)


class _Target:
    """The buffer a file is loaded into and where each of the file's ring rows goes in it."""

    def __init__(self, path: str, header: dict, buffer: ReplayBuffer, segments: np.ndarray) -> None:
        self.path, self.buffer = path, buffer
        size, saved_cap, cap = header["size"], header["capacity"], buffer.capacity
        if cap == saved_cap:
            # same ring layout: file row r is ring index r
            self.dest = np.arange(size, dtype=np.int64)
            buffer.segment_array()[:size] = segments
            buffer.set_counters(size, header["write_pos"], header["total_added"], header["segment_counter"])
        else:
            # the newest min(size, capacity) rows, in time order at ring indices 0..m-1
            oldest = header["write_pos"] if size == saved_cap else 0
            chron = (oldest + np.arange(size, dtype=np.int64)) % saved_cap
            keep = chron[size - min(size, cap):]
            self.dest = np.full(size, -1, dtype=np.int64)
            self.dest[keep] = np.arange(len(keep), dtype=np.int64)
            buffer.segment_array()[: len(keep)] = segments[keep]
            buffer.set_counters(len(keep), len(keep) % cap, header["total_added"], header["segment_counter"])
        self.kept = self.dest >= 0
        buffer.rebuild_segments()
        buffer.store_physical_segments()

    def rows(self, name: str, start: int, values: np.ndarray) -> None:
        """Values of field ``name`` at the file's ring rows ``start, start + 1, ...``."""
        dest = self.dest[start : start + len(values)]
        keep = self.kept[start : start + len(values)]
        if name in self.buffer.successors:
            self._successor_rows(name, dest[keep], values[keep])
        elif keep.all():
            self.buffer.write_rows(name, dest, values)
        elif keep.any():
            self.buffer.write_rows(name, dest[keep], values[keep])

    def _successor_rows(self, name: str, dest: np.ndarray, values: np.ndarray) -> None:
        """A field the file stores per row that the buffer stores once: every row but a segment's last must be its
        source's next row (the buffer's source rows are in place); the last rows are the finals."""
        buffer = self.buffer
        last = buffer.steps_to_segment_end(dest) == 0
        if last.any():
            buffer.write_finals(name, buffer.segment_ids(dest[last]), values[last])
        inner = dest[~last]
        if inner.size:
            source = buffer.successors[name]
            dtype = buffer.fields[name].np_dtype
            nxt = buffer.gather((inner + 1) % buffer.capacity, [source])[source]
            got = np.ascontiguousarray(values[~last], dtype=dtype).view(np.uint8).reshape(len(inner), -1)
            same = (got == np.ascontiguousarray(nxt, dtype=dtype).view(np.uint8).reshape(got.shape)).all(axis=1)
            if not same.all():
                row = int(inner[np.flatnonzero(~same)[0]])
                raise ReplayFileError(
                    f"replay file {self.path!r}: field {name!r} of ring row {row} is not the next row's "
                    f"{buffer.successors[name]!r}, so it cannot be stored once; the file was not written by a "
                    "trainer of this package"
                )

    def finals(self, name: str, first_segment: int, values: np.ndarray) -> None:
        """Final values of the file's segments ``first_segment, first_segment + 1, ...``."""
        segments = first_segment + np.arange(len(values), dtype=np.int64)
        live = segments >= self.buffer.first_live_segment
        if live.any():
            self.buffer.write_finals(name, segments[live], values[live])


def _table_offsets(header: dict, start: int) -> Dict[str, Tuple[int, dict]]:
    out, offset = {}, start
    for entry in header["arrays"]:
        out[entry["name"]] = (offset, entry)
        offset += entry["nbytes"]
    return out


def _read_array_at(f: BinaryIO, path: str, offset: int, entry: dict) -> np.ndarray:
    f.seek(offset)
    data = _read_exact(f, entry["nbytes"], path, repr(entry["name"]))
    return np.frombuffer(data, dtype=np.dtype(entry["dtype"])).reshape(entry["shape"]).astype(
        np.dtype(entry["dtype"]).newbyteorder("="))


def _stream_arrays(f: BinaryIO, path: str, header: dict, digest: "hashlib._Hash",
                   sink: Callable[[str, int, np.ndarray], None]) -> None:
    """Read the payload in order, chunk by chunk, into the digest and ``sink(array name, first row, rows)``."""
    for entry in header["arrays"]:
        dtype = np.dtype(entry["dtype"])
        shape = tuple(entry["shape"])
        row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
        step = _chunk_rows(row_bytes)
        for start in range(0, shape[0], step):
            n = min(shape[0], start + step) - start
            data = _read_exact(f, n * row_bytes, path, repr(entry["name"]))
            digest.update(data)
            sink(entry["name"], start, np.frombuffer(data, dtype=dtype).reshape((n,) + shape[1:]))


def load_replay(
    path: PathLike,
    expected_fields: Optional[Mapping[str, FieldSpec]] = None,
    capacity: Optional[int] = None,
    prioritized: Optional[bool] = None,
    new_buffer: Optional[BufferFactory] = None,
    reopen: bool = False,
) -> Tuple[ReplayBuffer, dict]:
    """Load a file written by ``save_replay`` or ``save_replay_state`` (or release 0.1.0); returns
    ``(buffer, extra)``.

    Verifies magic, version, length and checksum (``ReplayFileError`` otherwise) and, when
    ``expected_fields`` is given, that the fields match (``ReplaySpecMismatchError``); the buffer then has
    ``expected_fields``' layout (a version 1 file's per-row successor fields are checked and stored once).

    ``capacity``: ``None`` or the saved capacity restores the buffer exactly (same ring layout, write
    position and counters).  A different capacity keeps the newest ``min(size, capacity)`` rows in time
    order, placed at ring rows ``0..m-1`` (``write_pos = m % capacity``), with their segment ids and
    priorities; ``total_added`` and ``segment_counter`` keep counting from the saved values.

    ``prioritized``: ``None`` keeps the file's choice; ``True`` on a file without priorities gives every
    row the initial max priority 1.0 (as if just added); ``False`` drops the file's priorities.

    ``new_buffer(capacity, fields, prioritized)`` makes the buffer the rows are copied into (default: in
    memory).  ``reopen``: a disk-backed state with the same capacity and layout is continued in place, its rows
    folder mapped read-write (its next ``save_replay_state`` replaces this state); otherwise its rows are
    copied.
    """
    path = os.fspath(path)
    if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1):
        raise ValueError(f"load_replay: capacity must be a positive int or None, got {capacity!r}")
    if prioritized is not None and not isinstance(prioritized, bool):
        raise ValueError(f"load_replay: prioritized must be True, False or None, got {prioritized!r}")
    f, file_size = _open(path)
    with f:
        header, head_bytes, _ = _read_header(f, path, file_size)
        fields = as_replay_spec({name: FieldSpec.from_json(s) for name, s in header["fields"].items()})
        target_fields = fields
        if expected_fields is not None:
            target_fields = as_replay_spec(expected_fields)
            msg = _spec_mismatch(path, fields, target_fields)
            if msg:
                raise ReplaySpecMismatchError(msg)
        cap = header["capacity"] if capacity is None else capacity
        want_priorities = header["prioritized"] if prioritized is None else prioritized
        make = new_buffer or (lambda c, fl, p: ReplayBuffer(c, fl, prioritized=p))
        small: Dict[str, np.ndarray] = {}
        if header["storage"]["kind"] == STORAGE_DISK:
            digest = hashlib.sha256(head_bytes)
            _stream_arrays(f, path, header, digest, lambda n, s, v: small.setdefault(n, []).append(v.copy()))
            _check_trailer(f, path, digest)
            small = {n: np.concatenate(v) for n, v in small.items()}
            target = _load_disk_state(path, header, fields, target_fields, cap, want_priorities, make, reopen)
        else:
            target = _load_file(f, path, header, head_bytes, fields, target_fields, cap, want_priorities, make,
                                small)
    _restore_priorities(path, header, target, small.get("priorities"))
    return target, header["extra"]


def _load_file(f, path, header, head_bytes, fields, target_fields, cap, want_priorities, make, small):
    """Rows of a self-contained file into a new buffer, in one pass over the file (plus a second over the fields
    a version 1 file stores per row that the buffer stores once)."""
    offsets = _table_offsets(header, len(head_bytes))
    seg_offset, seg_entry = offsets["segments"]
    segments = _read_array_at(f, path, seg_offset, seg_entry)
    f.seek(len(head_bytes))
    target_buffer = make(cap, target_fields, want_priorities)
    try:
        target = _Target(path, header, target_buffer, segments)
    except ValueError as e:
        raise ReplayFileError(f"replay file {path!r} has inconsistent contents: {e}") from e
    converted = [n for n in target_buffer.successors if fields[n].next_of is None]
    digest = hashlib.sha256(head_bytes)

    def sink(name: str, start: int, values: np.ndarray) -> None:
        kind, _, field = name.partition(":")
        if kind == "field" and field not in converted:
            target.rows(field, start, values)
        elif kind == "final":
            target.finals(field, header["first_live_segment"] + start, values)
        elif name == "segments":
            if not np.array_equal(values, segments[start : start + len(values)]):
                raise ReplayFileError(f"replay file {path!r} changed while it was read")
        elif name == "priorities":
            small.setdefault(name, []).append(values.astype(np.float64))

    _stream_arrays(f, path, header, digest, sink)
    _check_trailer(f, path, digest)
    if "priorities" in small:
        small["priorities"] = np.concatenate(small["priorities"])
    for name in converted:  # after every stored field is in place: check against the next rows
        offset, entry = offsets[f"field:{name}"]
        f.seek(offset)
        _stream_arrays(f, path, {"arrays": [entry]}, hashlib.sha256(),
                       lambda n, s, v, name=name: target.rows(name, s, v))
    return target_buffer


def _load_disk_state(path, header, fields, target_fields, cap, want_priorities, make, reopen) -> ReplayBuffer:
    """A disk-backed buffer's state: its rows folder reopened in place, or copied into a new buffer."""
    storage_info = header["storage"]
    _check_not_overwritten(path, storage_info["save_id"])
    folder = os.path.join(os.path.dirname(os.path.abspath(path)), storage_info["folder"])
    in_place = reopen and cap == header["capacity"] and dict(target_fields) == dict(fields)
    storage = DiskStorage.open(folder, storage_info["store_id"], readonly=not in_place, state_path=path)
    try:
        source = ReplayBuffer(
            header["capacity"], fields, prioritized=want_priorities if in_place else False, storage=storage,
            physical_rows=storage_info["physical_rows"], existing=True, finals_slots=storage_info["finals_slots"],
        )
        source.set_counters(header["size"], header["write_pos"], header["total_added"], header["segment_counter"],
                            storage_info["phys_next"])
        source.read_physical_segments()
        source.rebuild_segments()
        if source.size and source.first_live_segment != header["first_live_segment"]:
            raise ValueError(f"first live segment {source.first_live_segment} in the rows, "
                             f"{header['first_live_segment']} in the state")
    except ValueError as e:
        raise ReplayFileError(f"replay rows in {folder!r} do not match the state {path!r}: {e}") from e
    if in_place:
        _protect(source, path, storage_info["save_id"])
        return source
    target_buffer = make(cap, target_fields, want_priorities)
    try:
        target = _Target(path, header, target_buffer, source.segment_array()[: header["size"]].copy())
    except ValueError as e:
        raise ReplayFileError(f"replay file {path!r} has inconsistent contents: {e}") from e
    stored = [n for n in fields if n not in source.successors]
    for name in sorted(stored, key=lambda n: n in target_buffer.successors):  # sources before conversions
        step = _chunk_rows(fields[name].np_dtype.itemsize * int(np.prod(fields[name].shape, dtype=np.int64)))
        for start in range(0, source.size, step):
            target.rows(name, start, source.rows_of(name, start, min(source.size, start + step)))
    first = source.first_live_segment
    for name in source.successors:
        target.finals(name, first, source.finals(name, np.arange(first, source.segment_counter)))
    return target_buffer


def _check_not_overwritten(path: str, save_id: str) -> None:
    mark = path + OVERWRITTEN_SUFFIX
    try:
        with open(mark) as fh:
            info = json.load(fh)
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        info = {"save_id": save_id, "reason": f"(unreadable {mark})"}
    if isinstance(info, dict) and info.get("save_id") == save_id:
        raise ReplayFileError(
            f"replay file {path!r}: the disk-backed buffer was written past this save, so its rows are no longer "
            f"those of the save ({info.get('reason')}; see {mark}). Keep at most as many steps between two "
            "checkpoints as the buffer keeps spare (checkpoint_interval + 2 x time_horizon <= buffer_size)."
        )


def _restore_priorities(path: str, header: dict, target: ReplayBuffer, saved: Optional[np.ndarray]) -> None:
    if target.priorities is None:
        return
    try:
        if header["prioritized"] and saved is not None:
            size, saved_cap = header["size"], header["capacity"]
            if target.capacity == saved_cap:
                keep = np.arange(size, dtype=np.int64)
            else:
                oldest = header["write_pos"] if size == saved_cap else 0
                chron = (oldest + np.arange(size, dtype=np.int64)) % saved_cap
                keep = chron[size - min(size, target.capacity):]
            pri = np.zeros(target.capacity)
            pri[: len(keep)] = saved[keep]
            target.priorities.load_state(pri, header["max_priority"])
        else:
            target.priorities.set_to_max(np.arange(target.size))
    except ValueError as e:
        raise ReplayFileError(f"replay file {path!r} has inconsistent contents: {e}") from e


def inspect_replay(path: PathLike, verify: bool = False) -> dict:
    """Header summary of a replay file without loading its arrays; ``verify`` also checks the checksum.

    Returns ``{"path", "format_version", "count", "capacity", "write_pos", "total_added",
    "segment_counter", "prioritized", "fields": {name: {"shape", "dtype"[, "next_of"]}}, "storage", "bytes",
    "payload_bytes", "saved_unix", "extra", "verified"}`` (``verified`` is None when not checked; ``storage``
    is ``{"kind": "memory"}`` or a disk-backed state's rows folder and layout).  Raises ``ReplayFileError`` for
    a bad file.
    """
    path = os.fspath(path)
    f, file_size = _open(path)
    with f:
        header, head_bytes, version = _read_header(f, path, file_size)
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
        "format_version": version,
        "count": header["size"],
        "capacity": header["capacity"],
        "write_pos": header["write_pos"],
        "total_added": header["total_added"],
        "segment_counter": header["segment_counter"],
        "prioritized": header["prioritized"],
        "fields": header["fields"],
        "storage": header["storage"],
        "bytes": file_size,
        "payload_bytes": header["payload_nbytes"],
        "saved_unix": header.get("saved_unix"),
        "extra": header["extra"],
        "verified": verified,
    }
