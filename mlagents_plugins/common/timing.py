"""Interleaved timing of several variants of one step, for comparisons that a busy machine must not bias.

Used at start-up by ``update_precision: auto`` (``bf16_matmul.bf16_is_faster``: does this CPU multiply bf16 faster
than fp32?) and by the benchmarks (``bench/speed``).  Each variant runs a block of calls in turn, A B C A B C, so a
slow spell on a shared machine slows every variant alike, and each variant's time is the median of its blocks.
"""
import time
from typing import Callable, Dict, List, Optional

import numpy as np


def time_interleaved(steps: Dict[str, Callable[[], None]], updates: int, warmup: int = 10,
                     blocks: int = 5, clock: Optional[Callable[[], float]] = None) -> Dict[str, float]:
    """Median over ``blocks`` blocks of the ms per call of each step function, blocks interleaved A B C A B C.

    ``updates`` calls per variant are timed in all (at least one per block); ``warmup`` untimed calls first
    (allocator, autograd graph caches, first-touch of the replay arrays).  ``clock``: wall seconds
    (``time.perf_counter``) by default; ``time.thread_time`` counts the calling thread's CPU seconds only
    (single-threaded torch on a shared machine), ``time.process_time`` every thread's of the process.
    """
    clock = clock or time.perf_counter
    if updates < 1 or blocks < 1 or warmup < 0:
        raise ValueError(f"need updates >= 1, blocks >= 1, warmup >= 0; got {updates}, {blocks}, {warmup}")
    for step in steps.values():
        for _ in range(warmup):
            step()
    per_block = max(1, updates // blocks)
    ms: Dict[str, List[float]] = {k: [] for k in steps}
    for _ in range(blocks):
        for name, step in steps.items():
            t0 = clock()
            for _ in range(per_block):
                step()
            ms[name].append((clock() - t0) / per_block * 1000.0)
    return {k: float(np.median(v)) for k, v in ms.items()}
