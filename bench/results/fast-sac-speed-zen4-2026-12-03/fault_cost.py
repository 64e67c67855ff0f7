"""CPU per minor page fault here: rounds of 40 blocks of 256 KiB allocated, written and freed (an update's
temporaries), in a process with glibc's defaults (the pages are faulted in afresh each round) and in one with the
thresholds ``malloc_thresholds`` sets (the same pages reused); the difference per fault.
    python fault_cost.py   (from the repository root)"""
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import ctypes, resource, sys, time
    sys.path.insert(0, ".")
    from mlagents_plugins.host import malloc_thresholds as mt
    if sys.argv[1] == "fixed":
        mallopt = mt.glibc_mallopt()
        assert mallopt(mt.M_MMAP_THRESHOLD, mt.MMAP_THRESHOLD) == 1 and mallopt(mt.M_TRIM_THRESHOLD, mt.TRIM_THRESHOLD) == 1
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size, rounds = 256 << 10, 400
    def one():
        blocks = [libc.malloc(size) for _ in range(40)]
        for p in blocks:
            ctypes.memset(p, 1, size)
        for p in reversed(blocks):
            libc.free(p)
    for _ in range(20):
        one()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.process_time()
    for _ in range(rounds):
        one()
    print((time.process_time() - t0) / rounds, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / rounds)
""")
out = {}
for mode in ("defaults", "fixed", "defaults", "fixed"):
    s, f = map(float, subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                                     check=True).stdout.split())
    out.setdefault(mode, []).append((s, f))
    print(f"{mode}: {s * 1e6:.0f} us and {f:.0f} page faults per round")
d = min(s for s, _ in out["defaults"]) - min(s for s, _ in out["fixed"])
faults = min(f for _, f in out["defaults"]) - max(f for _, f in out["fixed"])
print(f"per page fault: {d / faults * 1e6:.2f} us of CPU")
