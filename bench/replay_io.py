"""``python -m bench replay``: replay buffer memory per transition, sampling speed, and save/load/verify seconds.

    python -m bench replay [--rows 1000000] [--repeats 3] [--dir /tmp] [--prioritized] [--json]
    python -m bench replay --camera [--rows 200000] [--no-save]     # 84x84x3 camera frames
    python -m bench replay --camera --storage disk [--dir /tmp]      # the same, rows in memory-mapped files
    python -m bench replay --frames-once-study [--rows 200000] [--compare-rows 50000] [--out runs.jsonl]

The buffer holds the rows our off-policy trainers store (``offpolicy.rows.transition_fields``) for one of two
behaviors: **vector** (8 observations, 2 continuous actions: the balance scene) or **camera** (``--camera``: one
84x84x3 frame, stored as uint8 as the trainers do, 2 continuous actions).  It is filled to 120% of ``--rows``
(so the ring wraps) in chunks of random rows as trainers add trajectory pieces, then reports: the buffer's
bytes and bytes per transition, the process RSS growth, the fill seconds, the microseconds to sample and gather
one batch (``--batch``, median of ``--batches``), and the file size and best/median seconds of ``save_replay``
(fsync included), ``load_replay`` and ``inspect --verify``.

Rows are added as trainers add them: each ``add`` is one segment whose next observations (``next_of`` fields,
stored once) are the following rows' observations, the last row's its own final.

``--frames-once-study``: bytes per 84x84x3 transition in memory and on disk against one frame plus the other
fields, and the time to sample one batch in the release's per-row layout (``next_obs`` stored per row) against
frames stored once (memory and disk), pairs alternating (bench/results/replay-frames-once-2026-11-27/).

A buffer larger than 80% of the memory available now is refused before anything is allocated (the message
says how much it needs), and so is a file larger than the free space of ``--dir``: the machine is shared.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

#: the camera case's frame (height, width, channels), what ML-Agents' 84x84 CameraSensor sends
CAMERA_SHAPE = (84, 84, 3)
VECTOR_SIZE = 8
ACTIONS = 2
#: rows per ``add``, as trainers add trajectory pieces
CHUNK = 1000
#: the share of the available memory (or free disk) a buffer (or its file) may take
HEADROOM = 0.8


def behavior_spec(camera: bool):
    """The BehaviorSpec whose transition rows are measured."""
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

    if camera:
        obs = ObservationSpec(CAMERA_SHAPE, (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
                                             DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.NONE),
                              ObservationType.DEFAULT, "camera")
    else:
        obs = ObservationSpec((VECTOR_SIZE,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")
    return BehaviorSpec([obs], ActionSpec.create_continuous(ACTIONS))


def random_rows(fields: Dict[str, Any], n: int, rng: np.random.Generator) -> Dict[str, np.ndarray]:
    """``n`` random rows of ``fields`` (uint8 frames over 0..255, floats in [0, 1), bools 1% true)."""
    rows = {}
    for name, spec in fields.items():
        shape = (n,) + tuple(spec.shape)
        if spec.dtype == "uint8":
            rows[name] = rng.integers(0, 256, shape, dtype=np.uint8)
        elif spec.dtype == "bool":
            rows[name] = rng.random(shape) < 0.01
        else:
            rows[name] = rng.random(shape, dtype=np.float32).astype(spec.dtype)
    for name, spec in fields.items():  # one segment: a successor field is the next row's value of its source
        if spec.next_of is not None:
            rows[name][:-1] = rows[spec.next_of][1:]
    return rows


def row_bytes(fields: Dict[str, Any]) -> int:
    """Bytes of one transition row of ``fields``."""
    return int(sum(int(np.prod(s.shape, dtype=np.int64)) * np.dtype(s.dtype).itemsize for s in fields.values()))


def available_bytes() -> Optional[int]:
    """MemAvailable of /proc/meminfo in bytes (None where there is no such file)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(needed: int, available: Optional[int], what: str, option: str) -> None:
    """SystemExit naming both sizes when ``needed`` bytes exceed ``HEADROOM`` of ``available``."""
    if available is not None and needed > HEADROOM * available:
        raise SystemExit(f"python -m bench replay: the {what} needs {needed / 1e9:.2f} GB, more than "
                         f"{HEADROOM:.0%} of the {available / 1e9:.2f} GB available; {option}")


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def timed(fn: Callable[[], Any], repeats: int) -> Tuple[Any, List[float]]:
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return result, times


def sample_us(buf, batch: int, batches: int, rng: np.random.Generator) -> float:
    """Median microseconds of ``sample_indices`` + ``gather`` of one batch, over ``batches`` batches."""
    times = []
    buf.gather(buf.sample_indices(batch, rng))  # first touch
    for _ in range(batches):
        t = time.perf_counter()
        buf.gather(buf.sample_indices(batch, rng))
        times.append(time.perf_counter() - t)
    return 1e6 * statistics.median(times)


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench replay", description=__doc__.splitlines()[0])
    ap.add_argument("--camera", action="store_true", help="84x84x3 camera frames instead of 8 vector observations")
    ap.add_argument("--rows", type=int, default=None,
                    help="buffer capacity in transitions (default 1000000; with --camera 200000)")
    ap.add_argument("--repeats", type=int, default=3, help="save/load/verify repeats (default 3)")
    ap.add_argument("--batch", type=int, default=256, help="rows per sampled batch (default 256)")
    ap.add_argument("--batches", type=int, default=1000, help="timed batches (default 1000)")
    ap.add_argument("--dir", default=None, help="where to write the file (default: a temp dir)")
    ap.add_argument("--no-save", action="store_true", help="memory and sampling only: no file written")
    ap.add_argument("--prioritized", action="store_true", help="a prioritized buffer (sum tree) instead")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of lines of text")
    ap.add_argument("--storage", choices=("memory", "disk"), default="memory",
                    help="where the rows live: memory, or memory-mapped files in --dir (replay_storage: disk)")
    study = ap.add_argument_group("--frames-once-study")
    study.add_argument("--frames-once-study", action="store_true",
                       help="bytes per 84x84x3 transition and sampling time against the release's per-row layout")
    study.add_argument("--compare-rows", type=int, default=50_000, help="rows of the layout comparison (0: none)")
    study.add_argument("--time-horizon", type=int, default=64, help="longest trajectory chunk")
    study.add_argument("--episode-steps", type=float, default=200.0, help="mean episode length")
    study.add_argument("--spare", type=int, default=0, help="disk rows beyond the capacity")
    study.add_argument("--pairs", type=int, default=300, help="alternating timing rounds per case")
    study.add_argument("--out", default=None, help="append one JSON line per measurement to this file")
    args = ap.parse_args(argv)
    if args.rows is None:
        args.rows = 200_000 if args.camera or args.frames_once_study else 1_000_000
    for name in ("rows", "repeats", "batch", "batches"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}={getattr(args, name)} is invalid; must be an integer >= 1")
    return args


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    from mlagents_plugins.offpolicy.rows import transition_fields
    from mlagents_plugins.replay import ReplayBuffer
    from mlagents_plugins.replay.persistence import inspect_replay, load_replay, save_replay
    from mlagents_plugins.replay.storage import DiskStorage

    args = parse_args(argv)
    if args.frames_once_study:
        return {"records": frames_once_study(args)}
    fields = transition_fields(behavior_spec(args.camera))
    per_row = row_bytes(fields)
    check_fits(per_row * args.rows, available_bytes(), f"buffer of {args.rows} transitions of {per_row} bytes",
               "give fewer --rows")
    rng = np.random.default_rng(0)
    rss0 = rss_mb()
    rows_dir = tempfile.TemporaryDirectory(dir=args.dir)
    storage = DiskStorage.create(rows_dir.name, "bench") if args.storage == "disk" else None
    buf = ReplayBuffer(args.rows, fields, prioritized=args.prioritized, storage=storage)
    t = time.perf_counter()
    for _ in range(0, args.rows + args.rows // 5, CHUNK):  # 20% more than capacity: wraps around
        buf.add(random_rows(fields, CHUNK, rng))
    result: Dict[str, Any] = {
        "case": "camera 84x84x3 uint8" if args.camera else f"vector {VECTOR_SIZE} float32",
        "fields": " ".join(f"{k}:{v}" for k, v in fields.items()),
        "rows": buf.size,
        "capacity": buf.capacity,
        "prioritized": args.prioritized,
        "storage": args.storage,
        "buffer_mb": round(buf.nbytes / 1e6, 1),
        "bytes_per_transition": round(buf.nbytes / buf.capacity, 1),
        "rss_growth_mb": round(rss_mb() - rss0, 1),
        "fill_s": round(time.perf_counter() - t, 2),
        "batch": args.batch,
        "sample_gather_us_per_batch": round(sample_us(buf, args.batch, args.batches, rng), 1),
    }
    if not args.no_save:
        directory = args.dir or tempfile.gettempdir()
        check_fits(buf.nbytes, shutil.disk_usage(directory).free, f"replay file in {directory}",
                   "give fewer --rows, another --dir or --no-save")
        with tempfile.TemporaryDirectory(dir=args.dir) as d:
            path = os.path.join(d, "replay.bin")
            nbytes, save_t = timed(lambda: save_replay(path, buf, {"step": 123}), args.repeats)
            (loaded, _), load_t = timed(lambda: load_replay(path, expected_fields=fields), args.repeats)
            _, verify_t = timed(lambda: inspect_replay(path, verify=True), args.repeats)
        if loaded.size != buf.size or loaded.write_pos != buf.write_pos:
            raise RuntimeError(f"the loaded buffer differs: size {loaded.size} vs {buf.size}, write_pos "
                               f"{loaded.write_pos} vs {buf.write_pos}")
        result["file_mb"] = round(nbytes / 1e6, 1)
        result["file_bytes_per_transition"] = round(nbytes / buf.size, 1)
        for name, ts in (("save", save_t), ("load", load_t), ("verify", verify_t)):
            result[f"{name}_s_best"] = round(min(ts), 3)
            result[f"{name}_s_median"] = round(statistics.median(ts), 3)
        result["repeats"] = args.repeats
    rows_dir.cleanup()
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:28s} {value}")
    return result


# ------------------------------------------------------------------------------- --frames-once-study
CAMERA_CHW = (3, 84, 84)  # CHW, as ML-Agents' ObservationSpec of an 84x84 RGB CameraSensor
FRAME_POOL = 4096  # distinct random frames the rows cycle through
BATCH = 256


def camera_spec():
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

    props = (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
             DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
    return BehaviorSpec([ObservationSpec(CAMERA_CHW, props, ObservationType.DEFAULT, "camera")],
                        ActionSpec.create_continuous(2))


def camera_chunks(total: int, time_horizon: int, episode_steps: float, seed: int) -> Iterator[Dict[str, np.ndarray]]:
    """Transition rows as trainers add them: episodes of geometric length cut into chunks of <= time_horizon rows;
    a row's next frame is the next row's frame, a chunk's last row's the following frame (its true final)."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 256, (FRAME_POOL,) + CAMERA_CHW, dtype=np.uint8)
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


def filled(buf, args: argparse.Namespace, rows: int) -> float:
    t = time.perf_counter()
    for chunk in camera_chunks(rows + rows // 5, args.time_horizon, args.episode_steps, seed=1):
        buf.add(chunk)
    return time.perf_counter() - t


def frames_once_study(args: argparse.Namespace) -> List[dict]:
    from mlagents_plugins.offpolicy.rows import transition_fields
    from mlagents_plugins.replay import ReplayBuffer
    from mlagents_plugins.replay.storage import DiskStorage

    spec = camera_spec()
    fields = transition_fields(spec)
    rows = args.rows or 200_000
    frame = int(np.prod(CAMERA_CHW))
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
    return out


def compare_layouts(args, spec, fields, directory, common) -> List[dict]:
    """Sampling time per batch, release layout vs frames once (memory, disk), pairs alternating."""
    import torch

    from mlagents_plugins.replay import FieldSpec, ReplayBuffer
    from mlagents_plugins.sac.batch import window_batch
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
