"""Where a replay buffer's arrays live: numpy arrays in memory, or memory-mapped files in a folder (disk).

``MemoryStorage`` hands out zeroed numpy arrays.  ``DiskStorage`` hands out ``numpy.memmap`` views of raw
little-endian files in one folder (``<stem>.rows-<store id>/``, one file per array plus ``meta.json``), mapped
shared, so the rows live in the page cache and on disk rather than in the process's own memory: a buffer can be
larger than the memory the process may hold, and the operating system keeps the rows being sampled cached.
Writes reach the files through the mapping; ``flush`` makes them durable (msync).  The buffer keeps its small
per-row bookkeeping (segment ids, priorities) in memory either way.
"""
import json
import os
import re
import shutil
import time
import uuid
from typing import Dict, List, Optional

import numpy as np

from mlagents_plugins.replay.errors import ReplayFileError
from mlagents_plugins.replay.specs import FieldSpec
from mlagents_plugins.util.fsync import fsync_dir

META_FILE = "meta.json"
META_FORMAT = "mlagents-plugins-replay-rows"
ROWS_FOLDER_INFIX = ".rows-"


class MemoryStorage:
    """Arrays in the process's memory (the default)."""

    kind = "memory"
    persistent = False

    def array(self, key: str, spec: FieldSpec, rows: int, existing: bool = False) -> np.ndarray:
        """A zeroed ``[rows, *spec.shape]`` array (``key`` names it; ``existing`` is for ``DiskStorage``)."""
        if existing:
            raise ValueError(f"MemoryStorage has no existing array {key!r}")
        return np.zeros((rows,) + spec.shape, dtype=spec.np_dtype)

    def discard(self, key: str) -> None:
        """Forget array ``key`` (memory: nothing to do; the buffer drops its reference)."""

    def flush(self) -> None:
        """Nothing to make durable."""


def _file_name(key: str) -> str:
    """File of array ``key`` (``row:obs_0`` -> ``row-obs_0.bin``); characters outside [A-Za-z0-9_.-] become ``_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key.replace(":", "-")) + ".bin"


def rows_folder_name(stem: str, store_id: str) -> str:
    return f"{stem}{ROWS_FOLDER_INFIX}{store_id}"


class DiskStorage:
    """Arrays in memory-mapped files of ``folder`` (see the module docstring).

    Make one with ``create`` (a new folder) or ``open`` (a folder a saved replay state refers to).
    """

    kind = "disk"
    persistent = True

    def __init__(self, folder: str, store_id: str, readonly: bool) -> None:
        self.folder = folder
        self.store_id = store_id
        self.readonly = readonly
        self._maps: Dict[str, np.memmap] = {}

    @classmethod
    def create(cls, parent: str, stem: str) -> "DiskStorage":
        """A new, empty store folder ``<parent>/<stem>.rows-<new id>``."""
        store_id = uuid.uuid4().hex[:12]
        folder = os.path.join(parent, rows_folder_name(stem, store_id))
        os.makedirs(folder)
        meta = {"format": META_FORMAT, "version": 1, "store_id": store_id, "created_unix": time.time()}
        tmp = os.path.join(folder, META_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(folder, META_FILE))
        fsync_dir(folder)
        fsync_dir(parent)
        return cls(folder, store_id, readonly=False)

    @classmethod
    def open(cls, folder: str, store_id: str, readonly: bool, state_path: str) -> "DiskStorage":
        """The store folder a saved state (``state_path``) refers to; ``ReplayFileError`` if it is not that store."""
        meta_path = os.path.join(folder, META_FILE)
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except FileNotFoundError as e:
            raise ReplayFileError(
                f"replay file {state_path!r} keeps its rows in {folder!r}, which is missing or not a replay rows "
                f"folder (no {META_FILE})"
            ) from e
        except (OSError, ValueError) as e:
            raise ReplayFileError(f"replay rows folder {folder!r} has an unreadable {META_FILE}: {e}") from e
        if not isinstance(meta, dict) or meta.get("format") != META_FORMAT or meta.get("store_id") != store_id:
            raise ReplayFileError(
                f"replay file {state_path!r} expects the rows of store {store_id!r} in {folder!r}, but that folder "
                f"holds {meta.get('store_id') if isinstance(meta, dict) else meta!r}: the folder was replaced"
            )
        return cls(folder, store_id, readonly=readonly)

    def path_of(self, key: str) -> str:
        return os.path.join(self.folder, _file_name(key))

    def array(self, key: str, spec: FieldSpec, rows: int, existing: bool = False) -> np.ndarray:
        """The ``[rows, *spec.shape]`` array ``key``: a new zero-filled (sparse) file, or with ``existing`` the
        file already there, which must have exactly that size (``ReplayFileError`` otherwise)."""
        shape = (rows,) + spec.shape
        dtype = spec.np_dtype.newbyteorder("<")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0:
            return np.zeros(shape, dtype=spec.np_dtype)
        path = self.path_of(key)
        if existing:
            try:
                size = os.path.getsize(path)
            except OSError as e:
                raise ReplayFileError(f"replay rows file {path!r} is missing: {e}") from e
            if size != nbytes:
                raise ReplayFileError(
                    f"replay rows file {path!r} has {size} bytes, expected {nbytes} ({shape} of {spec.dtype}): "
                    "it was truncated or replaced"
                )
            mode = "r" if self.readonly else "r+"
        else:
            if self.readonly:
                raise ValueError(f"cannot create {path!r} in a store opened read-only")
            mode = "w+"
        mapped = np.memmap(path, dtype=dtype, mode=mode, shape=shape)
        self._maps[key] = mapped
        return mapped

    def discard(self, key: str) -> None:
        """Unmap array ``key`` and delete its file (an array the buffer replaced and no saved state refers to)."""
        self._maps.pop(key, None)
        try:
            os.remove(self.path_of(key))
        except OSError:
            pass  # e.g. Windows keeps a mapped file; the next save's clean-up removes it

    def flush(self) -> None:
        """Write every dirty page of every mapped array to disk and wait for it (msync), then fsync each file and
        the folder, so files created since the last flush (a grown finals table) and their sizes are durable."""
        if self.readonly:
            return
        for key, mapped in self._maps.items():
            mapped.flush()
            fd = os.open(self.path_of(key), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(self.folder)

    def remove(self) -> None:
        """Delete this store's folder (a store no saved state refers to)."""
        self._maps.clear()
        shutil.rmtree(self.folder, ignore_errors=True)

    def files(self) -> List[str]:
        return [self.path_of(k) for k in self._maps]

    def remove_other_files(self) -> None:
        """Delete files of this folder that no array in use maps (arrays replaced since the previous save)."""
        keep = {os.path.basename(p) for p in self.files()} | {META_FILE}
        for name in os.listdir(self.folder):
            if name not in keep:
                try:
                    os.remove(os.path.join(self.folder, name))
                except OSError:
                    pass


def remove_rows_folders(parent: str, stem: str, keep: Optional[str] = None) -> None:
    """Delete ``<parent>/<stem>.rows-*`` store folders except ``keep`` (a folder path)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        path = os.path.join(parent, name)
        if name.startswith(stem + ROWS_FOLDER_INFIX) and os.path.isdir(path):
            if keep is None or os.path.abspath(path) != os.path.abspath(keep):
                shutil.rmtree(path, ignore_errors=True)
