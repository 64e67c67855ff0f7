"""``python -m bench replay``: replay buffer memory per transition, sampling speed, and save/load/verify seconds.

    python -m bench replay [--rows 1000000] [--repeats 3] [--dir /tmp] [--prioritized] [--json]
    python -m bench replay --camera [--rows 200000] [--no-save]     # 84x84x3 camera frames

The buffer holds the rows our off-policy trainers store (``offpolicy.rows.transition_fields``) for one of two
behaviors: **vector** (8 observations, 2 continuous actions: the balance scene) or **camera** (``--camera``: one
84x84x3 frame, stored as uint8 as the trainers do, 2 continuous actions).  It is filled to 120% of ``--rows``
(so the ring wraps) in chunks of random rows as trainers add trajectory pieces, then reports: the buffer's
bytes and bytes per transition, the process RSS growth, the fill seconds, the microseconds to sample and gather
one batch (``--batch``, median of ``--batches``), and the file size and best/median seconds of ``save_replay``
(fsync included), ``load_replay`` and ``inspect --verify``.

A buffer larger than 80% of the memory available now is refused before anything is allocated (the message
says how much it needs), and so is a file larger than the free space of ``--dir``: the machine is shared.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

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
    ap = argparse.ArgumentParser(prog="python -m bench replay", description=__doc__.splitlines()[0],
                                 epilog="A disk-backed buffer (outgrowing RAM) is not measured here yet.")
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
    args = ap.parse_args(argv)
    if args.rows is None:
        args.rows = 200_000 if args.camera else 1_000_000
    for name in ("rows", "repeats", "batch", "batches"):
        if getattr(args, name) < 1:
            ap.error(f"--{name}={getattr(args, name)} is invalid; must be an integer >= 1")
    return args


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    from mlagents_plugins.offpolicy.rows import transition_fields
    from mlagents_plugins.replay import ReplayBuffer
    from mlagents_plugins.replay.persistence import inspect_replay, load_replay, save_replay

    args = parse_args(argv)
    fields = transition_fields(behavior_spec(args.camera))
    per_row = row_bytes(fields)
    check_fits(per_row * args.rows, available_bytes(), f"buffer of {args.rows} transitions of {per_row} bytes",
               "give fewer --rows")
    rng = np.random.default_rng(0)
    rss0 = rss_mb()
    buf = ReplayBuffer(args.rows, fields, prioritized=args.prioritized)
    t = time.perf_counter()
    for _ in range(0, args.rows + args.rows // 5, CHUNK):  # 20% more than capacity: wraps around
        buf.add(random_rows(fields, CHUNK, rng))
    result: Dict[str, Any] = {
        "case": "camera 84x84x3 uint8" if args.camera else f"vector {VECTOR_SIZE} float32",
        "fields": " ".join(f"{k}:{v}" for k, v in fields.items()),
        "rows": buf.size,
        "capacity": buf.capacity,
        "prioritized": args.prioritized,
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
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:28s} {value}")
    return result
