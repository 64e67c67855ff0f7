"""Faster kernels for the same math: fused Swish, fused Adam, and oneDNN's fp32 matmul on CPU.

Every choice here changes which kernel runs, never the function computed; each is guarded so a platform
where the faster kernel is missing or inexact keeps the default.

Swish: ML-Agents' ``Swish`` activation is replaced by PyTorch's fused ``SiLU`` (the same function).

ML-Agents' ``Swish.forward`` is ``torch.mul(x, torch.sigmoid(x))``: two kernels and an extra [B, H] tensor
forward, and three kernels backward (sigmoid backward, two muls, an add).  ``torch.nn.functional.silu``
computes exactly ``x * sigmoid(x)`` in one kernel each way.  On the 2x256 networks of a SAC update this is
about a quarter of the non-matmul time (see ``bench/update_speed.py``).

The swap changes no parameters (neither module has any), so checkpoints, ``state_dict`` keys and the
ONNX contract are unchanged: the TorchScript exporter writes ``SiLU`` as ``Mul(x, Sigmoid(x))`` at
ML-Agents' opset 9, the very nodes ``Swish`` produced.
"""
import contextlib
import time
from typing import Callable, Dict, Iterator, Optional

from mlagents.torch_utils import nn, torch
from mlagents.trainers.torch_entities.layers import Swish
from mlagents_envs.logging_util import get_logger

logger = get_logger(__name__)  # ML-Agents' logger: shown in mlagents-learn's output at --log-level


class FusedSwish(nn.Module):
    """``x * sigmoid(x)`` as one fused kernel (``F.silu``); a drop-in for ML-Agents' ``Swish``."""

    def forward(self, data: torch.Tensor) -> torch.Tensor:
        return nn.functional.silu(data)


def fuse_swish_(module: nn.Module) -> int:
    """Replace every ML-Agents ``Swish`` inside ``module`` (in place) by ``FusedSwish``; returns how many.

    Kernel switch ``fused_swish`` (``patches.KERNEL_SWITCHES``): nothing is replaced when it is switched off
    (``MLAGENTS_PLUGINS_NO_FUSED_SWISH=1``) or under an mlagents version it was not checked against."""
    from mlagents_plugins.host import patches

    return replace_swish_(module, FusedSwish) if patches.allowed("fused_swish") else 0


def replace_swish_(module: nn.Module, make: Callable[[], nn.Module]) -> int:
    """Replace every ML-Agents ``Swish`` inside ``module`` (in place) by a fresh ``make()``; returns how many."""
    swapped = 0
    for name, child in list(module.named_children()):
        if isinstance(child, Swish):
            setattr(module, name, make())
            swapped += 1
        else:
            swapped += replace_swish_(child, make)
    return swapped


_FUSED_ADAM_OK = {}


def fused_adam_kwargs(device: torch.device) -> dict:
    """``{"fused": True}`` where this torch has a fused Adam kernel for ``device``, else ``{"foreach": True}``.

    The fused kernel does the whole Adam update of all parameters in one pass instead of a dozen multi-tensor
    ops (about a tenth of the non-matmul time of a SAC update on CPU).  CPU support arrived in torch 2.4, so
    older torch (allowed on Python 3.10) and devices without a kernel fall back to the multi-tensor path;
    both implement the same Adam, and their ``state_dict`` formats are the same, so checkpoints move freely.
    """
    key = torch.device(device).type
    if key not in _FUSED_ADAM_OK:
        try:
            probe = torch.zeros(1, device=device, requires_grad=True)
            opt = torch.optim.Adam([probe], fused=True)
            probe.grad = torch.zeros_like(probe)
            opt.step()
            _FUSED_ADAM_OK[key] = True
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            _FUSED_ADAM_OK[key] = False
    return {"fused": True} if _FUSED_ADAM_OK[key] else {"foreach": True}


# ---------------------------------------------------------------------------------------- fp32 matmul kernels
_ONEDNN_MATMUL_OK: Optional[bool] = None


def _time_matmul(a: torch.Tensor, b: torch.Tensor, reps: int = 5, inner: int = 10) -> float:
    """Seconds per ``a @ b``: the best of ``reps`` blocks of ``inner`` calls."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return best / inner


def accept_matmul_kernel(rel_err: float, default_seconds: float, candidate_seconds: float) -> bool:
    """Use the candidate kernel only if it is exact to fp32 (relative error < 1e-5; bf16 inputs give ~2e-3,
    TF32 ~5e-4) and at least 10% faster than the default one."""
    return rel_err < 1e-5 and candidate_seconds < 0.9 * default_seconds


def onednn_fp32_matmul_available() -> bool:
    """Whether routing fp32 CPU matmuls to oneDNN is both exact to fp32 and faster here (probed once).

    PyTorch sends fp32 CPU matmuls to MKL's sgemm, which on AMD processors runs a non-AVX-512 code path;
    ``torch.set_float32_matmul_precision("medium")`` routes them to oneDNN instead.  Where oneDNN has no
    reduced-precision kernel (no AMX) its fp32 kernel computes the same fp32 products and is about twice as
    fast on AVX-512 AMD processors.  Where it *does* have one (AMX, or any GPU), "medium" would round the
    inputs to bf16/TF32 - not the same math - so the probe requires fp32 accuracy (relative error below
    1e-5 against a float64 reference; bf16 inputs give ~2e-3) and a real speed-up before saying yes.
    """
    global _ONEDNN_MATMUL_OK
    if _ONEDNN_MATMUL_OK is not None:
        return _ONEDNN_MATMUL_OK
    ok = False
    rel_err, t_default, t_onednn = float("nan"), float("nan"), float("nan")
    previous = torch.get_float32_matmul_precision()
    try:
        gen = torch.Generator().manual_seed(1234)
        a = torch.randn(256, 256, generator=gen, device="cpu")
        b = torch.randn(256, 256, generator=gen, device="cpu")
        ref = a.double() @ b.double()
        torch.set_float32_matmul_precision("highest")
        t_default = _time_matmul(a, b)
        torch.set_float32_matmul_precision("medium")
        rel_err = float(((a @ b).double() - ref).abs().max() / ref.abs().max())
        t_onednn = _time_matmul(a, b)
        ok = accept_matmul_kernel(rel_err, t_default, t_onednn)
    except (RuntimeError, AttributeError):
        ok = False
    finally:
        torch.set_float32_matmul_precision(previous)
    _ONEDNN_MATMUL_OK = ok
    # Timed once per process, so a near tie can go either way between runs on one machine (on a Zen 4 EPYC at one
    # thread it did); the line says which way, and bench gym's records read it (matmul_kernel).
    logger.info(
        "fast_cpu_matmul: %s (a 256x256 product: %.1f us with oneDNN, %.1f us default, relative error %.1e; oneDNN "
        "needs at most 0.9x and 1e-5)",
        "oneDNN exact and faster here, the first updates time both kernels" if ok
        else "default fp32 matmul kernel chosen",
        t_onednn * 1e6,
        t_default * 1e6,
        rel_err,
    )
    return ok


@contextlib.contextmanager
def fast_fp32_matmul(device: torch.device, enabled: bool = True) -> Iterator[None]:
    """Within the block, fp32 CPU matmuls use oneDNN when ``onednn_fp32_matmul_available()``; else no-op.

    Scoped (not process-wide) so built-in trainers sharing the process keep their own kernels; the setting
    is global in PyTorch, so a concurrent thread may see it too - harmless, since the probe guarantees the
    same fp32 results.  Never applied for CUDA, where "medium" means TF32.
    """
    if not enabled or torch.device(device).type != "cpu" or not onednn_fp32_matmul_available():
        yield
        return
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


class MatmulKernelChooser:
    """Per optimizer: time the real update with both fp32 matmul kernels, then keep the faster one.

    oneDNN's kernel halves the time of a 256x256 matmul on AVX-512 AMD processors but adds ~20-30 us of fixed
    cost per call, so on narrow networks (64 units) the default kernel wins.  Which one is faster depends on
    the model, the batch and the machine, so - like ``torch.backends.cudnn.benchmark`` - the first updates
    alternate between the two (after ``warmup`` untimed ones), and after ``trials`` timed updates of each the
    kernel with the lower median is kept for the rest of the run (oneDNN only if at least 5% faster).  Both
    kernels compute the same fp32 products (``onednn_fp32_matmul_available`` checks that first) up to their
    summation order, which a learning run can amplify: two runs of one config on one machine that chose differently
    can end apart (bench/results/fast-sac-auto-probe-2026-12-02, "On a Zen 4"); MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL=1
    pins ATen's kernel.  The timed updates are eager ones (compiling waits for ``decided``), so they can pick a kernel
    the compiled step runs slower with: fast_sac does not time it where its hidden layers multiply in bf16
    (``sac/head.py``; bench/results/fast-sac-kernel-choice-2026-12-03).
    """

    def __init__(self, device: torch.device, enabled: bool = True, trials: int = 8, warmup: int = 3):
        from mlagents_plugins.host import patches

        # Kernel switch ``onednn_matmul`` (``patches.KERNEL_SWITCHES``): off with MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL=1.
        self.active = (
            bool(enabled)
            and torch.device(device).type == "cpu"
            and patches.allowed("onednn_matmul")
            and onednn_fp32_matmul_available()
        )
        self.trials = trials
        self.warmup = warmup
        self.calls = 0
        self.seconds: Dict[bool, list] = {False: [], True: []}
        #: None while still timing; then True (oneDNN) or False (default kernel)
        self.use_onednn: Optional[bool] = None if self.active else False

    @property
    def decided(self) -> bool:
        """True once the kernel is fixed for the run (immediately when there is nothing to choose)."""
        return self.use_onednn is not None

    def _decide(self) -> None:
        med = {k: sorted(v)[len(v) // 2] for k, v in self.seconds.items()}
        self.use_onednn = med[True] < 0.95 * med[False]
        logger.info(
            "fast_cpu_matmul: %s fp32 matmul kernel chosen (median update %.2f ms with oneDNN, %.2f ms default)",
            "oneDNN" if self.use_onednn else "default",
            med[True] * 1e3,
            med[False] * 1e3,
        )

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Run one update inside this block."""
        if self.use_onednn is False:
            yield
            return
        timing = self.use_onednn is None and self.calls >= self.warmup
        onednn = True if self.use_onednn else (self.calls % 2 == 0)
        self.calls += 1
        start = time.perf_counter()
        with fast_fp32_matmul(torch.device("cpu"), onednn):
            yield
        elapsed = time.perf_counter() - start
        if timing:
            self.seconds[onednn].append(elapsed)
            if min(len(v) for v in self.seconds.values()) >= self.trials:
                self._decide()
