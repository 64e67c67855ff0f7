"""``CompiledStep``: run a trainer's loss computation through ``torch.compile``, falling back to eager.

Why: after the fused kernels (``fast_kernels.py``) a SAC update at 2x256 spends about 4 of its 7 ms in
matmuls and the rest in ~1,200 small operator calls (bias adds, activations, concatenations, the losses'
elementwise math) and their autograd bookkeeping.  ``torch.compile`` (TorchDynamo + Inductor) traces the
loss function once, fuses those elementwise ops into a few generated kernels for forward and backward, and
leaves the matmuls to the same ATen kernels - the same function, evaluated with fewer passes over memory.
Rounding may differ in the last bits (fused kernels evaluate ``exp``/sums in another order), as between
any two BLAS builds; learning does not depend on it (see tests/fast_sac/test_compiled_update.py).

What is compiled is only a pure function of tensors -> losses; parameters are updated outside it
(Adam, Polyak), and modules are not wrapped, so checkpoints, ``state_dict`` keys and the ONNX export are
untouched.

Never losing a run matters more than speed, so compiling is best effort: if the first compiled call raises
(no C++ compiler - common on Windows -, no Triton for CUDA, an unsupported torch), a warning names the error
and the step runs eagerly for the rest of the run.  Compiling costs about 10-30 s of CPU on the first
update (a cached graph on later runs is quicker) and pays back after a few thousand updates.

``MLAGENTS_PLUGINS_COMPILE=0`` turns compiling off process-wide (overriding the trainer setting), for
debugging and for test suites that create many short-lived trainers.
"""
import os
import time
from typing import Any, Callable, Optional, Sequence

from mlagents_envs.logging_util import get_logger
from mlagents.torch_utils import torch

logger = get_logger(__name__)  # ML-Agents' logger: shown in mlagents-learn's output at --log-level

ENV_SWITCH = "MLAGENTS_PLUGINS_COMPILE"


def compile_allowed_by_env() -> bool:
    """False when ``MLAGENTS_PLUGINS_COMPILE`` is set to 0/false/no/off."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def compile_wanted(setting: Optional[bool], observation_specs: Sequence[Any]) -> bool:
    """``compile_update`` resolved for one behavior: true / false as set; null (automatic) compiles when every
    observation is a vector - Inductor's generated CPU convolutions ran slower than eager ones on the camera
    scene, so visual observations stay eager."""
    if setting is not None:
        return bool(setting)
    return all(len(spec.shape) == 1 for spec in observation_specs)


class CompiledStep:
    """Callable wrapper: ``fn(*args)`` compiled when ``enabled`` (and allowed), eager otherwise or after a failure.

    ``mode`` tells whether the last call ran compiled (``"compiled"``), eagerly because compiling is off
    (``"eager"``) or eagerly because compiling failed (``"eager (compile failed)"``); ``error`` keeps the
    failure's text.
    """

    def __init__(self, fn: Callable[..., Any], enabled: bool, name: str):
        self._fn = fn
        self.name = name
        self.error: Optional[str] = None
        self._compiled: Optional[Callable[..., Any]] = None
        if enabled and compile_allowed_by_env() and hasattr(torch, "compile"):
            # dynamic=False: batch shapes are fixed per run; a changed shape recompiles rather than
            # generating slower shape-generic kernels.
            self._compiled = torch.compile(fn, dynamic=False)
        self.mode = "compiled" if self._compiled is not None else "eager"
        self._announced = False
        self._backward_ok = False  # a compiled backward has run once (it is compiled lazily, on first use)

    def __call__(self, *args: Any) -> Any:
        compiled = self._compiled
        if compiled is None:
            return self._fn(*args)
        try:
            if self._announced:
                return compiled(*args)
            logger.info("%s: compiling with torch.compile (one-off, typically 10-30 s)...", self.name)
            start = time.perf_counter()
            result = compiled(*args)
            self._announced = True
            logger.info("%s: compiled in %.1f s", self.name, time.perf_counter() - start)
            return result
        except Exception as exc:  # any compiler/toolchain failure: keep training, eagerly
            self._give_up(exc)
            return self._fn(*args)

    def forward_backward(self, zero_grad: Callable[[], None], *args: Any, ready: bool = True) -> Any:
        """``result = self(*args)``, then ``result[0].backward()``; returns ``result``.

        ``ready=False`` runs the step eagerly without compiling yet: the trainers pass whether their fp32 matmul
        kernel is chosen (``MatmulKernelChooser.decided``), since the kernel switch is global state that
        ``torch.compile`` guards on, and compiling while the chooser alternates would compile twice.

        AOTAutograd compiles the backward graph lazily, on its first use, so a toolchain failure can also
        surface there: then gradients are cleared with ``zero_grad`` and the step is redone eagerly, once.
        """
        if not ready:
            result = self._fn(*args)
            result[0].backward()
            return result
        checking = self._compiled is not None and not self._backward_ok
        result = self(*args)
        if not checking or self._compiled is None:
            result[0].backward()
            return result
        try:
            result[0].backward()
        except Exception as exc:  # compiled backward failed on first use: redo this step eagerly
            self._give_up(exc)
            zero_grad()
            result = self._fn(*args)
            result[0].backward()
            return result
        self._backward_ok = True
        return result

    def gradient_step(
        self,
        optimizers: Sequence[Any],
        lr: float,
        *args: Any,
        ready: bool = True,
        before_step: Optional[Callable[[], None]] = None,
    ) -> Any:
        """One optimizer step on the loss this step computes, the cadence every trainer's update shares: each
        optimizer's learning rate set to ``lr`` (all param groups), gradients cleared, ``forward_backward`` (one
        backward of the summed loss), ``before_step`` (gradient clipping, say), then every optimizer's ``step``.
        Returns the step function's result."""
        for opt in optimizers:
            for group in opt.param_groups:
                group["lr"] = lr

        def zero_grad() -> None:
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)

        zero_grad()
        result = self.forward_backward(zero_grad, *args, ready=ready)
        if before_step is not None:
            before_step()
        for opt in optimizers:
            opt.step()
        return result

    def _give_up(self, exc: BaseException) -> None:
        if self._compiled is None:
            return
        self._compiled = None
        self.mode = "eager (compile failed)"
        self.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        logger.warning(
            "%s: torch.compile failed (%s); continuing without compiling (same math, slower). "
            "Set compile_update: false to skip the attempt.",
            self.name,
            self.error,
        )
