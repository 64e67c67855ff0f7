"""What the processor is, read once from Linux's ``/proc/cpuinfo``: its model name, generation and feature flags.

One reader for everything that asks (``update_precision: auto`` in ``bf16_matmul``, the compile cache's machine key
in ``compile_cache``, the machine kind of every bench record in ``bench/invocation``), so they cannot disagree about
the CPU they run on.  Torch-free and cached: the file does not change while a process runs.  On systems without
``/proc/cpuinfo`` every answer is empty and callers fall back to ``platform``.
"""
import functools
import platform
from typing import Dict, FrozenSet

CPUINFO = "/proc/cpuinfo"


def parse_cpuinfo(text: str) -> Dict[str, str]:
    """``key: value`` lines of a cpuinfo listing, keys stripped; the first processor's value of each key wins
    (every core of one machine lists the same model and flags)."""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    return fields


@functools.lru_cache(maxsize=None)
def cpu_fields() -> Dict[str, str]:
    """``parse_cpuinfo`` of this machine's ``/proc/cpuinfo``; empty where there is none.  Cached: do not mutate."""
    try:
        with open(CPUINFO, encoding="ascii", errors="replace") as cpuinfo:
            return parse_cpuinfo(cpuinfo.read())
    except OSError:
        return {}


def cpu_flags() -> FrozenSet[str]:
    """The CPU's feature flags as Linux lists them (x86 ``flags``, e.g. ``avx2``, ``avx512_bf16``); empty
    elsewhere."""
    return frozenset(cpu_fields().get("flags", "").split())


def cpu_model() -> str:
    """The CPU's model name (``model name``), else ``platform.processor()``, else ``unknown CPU``."""
    return cpu_fields().get("model name") or platform.processor() or "unknown CPU"


def cpu_generation() -> str:
    """``"family F, model M"`` from x86's ``cpu family`` and ``model`` numbers (AMD's Zen 4 is family 25, Zen 5
    family 26), else ``""``.  Processors whose model name is only the vendor's line ("AMD EPYC") differ here: two
    such 2-core machines with AVX-512 BF16 ran SB3's SAC at 86 and 121 env steps per CPU second
    (bench/results/mujoco-table-2026-11-30/CONTINUE.md)."""
    fields = cpu_fields()
    family, model = fields.get("cpu family", ""), fields.get("model", "")
    return f"family {family}, model {model}" if family and model else ""
