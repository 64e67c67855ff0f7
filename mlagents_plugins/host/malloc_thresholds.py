"""The trainer process keeps the memory its updates free, instead of handing it back to the OS after every update.

Every gradient update allocates its temporaries afresh (the compiled step's buffers, the sampled batch) and frees
them at its end.  glibc's malloc returns the freed top of its heap to the OS once it exceeds the trim threshold,
and serves blocks above the mmap threshold with their own mappings, unmapped on ``free``; both thresholds start at
128 KiB and grow with the largest mapped block freed so far (the trim threshold to twice it), so a process whose
update frees more than that at once gives those pages back after every update and takes them again in the next:
the kernel maps and zeroes each page on first touch.  In an ``mlagents-learn`` run of fast_sac on HalfCheetah-v5
(2x256, batch 256) that was about 400 page faults per env step, inside the compiled step's kernels and copies
(``perf record -e page-faults``; bench/results/fast-sac-speed-zen4-2026-12-03).

The replacement fixes the thresholds once, at start-up, with ``mallopt``: blocks below ``MMAP_THRESHOLD`` come
from the heap and freed memory is given back only when more than ``TRIM_THRESHOLD`` of it sits at the heap's top,
so a run's steady state reuses the same pages.  The cost is memory: a process keeps up to ``TRIM_THRESHOLD`` of
freed heap (and fixing the thresholds ends glibc's own adjustment of them).  Only where the C library is glibc
(Linux); elsewhere nothing changes.  Installed by the stats-writer hook in ``mlagents-learn``'s process (built-in
trainers there too); ``MLAGENTS_PLUGINS_MALLOC_DEFAULTS=1`` keeps glibc's defaults.
"""
import ctypes
import ctypes.util
import sys
from typing import Callable, Optional

from mlagents_plugins.host import patches

#: ``mallopt`` parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: blocks up to this size come from the heap (glibc's own ceiling for its adjusted threshold, on 64-bit)
MMAP_THRESHOLD = 32 * 1024 * 1024
#: freed memory at the heap's top given back to the OS only beyond this
TRIM_THRESHOLD = 256 * 1024 * 1024

_active = False


def glibc_mallopt() -> Optional[Callable[[int, int], int]]:
    """glibc's ``mallopt(param, value)`` (returns 1 on success), or None where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # glibc only (musl has no such symbol)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def install_malloc_thresholds() -> bool:
    """Fix glibc's mmap and trim thresholds in this process (once); returns whether they are fixed."""
    global _active
    if _active:
        return True
    if not patches.allowed("malloc_thresholds"):
        return False
    mallopt = glibc_mallopt()
    if mallopt is None:
        return False
    _active = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    return _active
