"""``python -m bench speed [mode]``: how fast the pieces run, each against its built-in counterpart in the same run.

Modes (each has ``--help``):

* ``all`` (the default): the whole speed section - ``update`` at the configs' sizes and at issue #3's, ``learn``,
  and ``python -m bench replay`` - each in its own process, one report (``REPORT.md``, ``invocation.json``) in
  ``--out``; what ``python -m bench learn`` runs after its learning runs.
* ``update`` (``bench/speed/update.py``): every trainer's full update against a minimal PyTorch loop of the same
  algorithm and size and against the built-in counterpart (sac, ppo), torch threads 1 and 2.
* ``learn`` (``bench/speed/learn.py``): environment steps per second and per CPU second of built-in sac and
  fast_sac through real ``mlagents-learn`` (issue #3's 8-agent setup), runs alternating.
* ``camera`` (``bench/speed/camera.py``): one camera update of fast_sac change by change (the critic encoding
  shared or not, channels-last, compiled, the DrQ shift) against built-in sac.
* ``proto`` (``bench/speed/proto.py``): what the protobuf stack costs per environment step, one environment
  (``--venv``) against another.
* ``gpu`` (``bench/speed/gpu.py``): fast_sac against built-in sac at GPU sizes (84x84 cameras, 3x512, batches of
  512-1024, 64 agents): update throughput and whole-run environment steps per second, about 5 minutes on one GPU;
  ``--tiny --device cpu`` checks it on a CPU.
* ``gemm-floor`` (``bench/speed/gemm_floor.py``): fast_sac's full update against the same matrix products alone
  (shapes profiled from the update, replayed with ``torch.mm`` at the same thread count and matmul precision).
* ``compile-options`` (``bench/speed/compile_options.py``): fast_sac's compiled whole step under sets of Inductor
  options (the C++ wrapper, ATen's random draws, ...), one trainer per set in one process, timed interleaved.

``bench/speed/common.py`` holds their shared timing and trainer-building code.  Where the CPU of a whole
``mlagents-learn`` run goes, phase by phase, is ``python -m bench profile``.
"""
import argparse
import importlib
import os
import sys
from typing import List, Optional

MODES = {"update": "bench.speed.update", "learn": "bench.speed.learn", "proto": "bench.speed.proto",
         "camera": "bench.speed.camera", "gpu": "bench.speed.gpu", "gemm-floor": "bench.speed.gemm_floor",
         "compile-options": "bench.speed.compile_options"}


def _all(argv: List[str]) -> int:
    from bench.learn import DEFAULT_OUT, REPO, run_speed_section

    p = argparse.ArgumentParser(
        prog="python -m bench speed [all]",
        description="The whole speed section: update (the configs' sizes and issue #3's), learn and replay, each in "
                    "its own process; REPORT.md and invocation.json in --out. Other modes: "
                    + ", ".join(MODES) + " (python -m bench speed <mode> --help).")
    p.add_argument("--quick", action="store_true",
                   help="smaller workloads (update: 40 updates, 5000 rows; learn: 1 pair of 4000 steps; replay: "
                        "100k rows, 1 repeat) and no issue #3-size update run")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {os.path.relpath(DEFAULT_OUT, REPO)})")
    p.add_argument("--note", default="", help="free text for the report header (e.g. machine was shared)")
    args = p.parse_args(argv)
    return run_speed_section(args.out, args.quick, args.note, "python -m bench speed " + " ".join(argv))


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in MODES:
        importlib.import_module(MODES[argv[0]]).main(argv[1:])
        return 0
    if argv and argv[0] == "all":
        argv = argv[1:]
    return _all(argv)
