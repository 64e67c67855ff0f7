"""Replay buffer memory and save/load speed for 1M SAC-style transitions (not a test; prints numbers).

    .venv/bin/python bench/replay_io.py [--rows 1000000] [--repeats 3] [--dir /tmp] [--prioritized]

Fields: obs float32[8], next_obs float32[8], action float32[2], reward float32, done bool, interrupted bool.
Reports the buffer's preallocated bytes, the process RSS growth from allocating and filling it, the file
size, and the best/median seconds of save_replay (incl. fsync), load_replay and inspect --verify.
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from mlagents_plugins.replay import FieldSpec, ReplayBuffer
from mlagents_plugins.replay.persistence import inspect_replay, load_replay, save_replay

FIELDS = {
    "obs": FieldSpec((8,), "float32"),
    "next_obs": FieldSpec((8,), "float32"),
    "action": FieldSpec((2,), "float32"),
    "reward": FieldSpec((), "float32"),
    "done": FieldSpec((), "bool"),
    "interrupted": FieldSpec((), "bool"),
}


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def timed(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return result, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write the file (default: a temp dir)")
    ap.add_argument("--prioritized", action="store_true")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    rss0 = rss_mb()
    buf = ReplayBuffer(args.rows, FIELDS, prioritized=args.prioritized)
    chunk = 1000  # trajectory chunks as the trainer would add them
    t = time.perf_counter()
    for start in range(0, args.rows + args.rows // 5, chunk):  # 20% more than capacity: wraps around
        n = chunk
        buf.add({
            "obs": rng.random((n, 8), dtype=np.float32),
            "next_obs": rng.random((n, 8), dtype=np.float32),
            "action": rng.random((n, 2), dtype=np.float32),
            "reward": rng.random(n, dtype=np.float32),
            "done": rng.random(n) < 0.01,
            "interrupted": rng.random(n) < 0.001,
        })
    fill_s = time.perf_counter() - t
    rss1 = rss_mb()
    print(f"rows={buf.size} capacity={buf.capacity} total_added={buf.total_added} prioritized={args.prioritized}")
    print(f"buffer arrays: {buf.nbytes / 1e6:.1f} MB; process RSS growth: {rss1 - rss0:.1f} MB "
          f"(RSS {rss1:.1f} MB); fill {fill_s:.2f} s")

    t = time.perf_counter()
    idx = buf.sample_indices(256, rng)
    for _ in range(999):
        idx = buf.sample_indices(256, rng)
        buf.gather(idx)
    print(f"sample+gather batch 256: {(time.perf_counter() - t) * 1e3:.1f} us per batch (1000 batches)")

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = os.path.join(d, "replay.bin")
        nbytes, save_t = timed(lambda: save_replay(path, buf, {"step": 123}), args.repeats)
        (loaded, _), load_t = timed(lambda: load_replay(path, expected_fields=FIELDS), args.repeats)
        _, verify_t = timed(lambda: inspect_replay(path, verify=True), args.repeats)
        assert loaded.size == buf.size and loaded.write_pos == buf.write_pos
        print(f"file: {nbytes / 1e6:.1f} MB")
        for name, ts in (("save", save_t), ("load", load_t), ("inspect --verify", verify_t)):
            print(f"{name:>16}: best {min(ts):.3f} s, median {statistics.median(ts):.3f} s over {len(ts)}")


if __name__ == "__main__":
    main()
