"""What every bench command records about its invocation: an id, the machine, the code commit."""
import os
import platform
import subprocess
import uuid
from datetime import datetime, timezone

from mlagents_plugins.common.cpu_info import cpu_flags, cpu_generation, cpu_model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def new_id() -> str:
    """``<UTC time>-<6 hex>``: unique per invocation, sortable by time."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:6]


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


#: the vector tiers that change what a CPU second buys and which kernels run (torch's fp32 GEMMs, oneDNN's bf16
#: products, ``update_precision: auto``), widest first: (the flag that marks the tier, its name in a kind)
VECTOR_TIERS = (("amx_tile", "AMX"), ("avx512_bf16", "AVX-512 BF16"), ("avx512f", "AVX-512"), ("avx2", "AVX2"))


def vector_isa(flags: frozenset) -> str:
    """The widest of ``VECTOR_TIERS`` that ``flags`` carry; ``no AVX2`` when none (``unknown ISA`` without flags,
    e.g. not Linux).  One CPU model name covers several tiers (a cloud's "AMD EPYC" is Zen 3 with AVX2 or Zen 4
    with AVX-512 BF16, about 2.5x apart in fast_sac's env steps per CPU second), so a kind names it."""
    if not flags:
        return "unknown ISA"
    for flag, name in VECTOR_TIERS:
        if flag in flags:
            return name
    return "no AVX2"


def machine() -> str:
    """Cores, CPU model, vector tier (``machine_kind``), OS and the load average now (the machine is shared: the
    load says how much)."""
    return (f"{machine_kind()}, {platform.system()} {platform.release()}; "
            f"load average at start {os.getloadavg()[0]:.1f}")


def code_commit() -> str:
    """The checkout's commit (short hash), with ``+changes`` when tracked files differ from it; ``unknown``
    outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=30)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=30)
        return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_kind() -> str:
    """``"<cores> cores, <CPU model> (<generation>), <vector tier>"``: what earlier records must share for their
    seconds to estimate a run, and what a report refuses to mix (the start of ``machine()``, without the kernel and
    the load).  The vector tier (``vector_isa``) is part of it since 2026-11-30, the generation (``cpu_generation``:
    x86 family and model numbers, where Linux lists them) since 2026-12-01; older records lack them, so their kind
    never equals a newer one's."""
    generation = cpu_generation()
    model = f"{cpu_model()} ({generation})" if generation else cpu_model()
    return f"{os.cpu_count()} cores, {model}, {vector_isa(cpu_flags())}"


def git_state(path: str = REPO):
    """(full commit hash of ``path``'s checkout, whether tracked files differ from it); (None, False) outside a
    git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            return None, False
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=path,
                               capture_output=True, text=True, timeout=30)
        return head.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, False
