"""Shared checks of ``compile_update`` for every trainer that compiles its loss step (fast_sac, taac,
muzero_repr): the compiled step against the eager one, on one batch, with the same random draws."""
import contextlib
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

import torch

from mlagents_plugins.common import compiled_step
from mlagents_plugins.common.compiled_step import CompiledStep

#: loss values and per-sample outputs: float32 rounding of fused kernels (another summation order) stays well
#: inside these; gradients go through one more reduction order (the backward graph), hence the looser rtol.
VALUE_TOL = dict(rtol=1e-4, atol=1e-5)
GRAD_TOL = dict(rtol=1e-3, atol=1e-5)


@contextlib.contextmanager
def exact_compile(monkeypatch) -> Iterator[None]:
    """Compiling allowed, with random numbers from ATen's generator (``fallback_random``: one seed gives the
    eager draws) and no donated buffers (each graph is differentiated more than once, ``retain_graph``), and a
    fresh dynamo cache.  The configs' own ``patch()`` restores both afterwards; ``monkeypatch.setattr`` on a
    torch config module left ``fallback_random`` unreadable, which broke every later compile in the process."""
    import torch._inductor.config as inductor_config

    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    with inductor_config.patch(fallback_random=True), torch._functorch.config.patch(donated_buffer=False):
        torch._dynamo.reset()
        yield


def nonzero(grads: Sequence[Any]) -> List[bool]:
    """Per gradient: whether it exists and is nonzero somewhere."""
    return [g is not None and bool(torch.any(g != 0)) for g in grads]


def compare_compiled_with_eager(
    fn: Callable[[Any], Tuple[torch.Tensor, Any]],
    params: Sequence[torch.Tensor],
    batch: Any,
    fields: Dict[str, Callable[[Any], torch.Tensor]],
    seed: int = 21,
) -> Tuple[Any, Any]:
    """Run ``fn(batch) -> (total loss, outputs)`` eagerly and through ``CompiledStep`` from the same torch seed;
    assert the totals, every output named in ``fields`` and the gradients of the total w.r.t. ``params`` match
    (some gradient must be nonzero, so the comparison cannot pass on all-zero gradients).  Returns the (eager,
    compiled) outputs, whose graphs are kept for further routing checks."""
    step = CompiledStep(fn, True, "test")
    results = []
    for f in (fn, step):
        torch.manual_seed(seed)
        total, out = f(batch)
        results.append((total, out, torch.autograd.grad(total, list(params), retain_graph=True, allow_unused=True)))
    assert step.mode == "compiled", step.error
    (total_e, out_e, grads_e), (total_c, out_c, grads_c) = results
    torch.testing.assert_close(total_c, total_e, **VALUE_TOL)
    for name, get in fields.items():
        torch.testing.assert_close(get(out_c), get(out_e), msg=name, **VALUE_TOL)
    assert any(nonzero(grads_e))
    for g_c, g_e in zip(grads_c, grads_e):
        assert (g_c is None) == (g_e is None)
        if g_c is not None:
            torch.testing.assert_close(g_c, g_e, **GRAD_TOL)
    return out_e, out_c


def fields_named(names: Sequence[str]) -> Dict[str, Callable[[Any], torch.Tensor]]:
    """``fields`` for outputs that are NamedTuples: each name read as an attribute."""
    return {name: (lambda n: lambda out: getattr(out, n))(name) for name in names}
