"""Replay buffer memory and save/load speed for 1M SAC-style transitions; with ``--camera``, the frames-once study.

    .venv/bin/python bench/replay_io.py [--rows 1000000] [--repeats 3] [--dir /tmp] [--prioritized]
    .venv/bin/python bench/replay_io.py --camera [--rows 200000] [--compare-rows 50000] [--time-horizon 64]
                                        [--episode-steps 200] [--spare 0] [--dir /tmp] [--out runs.jsonl]

Default: fields obs float32[8], next_obs float32[8], action float32[2], reward float32, done bool, interrupted
bool.  Reports the buffer's preallocated bytes, the process RSS growth from allocating and filling it, the file
size, and the best/median seconds of save_replay (incl. fsync), load_replay and inspect --verify.

``--camera``: the rows our off-policy trainers store (``offpolicy.rows.transition_fields``) for one 84x84x3
camera (uint8) and 2 continuous actions, added as ML-Agents hands them over: episodes of geometric length (mean
``--episode-steps``) cut into chunks of at most ``--time-horizon`` rows, 120% of ``--rows`` in all (the ring
wraps).  For storage memory and disk (memory-mapped files in ``--dir``, ``--spare`` rows beyond the capacity,
as ``save_replay_buffer`` keeps): bytes per transition against one frame plus the other fields, private memory
growth, the rows folder's size.  Then, on ``--compare-rows`` rows filled the same way, the time to sample one
batch of 256 in the release's per-row layout (``next_obs`` stored per row) against frames stored once (memory
and disk), pairs alternating: ``gather`` of every field, and fast_sac's n-step window batch (n_step 2).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from typing import Dict, Iterator, List

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
    ap.add_argument("--rows", type=int, default=None, help="capacity (default 1000000; with --camera 200000)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write the file (default: a temp dir)")
    ap.add_argument("--prioritized", action="store_true")
    ap.add_argument("--camera", action="store_true", help="the frames-once study (see the module docstring)")
    ap.add_argument("--compare-rows", type=int, default=50_000,
                    help="--camera: rows of the layout comparison (0: none)")
    ap.add_argument("--time-horizon", type=int, default=64, help="--camera: longest trajectory chunk")
    ap.add_argument("--episode-steps", type=float, default=200.0, help="--camera: mean episode length")
    ap.add_argument("--spare", type=int, default=0, help="--camera: disk rows beyond the capacity")
    ap.add_argument("--pairs", type=int, default=300, help="--camera: alternating timing rounds per case")
    ap.add_argument("--out", default=None, help="--camera: append one JSON line per measurement to this file")
    args = ap.parse_args()
    if args.camera:
        camera_study(args)
        return
    args.rows = args.rows or 1_000_000

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


# ---------------------------------------------------------------------------------------------- --camera
CAMERA = (3, 84, 84)  # CHW, as ML-Agents' ObservationSpec of an 84x84 RGB CameraSensor
FRAME_POOL = 4096  # distinct random frames the rows cycle through
BATCH = 256


def camera_spec():
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

    props = (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
             DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
    return BehaviorSpec([ObservationSpec(CAMERA, props, ObservationType.DEFAULT, "camera")],
                        ActionSpec.create_continuous(2))


def camera_chunks(total: int, time_horizon: int, episode_steps: float, seed: int) -> Iterator[Dict[str, np.ndarray]]:
    """Transition rows as trainers add them: episodes of geometric length cut into chunks of <= time_horizon rows;
    a row's next frame is the next row's frame, a chunk's last row's the following frame (its true final)."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 256, (FRAME_POOL,) + CAMERA, dtype=np.uint8)
    frame, done = 0, 0
    while done < total:
        episode = int(rng.geometric(1.0 / episode_steps))
        for start in range(0, episode, time_horizon):
            n = min(time_horizon, episode - start, total - done)
            if n <= 0:
                break
            ids = (frame + np.arange(n + 1)) % FRAME_POOL
            terminal = np.zeros(n, bool)
            terminal[-1] = start + n == episode and rng.random() < 0.5  # else a time-out or a chunk end
            yield {"obs_0": pool[ids[:-1]], "next_obs_0": pool[ids[1:]],
                   "cont_action": rng.uniform(-1, 1, (n, 2)).astype(np.float32),
                   "reward": rng.normal(size=n).astype(np.float32), "terminal": terminal}
            frame += n + (1 if start + n == episode else 0)
            done += n


def private_kb() -> int:
    """Private (anonymous) resident memory of this process: RssAnon of /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return -1


def filled(buf: ReplayBuffer, args: argparse.Namespace, rows: int) -> float:
    t = time.perf_counter()
    for chunk in camera_chunks(rows + rows // 5, args.time_horizon, args.episode_steps, seed=1):
        buf.add(chunk)
    return time.perf_counter() - t


def camera_study(args: argparse.Namespace) -> None:
    from mlagents_plugins.offpolicy.rows import transition_fields
    from mlagents_plugins.replay.storage import DiskStorage

    spec = camera_spec()
    fields = transition_fields(spec)
    rows = args.rows or 200_000
    frame = int(np.prod(CAMERA))
    others = sum(int(np.prod(f.shape, dtype=np.int64)) * f.np_dtype.itemsize
                 for n, f in fields.items() if n not in ("obs_0", "next_obs_0"))
    common = {"study": "replay-frames-once", "commit": _commit(), "frame_bytes": frame, "other_field_bytes": others,
              "time_horizon": args.time_horizon, "episode_steps": args.episode_steps}
    out: List[dict] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for storage in ("memory", "disk"):
            kb0 = private_kb()
            if storage == "memory":
                buf = ReplayBuffer(rows, fields)
            else:
                buf = ReplayBuffer(rows, fields, storage=DiskStorage.create(d, "bench"), physical_rows=rows + args.spare)
            fill_s = filled(buf, args, rows)
            rec = dict(common, measure="bytes", storage=storage, capacity=rows, rows_added=buf.total_added,
                       segments_live=buf.segment_counter - buf.first_live_segment, finals_slots=buf.finals_slots,
                       spare_rows=buf.physical_rows - rows, buffer_bytes=buf.nbytes,
                       bytes_per_transition=round(buf.nbytes / rows, 1),
                       ratio_to_frame_plus_fields=round(buf.nbytes / rows / (frame + others), 4),
                       release_layout_bytes_per_transition=2 * frame + others + 8 + 8,
                       private_growth_mb=round((private_kb() - kb0) / 1024, 1), fill_s=round(fill_s, 1))
            if storage == "disk":
                folder = buf.storage.folder
                rec["files_apparent_bytes"] = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
                rec["files_allocated_bytes"] = sum(os.stat(os.path.join(folder, n)).st_blocks * 512
                                                   for n in os.listdir(folder))
            out.append(rec)
            _emit(rec, args.out)
            del buf
        if args.compare_rows > 0:
            out += compare_layouts(args, spec, fields, d, common)


def compare_layouts(args, spec, fields, directory, common) -> List[dict]:
    """Sampling time per batch, release layout vs frames once (memory, disk), pairs alternating."""
    import torch

    from mlagents_plugins.fast_sac.batch import window_batch
    from mlagents_plugins.replay.storage import DiskStorage

    rows = args.compare_rows
    per_row = {n: FieldSpec(f.shape, f.dtype) for n, f in fields.items()}
    buffers = {
        "release_per_row": ReplayBuffer(rows, per_row),
        "once_memory": ReplayBuffer(rows, fields),
        "once_disk": ReplayBuffer(rows, fields, storage=DiskStorage.create(directory, "compare"),
                                  physical_rows=rows + args.spare),
    }
    for buf in buffers.values():
        filled(buf, args, rows)

    def rewards(idx, window):
        return window["reward"][..., None]

    cases = {
        "gather_all_fields": lambda buf, idx: buf.gather(idx),
        "fast_sac_window_batch_n2": lambda buf, idx: window_batch(buf, idx, None, 2, spec, rewards, [0.99], [1.0],
                                                                  torch.device("cpu")),
    }
    records = []
    for case, fn in cases.items():
        times: Dict[str, List[float]] = {name: [] for name in buffers}
        rng = np.random.default_rng(7)
        for _ in range(args.pairs):
            idx = rng.integers(0, rows, BATCH)
            for name, buf in buffers.items():  # same indices, every layout, alternating
                t = time.perf_counter()
                fn(buf, idx)
                times[name].append(time.perf_counter() - t)
        base = np.array(times["release_per_row"])
        for name, ts in times.items():
            rec = dict(common, measure="sample_batch", case=case, layout=name, capacity=rows, batch=BATCH,
                       pairs=args.pairs, median_us=round(1e6 * statistics.median(ts), 1),
                       median_ratio_to_release=round(float(np.median(np.array(ts) / base)), 3))
            records.append(rec)
            _emit(rec, args.out)
    return records


def _emit(record: dict, path) -> None:
    print(json.dumps(record), flush=True)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__)), timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    main()
