"""Where ``torch.compile`` keeps what it compiled: one folder per machine kind under the user's cache.

Why: compiling a trainer's update costs tens of CPU seconds the first time and a few seconds once Inductor's caches
(the FX graph cache and the AOT autograd cache, both on by default) hold the graphs.  By default they live in
``<tmp>/torchinductor_<user>``, which many systems empty at reboot (tmpfs ``/tmp``, containers), so the first run
after it pays the whole compile again.  Here the caches live under the user's cache folder instead
(``$XDG_CACHE_HOME`` or ``~/.cache``; ``%LOCALAPPDATA%`` on Windows), never in a run's results folder, so every run
on the machine after the first starts warm.

A home folder can be shared by machines with different processors (network homes, one disk image on several
instance types), and Inductor's CPU cache entries do not say which vector instructions their generated C++ was
written for: a kernel generated for AVX-512 and loaded on an AVX2-only machine would be wrong.  So the folder name
carries a key of everything a cache entry's validity depends on that Inductor does not check itself: the torch
build, the Python version, the operating system and architecture, the vector instruction set Inductor picks and
the one torch's kernels use, and the processor's model and feature flags.  Another torch or another processor gets
another folder, never another's entries.

``TORCHINDUCTOR_CACHE_DIR`` set by the user (to anything but torch's default) is left alone; so is torch's default
when the user cache folder cannot be written.

**ISA probes, once per machine** (kernel switch ``isa_probe_memo``).  Before its first C++ kernel, every process
asks Inductor which vector instruction sets it may generate code for (``pick_vec_isa``; the folder key above asks
too).  Torch 2.13 answers by compiling a small test library per instruction set (kept in its cache) and loading
each one in a fresh Python process (``VecISA._probe_load``): ten such processes on an AMX Xeon, about 1.3-1.8 CPU s
of every run, for an answer that only a new library, processor, system or Python can change.  ``remember_isa_probes``
wraps that probe: a library whose probe passed gets a ``<library>.load-ok`` file beside it holding a hash of those
facts (the library's size and modification time, the processor's model and flags, the platform, the torch version
and the Python executable), and a later probe of the same library with the same facts returns True without starting
the process.  A failed probe writes nothing (and is probed again next time); a changed fact probes again.  Only
where torch has ``VecISA._probe_load`` (older versions probe inline: left alone);
``MLAGENTS_PLUGINS_PROBE_ISA_EVERY_RUN=1`` keeps torch's probe in every process.
"""
import functools
import hashlib
import json
import os
import platform
import sys
from typing import Any, Callable, Dict, Optional

from mlagents.torch_utils import torch
from mlagents_envs.logging_util import get_logger

from mlagents_plugins.common import cpu_info
from mlagents_plugins.host import patches

logger = get_logger(__name__)

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
#: the folder under the user's cache folder
CACHE_SUBDIR = os.path.join("mlagents_plugins", "torchinductor")
#: beside an ISA test library whose load probe passed: the hash of what the pass depends on (``_probe_facts_hash``)
PROBE_OK_SUFFIX = ".load-ok"


def user_cache_home() -> str:
    """``$XDG_CACHE_HOME``, else ``%LOCALAPPDATA%`` on Windows, else ``~/.cache``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return xdg
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return os.environ["LOCALAPPDATA"]
    return os.path.join(os.path.expanduser("~"), ".cache")


def cpu_identity() -> str:
    """The processor's model name and feature flags (Linux: ``/proc/cpuinfo``, via ``cpu_info``), else
    ``platform.processor()``."""
    fields = {key: (" ".join(sorted(value.split())) if key in ("flags", "Features") else value)
              for key, value in cpu_info.cpu_fields().items()
              if key in ("model name", "flags", "Features", "CPU implementer", "CPU part")}
    if fields:
        return json.dumps(fields, sort_keys=True)
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=None)
def _process_facts() -> str:
    """The facts of this machine and interpreter that an ISA test library's load probe depends on."""
    return json.dumps({"cpu": cpu_identity(), "platform": platform.platform(), "torch": torch.__version__,
                       "python": sys.executable}, sort_keys=True)


def _probe_facts_hash(library: str) -> str:
    """Hash of ``library``'s size and modification time with ``_process_facts()`` (raises OSError if it is gone)."""
    stat = os.stat(library)
    text = json.dumps([stat.st_size, stat.st_mtime_ns, _process_facts()])
    return hashlib.sha256(text.encode()).hexdigest()


def _remembering(probe: Callable[[Any, str], bool]) -> Callable[[Any, str], bool]:
    """``VecISA._probe_load`` that returns True without ``probe`` for a library whose probe passed with the same
    facts, and records a pass (module docstring)."""

    def probe_load(isa: Any, output_path: str) -> bool:
        marker = output_path + PROBE_OK_SUFFIX
        try:
            facts = _probe_facts_hash(output_path)
        except OSError:
            return probe(isa, output_path)  # no library: torch's probe says what that means
        try:
            with open(marker) as recorded:
                if recorded.read() == facts:
                    return True
        except OSError:
            pass  # never probed here, or the record is unreadable: probe
        passed = probe(isa, output_path)
        if passed:
            partial = f"{marker}.tmp-{os.getpid()}"
            try:
                with open(partial, "w") as record:
                    record.write(facts)
                os.replace(partial, marker)
            except OSError as err:  # a read-only cache: probe every time, as torch does
                logger.debug("ISA probe of %s not recorded: %s", output_path, err)
        return passed

    probe_load.__wrapped__ = probe  # type: ignore[attr-defined]
    return probe_load


def remember_isa_probes() -> bool:
    """Install the ``isa_probe_memo`` kernel switch (module docstring) once; returns whether it is active."""
    if not patches.allowed("isa_probe_memo"):
        return False
    try:
        from torch._inductor.cpu_vec_isa import VecISA
    except ImportError:
        return False
    current = getattr(VecISA, "_probe_load", None)
    if current is None:
        return False  # a torch that probes inline (before 2.13): left alone
    if getattr(current, "__wrapped__", None) is not None:
        return True
    VecISA._probe_load = _remembering(current)
    return True


def machine_facts() -> Dict[str, Optional[str]]:
    """What a cache entry's validity depends on beyond Inductor's own keys (module docstring)."""
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    return {
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None),
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "system": platform.system(),
        "machine": platform.machine(),
        "inductor_vec_isa": str(pick_vec_isa()),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu": cpu_identity(),
    }


def machine_key(facts: Optional[Dict[str, Optional[str]]] = None) -> str:
    """16 hex digits of a hash of ``facts`` (default ``machine_facts()``)."""
    text = json.dumps(facts if facts is not None else machine_facts(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_folder(facts: Optional[Dict[str, Optional[str]]] = None) -> str:
    """``<user cache>/mlagents_plugins/torchinductor/torch-<version>-<machine key>``."""
    facts = facts if facts is not None else machine_facts()
    version = str(facts["torch"]).replace("+", "_")
    return os.path.join(user_cache_home(), CACHE_SUBDIR, f"torch-{version}-{machine_key(facts)}")


def _torch_default() -> str:
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    return os.path.abspath(default_cache_dir())


def use_machine_cache() -> Optional[str]:
    """Point Inductor's caches at ``cache_folder()`` unless the user chose a folder; returns the folder in use
    (None if it could not be decided).  Call before the process compiles anything."""
    remember_isa_probes()  # before Inductor's first ISA probe, wherever the cache lives
    current = os.environ.get(CACHE_ENV)
    try:
        if current and os.path.abspath(current) != _torch_default():
            return current  # the user's choice
        folder = cache_folder()
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise OSError(f"{folder} is not writable")
    except Exception as err:  # noqa: BLE001 - a cache location must never stop a run
        logger.debug("torch.compile cache: keeping %s (%s)", current or "torch's default", err)
        return current
    os.environ[CACHE_ENV] = folder
    logger.debug("torch.compile cache: %s", folder)
    return folder
