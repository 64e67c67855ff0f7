"""fast_sac's full update at MuJoCo sizes against a measured GEMM floor: the same matrix products alone (issue #55).

In one process at one torch thread (``--threads``): fast_sac built as ``python -m bench speed update`` builds it
(``configs/fast_sac_balance.yaml``, here at ``--hidden-units`` x ``--num-layers`` and ``--batch-size``; 8 vector
observations, 2 actions), its buffer filled through its own ``_process_trajectory``; after ``--warmup`` updates
(``torch.compile`` and the matmul kernel chooser settled), ``torch.profiler`` records ``--profiled`` updates with
their operators' input shapes and dtypes.  The floor is every matrix product those updates ran (``aten::mm``,
``addmm``, ``bmm``, ``_mkl_linear``/``mkldnn`` linear variants: the shapes, dtype and count per update), replayed as
``torch.mm`` on contiguous inputs of the same shapes and dtype (fp32, or bf16 under ``update_precision``; each call
its own tensors, so no operand stays in cache), with the update's fp32 matmul precision; it is what the update would
cost if everything but its GEMMs were free.  The products are read from a second fast_sac built the same way with
``MLAGENTS_PLUGINS_PY_WRAPPER=1``: the default whole step calls them from Inductor's generated C++
(``whole_step_cpp``), where the profiler does not see them; the Python wrapper calls the same products as ATen
operators.  The update is also timed in its two parts: ``sample_batch`` (replay rows to
an ``SACBatch``) and the optimizer's step on one fixed batch.  Timing: ``bench.speed.common.time_interleaved`` on the thread's CPU clock
(median of 5 interleaved blocks).  Also printed: the profiler's top operators by self CPU time, so what the update
spends beyond its GEMMs is named.

    python -m bench speed gemm-floor --hidden-units 256 --batch-size 256 [--json]

The replayed GEMMs use contiguous row-major inputs; where the update multiplies by a transposed view, the BLAS
call differs only in its transpose flag.  A product inside a fused kernel that the profiler does not show as its
own operator would be missing from the floor (the floor would be too low, never too high).
"""
import argparse
import json
import os
import tempfile
import time
import warnings
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from bench.speed import common

warnings.filterwarnings("ignore", message="pkg_resources is deprecated")

#: profiler operator names that are one matrix product each
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "mkldnn::_linear_pointwise",
            "aten::_mkl_linear", "mkl::_mkl_linear")


def gemm_shape(name: str, shapes: List[List[int]]) -> Optional[Tuple[int, int, int]]:
    """(M, K, N) of one profiled matrix product from its input shapes; None when they are not a plain 2-D
    product (batched products are flattened into M)."""
    dims = [s for s in shapes if s]
    if name in ("aten::mm",) and len(dims) >= 2:
        (m, k), (_, n) = dims[0][-2:], dims[1][-2:]
        return m, k, n
    if name in ("aten::addmm",) and len(dims) >= 3:  # (bias, a, b)
        (m, k), (_, n) = dims[1][-2:], dims[2][-2:]
        return m, k, n
    if name in ("aten::bmm",) and len(dims) >= 2:
        b, m, k = dims[0]
        return b * m, k, dims[1][-1]
    if name in ("aten::baddbmm",) and len(dims) >= 3:
        b, m, k = dims[1]
        return b * m, k, dims[2][-1]
    if "linear" in name and len(dims) >= 2:  # (input [.., K], weight [N, K])
        x, w = dims[0], dims[1]
        return int(np.prod(x[:-1])), x[-1], w[0]
    return None


#: the profiler's dtype names of matrix operands, as torch dtypes' names (others: float32)
_DTYPES = {"float": "float32", "c10::BFloat16": "bfloat16", "c10::Half": "float16", "double": "float64"}


def gemm_dtype(dtypes: Sequence[str]) -> str:
    """The dtype name of one profiled product's operands (``event.input_dtypes``: the first one listed that is a
    matrix type; a bias of another type does not decide it); ``float32`` when the profiler gave none."""
    for name in dtypes or ():
        if name in _DTYPES:
            return _DTYPES[name]
    return "float32"


def profile_update(update, updates: int) -> Tuple[Counter, List[Tuple[str, float, int]], float]:
    """(Counter of (M, K, N, dtype) per update, top operators by self CPU ms per update, profiled update ms)."""
    from torch.profiler import ProfilerActivity, profile

    t0 = time.thread_time()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(updates):
            update()
    ms = (time.thread_time() - t0) / updates * 1000
    shapes: Counter = Counter()
    for event in prof.events():
        if event.name in GEMM_OPS:
            got = gemm_shape(event.name, [list(s) for s in event.input_shapes])
            if got is not None:
                shapes[got + (gemm_dtype(getattr(event, "input_dtypes", None) or ()),)] += 1
    per_update = Counter({k: v / updates for k, v in shapes.items()})
    averages = list(prof.key_averages())
    top = sorted(((e.key, e.self_cpu_time_total / 1000 / updates, e.count // updates)
                  for e in averages), key=lambda r: -r[1])[:15]
    return per_update, top, ms, op_shares(averages)


def op_kind(name: str) -> str:
    """``gemm``, ``layer_norm`` (an Inductor kernel that fuses a layer norm), ``inductor_kernel`` (its other
    generated kernels, named only with ``--kernel-names``), or ``other`` (the compiled graph's own code, the
    optimizer outside it, sampling, ...)."""
    if name in GEMM_OPS:
        return "gemm"
    if "cpp_fused" in name:
        return "layer_norm" if "layer_norm" in name else "inductor_kernel"
    return "other"


def op_shares(averages) -> Dict[str, float]:
    """Share of the profiled self time per ``op_kind`` (profiler times are wall times of the thread: on a loaded
    machine read the shares, not the milliseconds)."""
    totals: Dict[str, float] = {}
    for e in averages:
        totals[op_kind(e.key)] = totals.get(op_kind(e.key), 0.0) + e.self_cpu_time_total
    whole = sum(totals.values()) or 1.0
    return {k: round(v / whole, 3) for k, v in sorted(totals.items())}


def gemm_replay(shapes: Counter):
    """One call: every (M, K, N, dtype) product of one update (``profile_update``'s keys), as many times as the
    update runs it, via ``torch.mm`` on operands of that dtype."""
    import torch

    gen = torch.Generator().manual_seed(0)
    calls = []
    for (m, k, n, dtype_name), count in sorted(shapes.items()):
        dtype = getattr(torch, dtype_name)
        for _ in range(int(round(count))):  # tensors of their own, as the update's: no operand stays hot in cache
            calls.append((torch.randn(m, k, generator=gen).to(dtype), torch.randn(k, n, generator=gen).to(dtype),
                          torch.empty(m, n, dtype=dtype)))

    def step() -> None:
        for a, b, out in calls:
            torch.mm(a, b, out=out)

    return step


def product_shapes(sizes: Dict[str, int], args: Any, out_dir: str) -> Counter:
    """The matrix products of one update, per update (``profile_update``), from a fast_sac built as the timed one
    but with Inductor's Python wrapper (``MLAGENTS_PLUGINS_PY_WRAPPER=1`` while it is built), whose products the
    profiler sees as ATen operators."""
    import torch

    torch.manual_seed(0)
    probe, spec = common.make_trainer_py_wrapper("fast_sac", out_dir, sizes=sizes)
    common.fill(probe, spec, args.rows, np.random.default_rng(0))
    for _ in range(args.warmup):
        probe.update_once()
    shapes, _, _, _ = profile_update(probe.update_once, args.profiled)
    return shapes


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench speed gemm-floor", description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden-units", type=int, default=256)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=60, help="untimed updates first (compile, kernel chooser)")
    p.add_argument("--profiled", type=int, default=5)
    p.add_argument("--updates", type=int, default=300, help="timed updates and GEMM replays (5 blocks)")
    p.add_argument("--kernel-names", action="store_true",
                   help="Inductor records each generated kernel by name (TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1; "
                        "its own compile cache entries), so the profile splits the compiled graph's time")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.kernel_names:
        os.environ["TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"] = "1"  # read when torch._inductor's config loads
    import logging

    import torch
    from mlagents_envs.logging_util import set_log_level

    set_log_level(logging.WARNING)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sizes = {"hidden_units": args.hidden_units, "num_layers": args.num_layers, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory() as tmp:
        trainer, spec = common.make_trainer("fast_sac", os.path.join(tmp, "timed"), sizes=sizes)
        common.fill(trainer, spec, args.rows, np.random.default_rng(0))
        for _ in range(args.warmup):
            trainer.update_once()
        head = trainer.optimizer.head
        onednn = bool(head.matmul_kernels.use_onednn)
        _, top, profiled_ms, shares = profile_update(trainer.update_once, args.profiled)
        shapes = product_shapes(sizes, args, os.path.join(tmp, "probe"))
        if not shapes:
            raise SystemExit("gemm-floor: the profiler saw no matrix product in the update (operator names "
                             f"{sorted(GEMM_OPS)}); no floor to measure")
        previous = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("medium" if onednn else previous)
        try:
            replay = gemm_replay(shapes)
            batch = trainer.sample_batch()
            ms = common.time_interleaved({"update": trainer.update_once, "sample": trainer.sample_batch,
                                          "step": lambda: trainer.optimizer.update(batch), "gemm_floor": replay},
                                         args.updates, warmup=5, clock=time.thread_time)
        finally:
            torch.set_float32_matmul_precision(previous)
    flops = sum(2 * m * k * n * c for (m, k, n, _), c in shapes.items())
    out = {
        "sizes": sizes, "threads": args.threads, "observations": 8, "actions": 2, "onednn_matmul": onednn,
        "update_ms": round(ms["update"], 3), "sample_batch_ms": round(ms["sample"], 3),
        "optimizer_step_ms": round(ms["step"], 3), "gemm_floor_ms": round(ms["gemm_floor"], 3),
        "update_over_floor": round(ms["update"] / ms["gemm_floor"], 2),
        "gemm_gflop_per_update": round(flops / 1e9, 4),
        "floor_gflops": round(flops / 1e9 / (ms["gemm_floor"] / 1000), 1),
        "gemms_per_update": round(sum(shapes.values()), 1),
        "shapes": [list(key) + [round(c, 2)] for key, c in sorted(shapes.items())],
        "profiled_update_ms": round(profiled_ms, 3), "profiled_self_time_shares": shares,
        "top_ops_self_ms": [[name, round(t, 3), count] for name, t, count in top],
    }
    if args.json:
        print(json.dumps(out))
    else:
        for key in ("sizes", "threads", "onednn_matmul", "update_ms", "sample_batch_ms", "optimizer_step_ms",
                    "gemm_floor_ms", "update_over_floor", "profiled_self_time_shares",
                    "gemm_gflop_per_update", "floor_gflops", "gemms_per_update", "profiled_update_ms"):
            print(f"{key:24s} {out[key]}")
        print("GEMM shapes (M, K, N, dtype, per update):", out["shapes"])
        print("top operators by self CPU ms per update (profiled, so inflated):")
        for name, t, count in out["top_ops_self_ms"]:
            print(f"  {t:8.3f} ms  {count:5d}x  {name}")
    return out

