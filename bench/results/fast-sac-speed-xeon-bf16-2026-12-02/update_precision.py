"""fast_sac's update alone at MuJoCo sizes (2x256, batch 256, one thread), update_precision fp32 against bf16, in one
process: both trainers built first (compiled, warmed), then timed in alternating blocks by the thread's CPU time, so
the machine's drift falls on both alike.  Issue 55, on the Intel Xeon listing avx512_bf16 without AMX.  Run from the repository root:
    PYTHONPATH=. python bench/results/fast-sac-speed-xeon-bf16-2026-12-02/update_precision.py [--blocks 6] [--updates 100]
First the hidden layer's product alone (torch.mm, 256 rows by 256x256, both dtypes, alternating blocks), then the
updates.  Prints one JSON object: per precision the microseconds per product and milliseconds per update of each block,
and the medians' ratios."""
import argparse
import json
import statistics
import tempfile
import time

import numpy as np
import torch

from bench.speed import common


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--updates", type=int, default=100)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--rows", type=int, default=20000)
    a = p.parse_args()
    torch.set_num_threads(1)
    x32, w32 = torch.randn(256, 256), torch.randn(256, 256)
    operands = {"fp32": (x32, w32), "bf16": (x32.bfloat16(), w32.bfloat16())}
    for x, w in operands.values():
        for _ in range(50):
            torch.mm(x, w)
    mm_us = {prec: [] for prec in operands}
    for _ in range(a.blocks):
        for prec, (x, w) in operands.items():
            t0 = time.thread_time()
            for _ in range(500):
                torch.mm(x, w)
            mm_us[prec].append(round((time.thread_time() - t0) * 1e6 / 500, 1))
    mm_med = {prec: statistics.median(v) for prec, v in mm_us.items()}
    sizes = {"hidden_units": 256, "num_layers": 2, "batch_size": 256}
    trainers = {}
    for prec in ("fp32", "bf16"):
        tmp = tempfile.mkdtemp(prefix=f"upd-{prec}-")
        trainer, spec = common.make_trainer("fast_sac", tmp, overrides={"update_precision": prec}, sizes=sizes)
        common.fill(trainer, spec, a.rows, np.random.default_rng(0))
        for _ in range(a.warmup):
            trainer.update_once()
        trainers[prec] = trainer
    ms = {prec: [] for prec in trainers}
    for _ in range(a.blocks):
        for prec, trainer in trainers.items():
            t0 = time.thread_time()
            for _ in range(a.updates):
                trainer.update_once()
            ms[prec].append(round((time.thread_time() - t0) * 1000.0 / a.updates, 3))
    med = {prec: statistics.median(v) for prec, v in ms.items()}
    print(json.dumps({"mm_us": mm_us, "mm_median_us": mm_med,
                      "mm_bf16_over_fp32": round(mm_med["bf16"] / mm_med["fp32"], 3), "ms_per_update": ms, "median_ms": med, "bf16_over_fp32": round(med["bf16"] / med["fp32"], 3),
                      "sizes": sizes, "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "cpu_capability": torch.backends.cpu.get_cpu_capability()}))


if __name__ == "__main__":
    main()
