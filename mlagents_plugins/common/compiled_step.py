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

**Whole steps.**  Where the optimizers are plain Adam and no ``before_step`` callback runs between the backward
and the step, ``gradient_step`` compiles the *whole* step as one graph instead: the loss, its gradients
(``torch.autograd.grad`` traced by Dynamo, ``trace_autograd_ops``), their clipping when ``max_grad_norm`` is given,
and Adam's update of every parameter and its moments in place.  That removes the autograd engine's walk over the compiled backward, the Python optimizer and
most per-call wrapper overhead around two graphs.  Adam's state stays in the ``torch.optim.Adam`` objects
(``state_dict`` and checkpoints unchanged); the update is Adam's (Kingma & Ba 2015, Algorithm 1, with PyTorch's
placement of epsilon), evaluated in float32 where PyTorch evaluates the bias-correction scalars in double, so
parameters differ in the last bits.  Those two scalars per beta pair are computed on the host once per step, in the
same float32 arithmetic (``adam_step_scalars``), and passed in, where every parameter's step counter agrees: in the
graph Inductor evaluated them inside each parameter's fused kernel once per 16-lane vector (bench/results/
fast-sac-startup-2026-12-03).  The first step of a run is taken eagerly (it creates Adam's state); a
failure to build the whole step falls back to the loss-only compiled step above, with a warning.
``MLAGENTS_PLUGINS_WHOLE_STEP=0`` keeps the loss-only step.  Whole steps are built for parameters on the CPU only:
on CUDA (torch 2.11, an H100) muzero_repr's whole-step graph crashed the process with a segmentation fault inside
Inductor's Triton kernel launcher, which no fallback can catch (docs/gpu.md); there the loss-only graph, checked
on GPUs before, is used.

**C++ wrapper.**  Inductor drives a graph's kernels from a generated Python function; for the whole step (about
80 kernel and matrix-product calls, 100-odd inputs) the call beyond its kernels (that function, its size checks,
Dynamo's and AOTAutograd's wrappers) costs about a fifth of a SAC update at 2x256 on one CPU thread.  So the whole step is compiled with Inductor's ``cpp_wrapper`` (the same
kernels, called from generated C++) and ``fallback_random`` (the actor's noise drawn by ATen's generator, as
eagerly, instead of Inductor's per-element Philox, which filled whole 16-lane vectors for 2-6 actions): 0.85-0.99x
the update's CPU (bench/results/fast-sac-update-overhead-2026-11-29).  A cold compile took about as long with
the C++ wrapper as without it (77 and 78 s on a shared core there), and is cached like the rest.  It is a kernel
switch (``patches.KERNEL_SWITCHES``, ``whole_step_cpp``):
``MLAGENTS_PLUGINS_PY_WRAPPER=1`` keeps Inductor's defaults; a torch whose Inductor lacks the options, or a
compile with them that fails, falls back to the defaults (with a warning) before giving up the whole step.

**Cache.**  The compiled graphs are cached per machine kind under the user's cache folder (``compile_cache``), so
only the first run on a machine pays the whole compile.

``MLAGENTS_PLUGINS_COMPILE=0`` turns compiling off process-wide (overriding the trainer setting), for
debugging and for test suites that create many short-lived trainers.
"""
import contextlib
import itertools
import os
import time
import types
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from mlagents.torch_utils import torch
from mlagents_envs.logging_util import get_logger

from mlagents_plugins.common import compile_cache

logger = get_logger(__name__)  # ML-Agents' logger: shown in mlagents-learn's output at --log-level

# Dynamo traces ``torch.autograd.grad`` into a graph only with this switch (torch >= 2.11); without it the
# whole step is not attempted.
_TRACE_AUTOGRAD_OK = hasattr(torch, "_dynamo") and hasattr(torch._dynamo.config, "trace_autograd_ops")

ENV_SWITCH = "MLAGENTS_PLUGINS_COMPILE"
WHOLE_STEP_SWITCH = "MLAGENTS_PLUGINS_WHOLE_STEP"

_CODE_COPIES = itertools.count()


def _own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a function or a bound method) over its own copy of its code object.

    Dynamo keeps compiled graphs per code object and caps how many one code object may hold
    (``torch._dynamo.config.recompile_limit``, 8); past the cap a ``fullgraph`` compile raises and any other runs
    eagerly from then on.  Every trainer instance's step is the same method, so several behaviors in one
    ``mlagents-learn``, muzero_repr's two steps and runs made one after another in one process (the benchmark's
    workers) would fill one shared cache; with its own code object every ``CompiledStep`` has its own cache, and its
    graphs are freed with it.  Anything that is not a plain Python function is returned as it is."""
    func = getattr(fn, "__func__", fn)
    if not isinstance(func, types.FunctionType):
        return fn
    code = func.__code__.replace(co_name=f"{func.__code__.co_name}_{next(_CODE_COPIES)}")
    copy = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    owner = getattr(fn, "__self__", None)
    return types.MethodType(copy, owner) if owner is not None else copy


def _env_on(name: str) -> bool:
    """False when the environment variable ``name`` is set to 0/false/no/off (unset: on)."""
    return os.environ.get(name, "1").strip().lower() not in ("0", "false", "no", "off")


def compile_allowed_by_env() -> bool:
    """False when ``MLAGENTS_PLUGINS_COMPILE`` is set to 0/false/no/off."""
    return _env_on(ENV_SWITCH)


def whole_step_allowed_by_env() -> bool:
    """False when ``MLAGENTS_PLUGINS_WHOLE_STEP`` is set to 0/false/no/off."""
    return _env_on(WHOLE_STEP_SWITCH)


#: Inductor options of the whole step (module docstring, "C++ wrapper"): generated C++ drives the kernels, and the
#: random draws are ATen's (so a seed gives the eager step's draws).
WHOLE_STEP_OPTIONS: Dict[str, Any] = {"cpp_wrapper": True, "fallback_random": True}


def whole_step_options() -> Dict[str, Any]:
    """The Inductor options the whole step is compiled with: ``WHOLE_STEP_OPTIONS`` where the kernel switch
    ``whole_step_cpp`` is allowed (``MLAGENTS_PLUGINS_PY_WRAPPER`` unset, mlagents 1.1.0), those this torch's
    Inductor knows; ``{}`` (Inductor's defaults) otherwise."""
    from mlagents_plugins.host import patches

    if not patches.allowed("whole_step_cpp"):
        return {}
    try:
        import torch._inductor.config as inductor_config
    except Exception:  # no Inductor in this torch build: nothing compiles anyway
        return {}
    return {k: v for k, v in WHOLE_STEP_OPTIONS.items() if hasattr(inductor_config, k)}


def _plain_adam(opt: Any) -> bool:
    """Whether ``opt`` is ``torch.optim.Adam`` with only what ``_adam_update_`` implements (no weight decay,
    AMSGrad, maximize or differentiable mode) and tensor step counters."""
    if type(opt) is not torch.optim.Adam:
        return False
    for group in opt.param_groups:
        if group.get("weight_decay", 0) or group.get("amsgrad") or group.get("maximize") or group.get("differentiable"):
            return False
        if group.get("decoupled_weight_decay"):
            return False
    return all(isinstance(st.get("step"), torch.Tensor) for st in opt.state.values())


@contextlib.contextmanager
def _tracing_autograd() -> Iterator[None]:
    """Dynamo's ``trace_autograd_ops`` on for the block (the whole step's trace needs it; a call that finds its
    graph ignores it), set and restored as a plain attribute: ``torch._dynamo.config.patch`` builds a patcher on
    every call, about 1% of a fast_sac update at 2x256 on one thread (bench/results/fast-sac-speed-xeon-amx-2026-12-03)."""
    config = torch._dynamo.config
    previous = config.trace_autograd_ops
    config.trace_autograd_ops = True
    try:
        yield
    finally:
        config.trace_autograd_ops = previous


class _NoState(Exception):
    """A parameter got a gradient in the whole step but has no Adam state yet (never stepped)."""


def _detached(tree: Any) -> Any:
    return torch.utils._pytree.tree_map(lambda x: x.detach() if isinstance(x, torch.Tensor) else x, tree)


def _optimized(optimizers: Sequence[Any]) -> List[torch.Tensor]:
    """Every parameter the ``optimizers`` update, in group order."""
    return [p for opt in optimizers for group in opt.param_groups for p in group["params"]]


def _on_cpu(optimizers: Sequence[Any]) -> bool:
    """Whether the parameters the ``optimizers`` update are on the CPU (a trainer keeps all of them on one device)."""
    first = next((p for opt in optimizers for group in opt.param_groups for p in group["params"]), None)
    return first is None or first.device.type == "cpu"


def _clipped(grads: Sequence[Optional[torch.Tensor]], max_norm: float) -> List[Optional[torch.Tensor]]:
    """``grads`` scaled by ``min(1, max_norm / (total 2-norm + 1e-6))``: ``torch.nn.utils.clip_grad_norm_``'s
    rule, on gradients that are values rather than ``.grad`` fields (``None`` entries stay ``None``)."""
    present = [g for g in grads if g is not None]
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in present]))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [None if g is None else g * coef for g in grads]


def _beta_pairs(hyper: Sequence[Tuple[float, float, float]]) -> List[Tuple[float, float]]:
    """The distinct ``(beta1, beta2)`` of ``hyper``, in first-seen order: the index of each parameter's pair in
    ``_adam_update_``'s ``scalars``."""
    pairs: List[Tuple[float, float]] = []
    for beta1, beta2, _ in hyper:
        if (beta1, beta2) not in pairs:
            pairs.append((beta1, beta2))
    return pairs


def adam_step_scalars(lr: float, beta1: float, beta2: float, step_before: float) -> Tuple[float, float]:
    """``(lr / (1 - beta1^k), sqrt(1 - beta2^k))`` with ``k = step_before + 1``, evaluated as ``_adam_update_``'s
    graph evaluates them without ``scalars``: float32 throughout (``lr`` rounded to float32 as the step's ``lr``
    tensor holds it, ``powf``, IEEE division and square root), so the update is the same to the bit
    (``tests/test_whole_step.py``)."""
    f32 = np.float32
    k = f32(step_before) + f32(1.0)
    step_size = f32(lr) / (f32(1.0) - f32(beta1) ** k)
    bias_correction2_sqrt = np.sqrt(f32(1.0) - f32(beta2) ** k)
    return float(step_size), float(bias_correction2_sqrt)


def _adam_update_(
    params: Sequence[torch.Tensor],
    grads: Sequence[Optional[torch.Tensor]],
    exp_avg: Sequence[Optional[torch.Tensor]],
    exp_avg_sq: Sequence[Optional[torch.Tensor]],
    step: Sequence[Optional[torch.Tensor]],
    hyper: Sequence[Tuple[float, float, float]],
    lr: torch.Tensor,
    scalars: Optional[Sequence[torch.Tensor]] = None,
) -> None:
    """Adam's update in place, as ``torch.optim.Adam`` takes it: parameters without a gradient are skipped
    (their moments and step counter too); per parameter ``hyper`` = (beta1, beta2, eps) of its group.
    ``step += 1; m <- lerp(m, g, 1 - beta1); v <- beta2 v + (1 - beta2) g^2;
    p <- p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)``.

    ``scalars``: for each ``_beta_pairs(hyper)`` entry j, ``scalars[2j]`` and ``scalars[2j + 1]`` hold this step's
    ``lr / (1 - beta1^step)`` and ``sqrt(1 - beta2^step)`` (``adam_step_scalars``, computed outside the graph,
    where every updated parameter's counter is the same).  Without them the graph computes both from each
    parameter's counter, and Inductor evaluates them inside every parameter's fused kernel, once per 16-lane
    vector (two ``powf``, a division and a square root per 16 elements, the counter re-read in the loop): the same
    values."""
    pairs = _beta_pairs(hyper) if scalars is not None else []
    with torch.no_grad():
        for p, g, m, v, k, (beta1, beta2, eps) in zip(params, grads, exp_avg, exp_avg_sq, step, hyper):
            if g is None:
                continue
            if m is None or v is None or k is None:
                raise _NoState()
            k.add_(1)
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            if scalars is None:
                step_size = lr / (1 - beta1 ** k)
                bias_correction2_sqrt = (1 - beta2 ** k).sqrt()
            else:
                j = pairs.index((beta1, beta2))
                step_size, bias_correction2_sqrt = scalars[2 * j], scalars[2 * j + 1]
            denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
            p.sub_(step_size * m / denom)


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
            compile_cache.use_machine_cache()  # before anything compiles: a later run on the machine starts warm
            # dynamic=False: batch shapes are fixed per run; a changed shape recompiles rather than
            # generating slower shape-generic kernels.
            self._compiled = torch.compile(_own_code(fn), dynamic=False)
        self.mode = "compiled" if self._compiled is not None else "eager"
        # Whole-step graph (``gradient_step``): None when off; ``whole_mode`` says which path the last step took.
        self._whole: Optional[Callable[..., Any]] = None
        # Inductor options of the whole step (``whole_step_options``); emptied if compiling with them fails.
        self.whole_options: Dict[str, Any] = {}
        if self._compiled is not None and whole_step_allowed_by_env() and _TRACE_AUTOGRAD_OK:
            self.whole_options = whole_step_options()
            self._whole = self._compile_whole()
        self.whole_mode = "off" if self._whole is None else "pending"
        self.whole_error: Optional[str] = None
        self._lr = torch.zeros((), dtype=torch.float32)
        self._scalars: List[torch.Tensor] = []  # Adam's bias corrections of a whole step (``_step_scalars``)
        # False: the whole step's graph computes them from each counter (for comparisons; the same values)
        self.host_scalars = True
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
        max_grad_norm: Optional[float] = None,
    ) -> Any:
        """One optimizer step on the loss this step computes, the cadence every trainer's update shares: each
        optimizer's learning rate set to ``lr`` (all param groups), gradients cleared, ``forward_backward`` (one
        backward of the summed loss), ``before_step`` (any work on the gradients), the gradients of all the
        optimizers' parameters clipped to a total 2-norm of ``max_grad_norm`` when it is given (as
        ``torch.nn.utils.clip_grad_norm_``), then every optimizer's ``step``.  Returns the step function's result.
        Without ``before_step`` and with plain Adam the whole step is one compiled graph (module docstring)."""
        for opt in optimizers:
            for group in opt.param_groups:
                group["lr"] = lr
        # Checked once, at the first step (a trainer's parameters stay on their device).
        if self.whole_mode == "pending" and not _on_cpu(optimizers):
            self._whole = None
            self.whole_mode = "off (parameters not on the CPU)"
            logger.info("%s: parameters not on the CPU; compiling the loss only (whole steps are for the CPU)", self.name)
        if self._whole is not None and ready and before_step is None and all(_plain_adam(o) for o in optimizers):
            if self.whole_mode == "pending":
                # The run's first step: eagerly (it creates Adam's state; the loss-only graph is not compiled).
                self.whole_mode = "first step eager"
                ready = False
            else:
                whole = self._try_whole(optimizers, lr, max_grad_norm, args)
                if whole is not None:
                    return whole[0]

        def zero_grad() -> None:
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)

        zero_grad()
        result = self.forward_backward(zero_grad, *args, ready=ready)
        if before_step is not None:
            before_step()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(_optimized(optimizers), max_grad_norm)
        for opt in optimizers:
            opt.step()
        return result

    def _compile_whole(self) -> Callable[..., Any]:
        """``_whole_step`` through ``torch.compile`` as one graph, with ``whole_options`` when there are any."""
        extra = {"options": dict(self.whole_options)} if self.whole_options else {}
        return torch.compile(_own_code(self._whole_step), dynamic=False, fullgraph=True, **extra)

    def _whole_step(
        self,
        lr: torch.Tensor,
        params: List[torch.Tensor],
        exp_avg: List[Optional[torch.Tensor]],
        exp_avg_sq: List[Optional[torch.Tensor]],
        step: List[Optional[torch.Tensor]],
        hyper: Tuple[Tuple[float, float, float], ...],
        max_grad_norm: Optional[float],
        scalars: Optional[List[torch.Tensor]],
        *args: Any,
    ) -> Any:
        """The function compiled as one graph: ``fn(*args)``, the gradients of its total (``result[0]``) with
        respect to ``params`` (``None`` for parameters it does not reach), clipped when ``max_grad_norm`` is
        given, Adam in place (with this step's bias corrections ``scalars`` when given); returns the result
        detached."""
        result = self._fn(*args)
        grads = torch.autograd.grad(result[0], params, allow_unused=True)
        if max_grad_norm is not None:
            grads = _clipped(grads, max_grad_norm)
        _adam_update_(params, grads, exp_avg, exp_avg_sq, step, hyper, lr, scalars)
        return _detached(result)

    def _step_scalars(
        self, lr: float, step: Sequence[Optional[torch.Tensor]], hyper: Sequence[Tuple[float, float, float]]
    ) -> Optional[List[torch.Tensor]]:
        """This step's ``_adam_update_`` ``scalars`` (filled into tensors kept between steps), or None (the graph
        computes them) where the parameters' step counters differ: then a parameter's counter decides its own
        bias corrections, as ``torch.optim.Adam`` has them."""
        if not self.host_scalars:
            return None
        counts = {k.item() for k in step if k is not None}
        if len(counts) != 1:
            return None
        (count,) = counts
        pairs = _beta_pairs(hyper)
        while len(self._scalars) < 2 * len(pairs):
            self._scalars.append(torch.zeros((), dtype=torch.float32, device=self._lr.device))
        for j, (beta1, beta2) in enumerate(pairs):
            step_size, bias_correction2_sqrt = adam_step_scalars(lr, beta1, beta2, count)
            self._scalars[2 * j].fill_(step_size)
            self._scalars[2 * j + 1].fill_(bias_correction2_sqrt)
        return self._scalars[: 2 * len(pairs)]

    def _try_whole(
        self, optimizers: Sequence[Any], lr: float, max_grad_norm: Optional[float], args: Sequence[Any]
    ) -> Optional[Tuple[Any]]:
        """One whole step (the optimizers are plain Adam), or None when it could not be built: a failure disables
        whole steps for the rest of the run and this step takes the two-graph path."""
        params: List[torch.Tensor] = []
        exp_avg: List[Optional[torch.Tensor]] = []
        exp_avg_sq: List[Optional[torch.Tensor]] = []
        step: List[Optional[torch.Tensor]] = []
        hyper: List[Tuple[float, float, float]] = []
        for opt in optimizers:
            for group in opt.param_groups:
                beta1, beta2 = group["betas"]
                for p in group["params"]:
                    if not p.requires_grad:
                        continue
                    st = opt.state.get(p, {})
                    params.append(p)
                    exp_avg.append(st.get("exp_avg"))
                    exp_avg_sq.append(st.get("exp_avg_sq"))
                    step.append(st.get("step"))
                    hyper.append((float(beta1), float(beta2), float(group["eps"])))
        if not params:
            return None
        if self._lr.device != params[0].device:
            self._lr = torch.zeros((), dtype=torch.float32, device=params[0].device)
            self._scalars = []
        self._lr.fill_(lr)
        scalars = self._step_scalars(lr, step, hyper)
        announce = self.whole_mode != "on"
        try:
            start = time.perf_counter()
            with _tracing_autograd():
                result = self._whole(self._lr, params, exp_avg, exp_avg_sq, step, tuple(hyper), max_grad_norm, scalars,
                                     *args)
        except Exception as exc:  # compile or tracing failure: the two-graph path for the rest of the run
            if self.whole_options:  # first without the options (a C++ wrapper that does not build, ...)
                logger.warning(
                    "%s: compiling the whole step with Inductor options %s failed (%s); compiling it without them.",
                    self.name, sorted(self.whole_options), f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
                )
                self.whole_options = {}
                self._whole = self._compile_whole()
                return self._try_whole(optimizers, lr, max_grad_norm, args)
            self._whole = None
            self.whole_mode = "failed"
            self.whole_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            logger.warning(
                "%s: compiling the whole step (loss, gradients and Adam) failed (%s); compiling the loss only.",
                self.name, self.whole_error,
            )
            return None
        if announce:
            logger.info("%s: whole step compiled in %.1f s", self.name, time.perf_counter() - start)
            self.whole_mode = "on"
        return (result,)

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
