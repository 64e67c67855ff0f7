"""Small pure pieces the trainers share, written once: shape checks, masked mean, the tanh-Gaussian
log-density, per-stream discounts, freezing a module's weights for one pass (eagerly or under
``torch.compile``), target copies and their Polyak update.

Nothing here touches settings or module state beyond what it is given; ``tests/test_tensor_utils.py``
compares each piece with an independent computation.  Tensor names follow the time-index convention of
docs/TEAM.md (``r_t``, ``discount_t``, ``v_tm1``, ...).
"""
import contextlib
import copy
import math
from typing import Any, Iterator, Optional, Sequence

import torch

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def check_shape(name: str, t: torch.Tensor, shape: Sequence[Optional[int]]) -> None:
    """Raise ``ValueError`` naming ``name`` when ``t`` does not have ``shape`` (``None`` = any size)."""
    if t.dim() != len(shape) or any(s is not None and s != d for s, d in zip(shape, t.shape)):
        want = "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"
        raise ValueError(f"{name} must have shape {want}, got {list(t.shape)}")


def check_same_shape(what: str, **tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` (``what: all inputs need the same shape, got {...}``) unless all ``tensors`` have
    one shape.  Skipped while tracing for ONNX export, where shapes are symbolic (checked in eager runs)."""
    if torch.jit.is_tracing():
        return
    shapes = {name: tuple(int(d) for d in t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"{what}: all inputs need the same shape, got {shapes}")


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``mask`` is set (bool or 0/1; same shape); 0 when none is."""
    check_same_shape("masked_mean", x=x, mask=mask)
    m = mask.to(x.dtype)
    return (x * m).sum() / torch.clamp(m.sum(), min=1.0)


def tanh_gaussian_log_prob(u: torch.Tensor, noise: torch.Tensor, log_sigma: torch.Tensor) -> torch.Tensor:
    """``log pi(tanh(u))`` of a tanh-squashed Gaussian, summed over the last (action) dimension.

    ``u = mu + sigma * noise`` is the pre-squash sample; ``log pi(a) = sum_d [log N(u_d; mu_d, sigma_d)
    - log(1 - tanh(u_d)^2)]`` [SAC-2 eq. 21 / appendix C].  ``log N`` is written through ``noise``
    (``(u - mu) / sigma``) so it never divides by a tiny sigma, and ``log(1 - tanh(u)^2) = 2 (log 2 - u -
    softplus(-2u))``, which stays finite where ``1 - a^2`` rounds to 0.
    """
    log_normal = -0.5 * noise * noise - log_sigma - _HALF_LOG_2PI
    log_det = 2.0 * (_LOG_2 - u - torch.nn.functional.softplus(-2.0 * u))
    return (log_normal - log_det).sum(dim=-1)


def stream_discounts(gammas, terminal_t, use_done):
    """``discount_t [..., S] = gamma_s * (1 - terminal_t * use_done_s)`` (numpy arrays or tensors alike).

    ``terminal_t`` [...] is 1 where the episode truly ended at ``t`` (not at a time-out); ``use_done_s`` is 0
    for a reward stream whose provider ignores episode ends (curiosity, RND), which bootstraps through them.
    """
    return gammas * (1.0 - terminal_t[..., None] * use_done)


@contextlib.contextmanager
def frozen(module: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Within the block no gradient reaches ``module``'s weights (only its inputs): the parameters that
    require a gradient have it switched off, and back on afterwards, also after an error."""
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield module
    finally:
        for p in params:
            p.requires_grad_(True)


def is_compiling() -> bool:
    """True while TorchDynamo traces the calling code for ``torch.compile``."""
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling())


def call_frozen(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """``module(*args, **kwargs)`` with no gradient reaching ``module``'s weights, only its inputs (the actor's
    actions in an actor loss), so that loss can share one backward pass with the critic's own loss.

    Eagerly the weights' ``requires_grad`` is switched off for the call (``frozen``, the cheapest way).  Under
    ``torch.compile``, where flipping the flags would break the graph, the module is called with detached
    weights instead (``torch.func.functional_call``): the same values, no path back to the weights.
    """
    if is_compiling():
        from torch.func import functional_call  # torch >= 2.0, as torch.compile itself

        tensors = {name: p.detach() for name, p in module.named_parameters()}
        tensors.update(dict(module.named_buffers()))
        return functional_call(module, tensors, args, kwargs)
    with frozen(module):
        return module(*args, **kwargs)


def target_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``module`` whose parameters take no gradient: a target network (moved by ``polyak_update_``
    or copied from the online one, never by an optimizer)."""
    target = copy.deepcopy(module)
    target.requires_grad_(False)
    return target


def polyak_update_(online: Sequence[torch.Tensor], target: Sequence[torch.Tensor], tau: float) -> None:
    """``target <- target + tau * (online - target)`` in place (Polyak averaging of target networks), as one
    fused multi-tensor op."""
    with torch.no_grad():
        torch._foreach_lerp_(list(target), list(online), tau)
