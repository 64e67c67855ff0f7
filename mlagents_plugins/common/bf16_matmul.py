"""bf16 products in the update's wide linear layers, on processors that multiply bf16 in hardware (issue #55).

A SAC update at 2x256 spends most of its matmul time in each network's 256x256 hidden layer.  CPUs with AVX-512
BF16 (AMD Zen 4 and later, Intel Cooper Lake) or AMX (Intel Sapphire Rapids and later) multiply bf16 operands at
about twice fp32's rate with fp32 accumulation, which oneDNN uses when PyTorch multiplies bf16 tensors.

``Bf16Linear`` is ``nn.Linear`` with one switch: inside ``bf16_products()`` its input and weight are rounded to
bf16 for the product (accumulated in fp32 by the kernel, its result rounded to bf16 - PyTorch's CPU kernels return
the operands' type - and turned back to fp32) and the bias is added in fp32; outside it, it is ``nn.Linear``
exactly.  Only layers with at least ``MIN_FEATURES`` inputs *and* outputs switch (the hidden layers: the first
layer, whose inputs are observations, and the value and action heads stay fp32, so Q values and actions keep fp32
resolution).  The parameters, the optimizer's state and the checkpoints stay fp32; the switch is
on only around a gradient update, so acting, evaluation and the exported ONNX (traced outside it) are fp32, the
plain MLP Unity runs.

Measured on a 2-core AMD EPYC with AVX-512 BF16 (bench/results/fast-sac-bf16-probe-2026-11-30): fast_sac's update
at 2x256 0.74-0.75x its fp32 time.  Where the CPU lacks both, oneDNN emulates bf16 at about 5x fp32's time (an
Intel Cascade Lake); and a CPU listing the flag need not gain (an Intel Xeon VM with ``avx512_bf16`` and no AMX:
the product 1.79x fp32's time, bench/results/fast-sac-speed-xeon-bf16-2026-12-02).  So ``auto`` switches only where
``native_bf16_matmul()`` finds the hardware *and* ``bf16_is_faster()`` measures a 256x256 layer's products faster in
bf16.
"""
import contextlib
import functools
import time
from typing import Dict, Iterator

from mlagents.torch_utils import nn, torch
from mlagents_envs.logging_util import get_logger

# one cached reader of /proc/cpuinfo for the package; the private name is what tests replace
from mlagents_plugins.common.cpu_info import cpu_flags as _cpu_flags
from mlagents_plugins.common.timing import time_interleaved

logger = get_logger(__name__)

#: A linear layer switches only with at least this many inputs and outputs (the hidden layers of 256+ units).  Below,
#: casting the operands costs more than the bf16 product saves: one 128x128 layer's forward and backward on 128 rows
#: took 1.29x its fp32 CPU, 256x256 on 128-512 rows 0.55-0.81x (AVX-512 BF16 EPYC,
#: bench/results/fast-sac-bf16-2026-11-30, threshold section).
MIN_FEATURES = 256

#: ``auto`` takes bf16 only where a 256x256 layer's three products (forward, input gradient, weight gradient) take at
#: most this fraction of their fp32 CPU time.  Measured, the 256x256 products against the compiled update at 2x256:
#: a Zen 5 EPYC 0.28x (update 0.72x), an Intel Xeon with AMX 0.33-0.39x (update 0.79x), an Intel Xeon VM listing
#: avx512_bf16 without AMX 1.79x (update 1.39-1.49x).  A line through them puts the update at about
#: ``0.59 + 0.48 * products`` (the casts cost what the products save near 0.85x; at 0.75x the update gains about 5%),
#: so the margin keeps a near tie on fp32 (bench/results/fast-sac-auto-products-2026-12-03).
BF16_FASTER_BELOW = 0.75
#: The probe's layer: the 256x256 hidden layer of a 2x256 network on a batch of 256, the shape of fast_sac's update
PROBE_FEATURES = 256
PROBE_ROWS = 256

_ACTIVE = False  # True only inside ``bf16_products(True)``; read by ``Bf16Linear.forward`` (and guarded by Dynamo)


class Bf16Linear(nn.Linear):
    """``nn.Linear`` whose product runs on bf16 operands inside ``bf16_products()`` (fp32 accumulation, the result
    rounded to bf16, returned and added to the bias in fp32); exactly ``nn.Linear`` outside it.  Made by switching
    an existing layer's class (``use_bf16_linears_``), so its parameters and ``state_dict`` keys are the layer's
    own."""

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        if not _ACTIVE:
            return nn.functional.linear(data, self.weight, self.bias)
        product = nn.functional.linear(data.to(torch.bfloat16), self.weight.to(torch.bfloat16)).to(data.dtype)
        return product if self.bias is None else product + self.bias


def use_bf16_linears_(module: nn.Module, min_features: int = MIN_FEATURES) -> int:
    """Switch every ``nn.Linear`` inside ``module`` with ``min_features`` or more inputs and outputs to
    ``Bf16Linear`` (in place, parameters kept); returns how many."""
    switched = 0
    for layer in module.modules():
        if type(layer) is nn.Linear and min(layer.in_features, layer.out_features) >= min_features:
            layer.__class__ = Bf16Linear
            switched += 1
    return switched


@contextlib.contextmanager
def bf16_products(enabled: bool = True) -> Iterator[None]:
    """Within the block (when ``enabled``) every ``Bf16Linear`` multiplies bf16 operands; outside, fp32."""
    global _ACTIVE
    if not enabled:
        yield
        return
    previous = _ACTIVE
    _ACTIVE = True
    try:
        yield
    finally:
        _ACTIVE = previous


def native_bf16_matmul(device: torch.device) -> bool:
    """Whether ``device`` multiplies bf16 in hardware where we measured it: a CPU whose flags (Linux's
    ``/proc/cpuinfo``) include ``avx512_bf16`` or ``amx_bf16``.  False elsewhere (other systems, GPUs: not
    measured; ``update_precision: bf16`` still switches there)."""
    if torch.device(device).type != "cpu":
        return False
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16"})


def probe_product_times(features: int = PROBE_FEATURES, rows: int = PROBE_ROWS, calls: int = 40) -> Dict[str, float]:
    """CPU ms of one ``features`` x ``features`` layer's three products on ``rows`` rows - forward ``x W^T``, input
    gradient ``dy W``, weight gradient ``dy^T x`` - with fp32 operands and with bf16 ones: ``{"fp32": ms, "bf16": ms}``,
    interleaved blocks (``time_interleaved``) on the process's CPU clock, at the thread count torch uses now.

    Only the products, on operands already in their precision: in the compiled update Inductor writes the bf16
    operands from the kernels that compute them, so the casts an eager layer would add (and the autograd around
    it) are not what the update pays; an eager layer's forward and backward put bf16 at 0.71-0.89x fp32 on an Intel
    Xeon with AMX whose compiled update ran 0.79x, its products 0.33-0.39x.  About 0.05 s at the defaults.  Draws
    nothing from torch's global generator (a run's initialization and sampling stay what they are without it)."""
    generator = torch.Generator().manual_seed(0)
    steps = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x = torch.randn(rows, features, generator=generator).to(dtype)
        weight = torch.randn(features, features, generator=generator).to(dtype)
        grad_out = torch.randn(rows, features, generator=generator).to(dtype)

        def step(x: torch.Tensor = x, weight: torch.Tensor = weight, grad_out: torch.Tensor = grad_out) -> None:
            torch.mm(x, weight.t())
            torch.mm(grad_out, weight)
            torch.mm(grad_out.t(), x)

        steps[name] = step
    return time_interleaved(steps, updates=calls, warmup=3, blocks=5, clock=time.process_time)


def bf16_wins(ms: Dict[str, float]) -> bool:
    """``auto``'s rule on ``probe_product_times``'s result: bf16 at or below ``BF16_FASTER_BELOW`` of fp32's time."""
    return ms["bf16"] <= BF16_FASTER_BELOW * ms["fp32"]


@functools.lru_cache(maxsize=None)
def _bf16_is_faster(threads: int) -> bool:
    ms = probe_product_times()
    faster = bf16_wins(ms)
    logger.info(f"update_precision auto: a {PROBE_FEATURES}x{PROBE_FEATURES} layer's three products on "
                f"{PROBE_ROWS} rows took {ms['bf16']:.3f} ms with bf16 products against {ms['fp32']:.3f} ms in fp32 "
                f"({ms['bf16'] / max(ms['fp32'], 1e-9):.2f}x, {threads} thread(s)): the update multiplies "
                f"{'bf16' if faster else 'fp32'} (bf16 only at or below {BF16_FASTER_BELOW}x)")
    return faster


def bf16_is_faster() -> bool:
    """Whether bf16 products beat fp32 on this CPU by ``BF16_FASTER_BELOW``, measured once per process and thread
    count (``probe_product_times``, logged), so every network of a run decides alike."""
    return _bf16_is_faster(torch.get_num_threads())


def auto_bf16(device: torch.device) -> bool:
    """``update_precision: auto`` on ``device``: bf16 where the CPU has the hardware (``native_bf16_matmul``) and
    it measures faster there (``bf16_is_faster``); fp32 elsewhere, without timing anything."""
    return native_bf16_matmul(device) and bf16_is_faster()
