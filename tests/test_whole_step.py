"""The whole-step path of ``CompiledStep.gradient_step`` (loss, gradients and Adam in one compiled graph): its
Adam and clipping against PyTorch's own, and whole steps of a real trainer against the two-graph path."""
import copy
import logging

import numpy as np
import pytest
import torch

from mlagents_plugins.common import compiled_step
from mlagents_plugins.common.compiled_step import CompiledStep, _adam_update_, _clipped
from tests.compiled_helpers import exact_compile

pytestmark = pytest.mark.skipif(not compiled_step._TRACE_AUTOGRAD_OK, reason="torch without trace_autograd_ops")


def _asymmetric_params():
    g = torch.Generator().manual_seed(5)
    return [torch.randn(3, 2, generator=g) * 0.7 + 0.2, torch.randn(4, generator=g) * 1.9 - 0.5, torch.randn(2, generator=g)]


def test_adam_update_matches_torch_adam_per_group_hyperparameters_and_skipped_parameters():
    """Three steps from the same start, two groups with different betas and eps, gradients of different scales
    per step, and a parameter that never has a gradient (torch skips it: no state, no change)."""
    ours = _asymmetric_params()
    ref = [p.clone().requires_grad_(True) for p in ours]
    hyper = [(0.8, 0.95, 1e-6), (0.8, 0.95, 1e-6), (0.5, 0.9, 1e-3)]
    opt = torch.optim.Adam(
        [{"params": ref[:2], "betas": (0.8, 0.95), "eps": 1e-6}, {"params": ref[2:], "betas": (0.5, 0.9), "eps": 1e-3}],
        lr=0.01, foreach=False,
    )
    m = [torch.zeros_like(p) for p in ours]
    v = [torch.zeros_like(p) for p in ours]
    k = [torch.zeros(()) for _ in ours]
    g = torch.Generator().manual_seed(9)
    for step, lr in enumerate((0.01, 0.03, 0.002)):
        grads = [torch.randn(p.shape, generator=g) * (1 + 3 * step) for p in ours]
        grads[1] = None  # never reached by the loss
        for p, gr in zip(ref, grads):
            p.grad = None if gr is None else gr.clone()
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        _adam_update_(ours, grads, m, v, k, hyper, torch.tensor(lr))
    # float32 on both sides; PyTorch forms lr / (1 - beta1^k) and sqrt(1 - beta2^k) in double, we in float32:
    # relative differences of a few ulp (1e-7) in the per-step update, on parameters of order 1.
    for p, r in zip(ours, ref):
        torch.testing.assert_close(p, r.detach(), rtol=1e-6, atol=1e-6)
    for i in (0, 2):
        torch.testing.assert_close(m[i], opt.state[ref[i]]["exp_avg"], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(v[i], opt.state[ref[i]]["exp_avg_sq"], rtol=1e-6, atol=1e-7)
        assert float(k[i]) == float(opt.state[ref[i]]["step"]) == 3.0
    assert ref[1] not in opt.state and float(k[1]) == 0.0 and not torch.any(m[1] != 0)
    assert torch.equal(ours[1], _asymmetric_params()[1])


def test_adam_step_scalars_are_the_bias_corrections_in_float32():
    """Against float64 from the float32-rounded constants (as the graph holds them: 1 - 0.999 in float32 is 1.3e-5
    off relatively): lr / (1 - beta1^k) and sqrt(1 - beta2^k) with k = step + 1, to a few float32 roundings; beta1
    and beta2 not swappable (the values differ by orders of magnitude at small k)."""
    for lr, beta1, beta2, before in ((3e-4, 0.9, 0.999, 0.0), (1e-3, 0.5, 0.9, 6.0), (0.02, 0.8, 0.95, 12344.0)):
        step_size, bc2_sqrt = compiled_step.adam_step_scalars(lr, beta1, beta2, before)
        k = before + 1
        lr32, b1, b2 = (float(np.float32(x)) for x in (lr, beta1, beta2))
        assert step_size == pytest.approx(lr32 / (1 - b1 ** k), rel=1e-6)
        assert bc2_sqrt == pytest.approx((1 - b2 ** k) ** 0.5, rel=1e-6)
        assert np.float32(step_size) == step_size and np.float32(bc2_sqrt) == bc2_sqrt  # float32 values


def test_adam_update_with_host_scalars_is_the_in_graph_update_to_the_bit():
    """``_adam_update_`` compiled twice, with the bias corrections computed in the graph from each counter and
    with ``adam_step_scalars`` passed in: the same parameters, moments and counters to the bit, over steps at
    small and large counts, two beta pairs, a scalar parameter and one without a gradient."""
    g = torch.Generator().manual_seed(3)
    start = [torch.randn(70, generator=g), torch.randn(5, 3, generator=g) * 2.5 - 0.3, torch.randn((), generator=g),
             torch.randn(4, generator=g)]
    hyper = ((0.9, 0.999, 1e-8), (0.9, 0.999, 1e-8), (0.5, 0.9, 1e-3), (0.9, 0.999, 1e-8))

    def update(params, grads, m, v, k, lr, scalars):
        _adam_update_(params, grads, m, v, k, hyper, lr, scalars)

    runs = []
    for host in (False, True):
        torch._dynamo.reset()
        compiled = torch.compile(update, dynamic=False)
        params = [p.clone() for p in start]
        m = [torch.zeros_like(p) for p in params]
        v = [torch.zeros_like(p) for p in params]
        k = [torch.zeros(()) for _ in params]
        lr_t = torch.zeros(())
        grads_g = torch.Generator().manual_seed(11)
        for step_no, lr in enumerate((3e-4, 1e-3, 7e-4, 2e-3)):
            if step_no == 2:
                for counter in k:
                    counter.fill_(12344.0)  # a late step: the bias corrections near 1
            grads = [torch.randn(p.shape, generator=grads_g) * (0.5 + step_no) for p in params]
            grads[3] = None
            lr_t.fill_(lr)
            scalars = None
            if host:
                scalars = []
                for beta1, beta2 in ((0.9, 0.999), (0.5, 0.9)):
                    scalars += [torch.tensor(x) for x in compiled_step.adam_step_scalars(lr, beta1, beta2, float(k[0]))]
            compiled(params, grads, m, v, k, lr_t, scalars)
        runs.append((params, m, v, k))
    for got, want in zip(runs[1], runs[0]):
        for a, b in zip(got, want):
            assert torch.equal(a, b)
    assert not torch.equal(runs[0][0][0], start[0]) and torch.equal(runs[0][0][3], start[3])


def test_step_scalars_only_where_every_counter_agrees(monkeypatch):
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    w, fn = _quadratic()
    step = CompiledStep(fn, True, "demo")
    hyper = [(0.9, 0.999, 1e-8), (0.5, 0.9, 1e-3)]
    same = step._step_scalars(1e-3, [torch.tensor(4.0), None, torch.tensor(4.0)], hyper)
    assert [float(x) for x in same] == list(compiled_step.adam_step_scalars(1e-3, 0.9, 0.999, 4.0)) + list(
        compiled_step.adam_step_scalars(1e-3, 0.5, 0.9, 4.0))
    assert step._step_scalars(1e-3, [torch.tensor(4.0), torch.tensor(3.0)], hyper) is None


def test_clipped_matches_clip_grad_norm_and_leaves_small_gradients():
    g = torch.Generator().manual_seed(2)
    grads = [torch.randn(5, 3, generator=g) * 4.0, None, torch.randn(7, generator=g) * 0.3 + 1.0]
    params = [torch.zeros(5, 3, requires_grad=True), torch.zeros(2, requires_grad=True), torch.zeros(7, requires_grad=True)]
    for p, gr in zip(params, grads):
        p.grad = None if gr is None else gr.clone()
    torch.nn.utils.clip_grad_norm_(params, 2.5)
    out = _clipped(grads, 2.5)
    assert out[1] is None
    for o, p in zip((out[0], out[2]), (params[0], params[2])):
        torch.testing.assert_close(o, p.grad, rtol=1e-6, atol=1e-7)
    total = torch.sqrt(sum((o ** 2).sum() for o in (out[0], out[2])))
    assert abs(float(total) - 2.5) < 1e-4  # clipped to the bound
    small = _clipped([grads[2] * 0.01], 2.5)[0]
    torch.testing.assert_close(small, grads[2] * 0.01)  # under the bound: unchanged


def _snapshot(trainer):
    opt = trainer.optimizer
    return copy.deepcopy({
        "actor": opt.policy.actor.state_dict(), "q": opt.head.q_net.state_dict(), "q_target": opt.head.q_target.state_dict(),
        "temperatures": opt.head.temperatures.state_dict(), "adam": opt.head.adam.state_dict(),
    })


def _restore(trainer, snap):
    opt = trainer.optimizer
    opt.policy.actor.load_state_dict(snap["actor"])
    opt.head.q_net.load_state_dict(snap["q"])
    opt.head.q_target.load_state_dict(snap["q_target"])
    opt.head.temperatures.load_state_dict(snap["temperatures"])
    opt.head.adam.load_state_dict(copy.deepcopy(snap["adam"]))


# hybrid: slow (about 50 s of compiling); its discrete loss terms compiled are checked in the default run by
# tests/fast_sac/test_compiled_update.py, and the whole step's own machinery by the continuous case
@pytest.mark.parametrize("spec_kw", [pytest.param(dict(cont=2, branches=()), id="continuous"),
                                     pytest.param(dict(cont=2, branches=(3, 2)), id="hybrid", marks=pytest.mark.slow)])
def test_fast_sac_whole_steps_match_the_two_graph_path(tmp_path, monkeypatch, spec_kw):
    """Three fast_sac updates through the whole step and, from the same weights, Adam state and random draws,
    through the loss-only compiled graph + eager Adam: same parameters, moments, step counters and losses."""
    from tests.fast_sac.helpers import filled_trainer

    # Without the fp32 matmul kernel chooser: where this CPU's oneDNN probe enables it, the first 19 updates
    # alternate kernels and run eagerly (``ready=False``), so the first update would not be the run's first step.
    monkeypatch.setenv("MLAGENTS_PLUGINS_NO_ONEDNN_MATMUL", "1")
    with exact_compile(monkeypatch):
        trainer = filled_trainer(tmp_path, rng_seed=4, compile_update=None, **spec_kw)
        opt = trainer.optimizer
        step = opt.head.loss_step
        assert opt.head.matmul_kernels.decided
        assert step.whole_mode == "pending" and step.whole_options == compiled_step.whole_step_options()
        batches = [trainer.sample_batch() for _ in range(4)]
        torch.manual_seed(0)
        opt.update(batches[0])  # the first step runs eagerly and creates Adam's state
        assert step.whole_mode == "first step eager"
        start = _snapshot(trainer)
        runs = {}
        for path in ("whole", "two-graph"):
            _restore(trainer, start)
            if path == "two-graph":
                step._whole = None
            losses = []
            for i, batch in enumerate(batches[1:]):
                torch.manual_seed(100 + i)
                stats, _ = opt.update(batch)
                losses.append([stats["Losses/Q1 Loss"], stats["Losses/Policy Loss"]])
            if path == "whole":
                assert step.whole_mode == "on", step.whole_error
            runs[path] = (_snapshot(trainer), np.array(losses))
    (whole, loss_w), (two, loss_t) = runs["whole"], runs["two-graph"]
    # Tolerances: the two paths compute the same gradients up to float32 summation order (relative ~1e-6),
    # and Adam's step is lr * m_hat / (sqrt(v_hat) + eps) with lr 3e-4, so after 3 steps parameters may differ
    # by about 3 * lr * 1e-3 = 1e-6 even for gradients that differ by 1e-3 relative; a wrong bias correction,
    # beta or skipped parameter moves them by >= lr = 3e-4.
    np.testing.assert_allclose(loss_w, loss_t, rtol=1e-4, atol=1e-6)
    moved = 0.0
    for name in ("actor", "q", "temperatures"):
        for key, value in whole[name].items():
            if isinstance(value, torch.Tensor):
                torch.testing.assert_close(value, two[name][key], rtol=0, atol=1e-5, msg=f"{name}.{key}")
                if value.numel():
                    moved = max(moved, float((value - start[name][key]).abs().max()))
    assert moved > 5e-4  # three steps of lr 3e-4 moved something
    for key, value in whole["q_target"].items():
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(value, two["q_target"][key], rtol=0, atol=1e-5)
    state_w, state_t = whole["adam"]["state"], two["adam"]["state"]
    assert state_w.keys() == state_t.keys()
    for idx in state_w:
        assert float(state_w[idx]["step"]) == float(state_t[idx]["step"]) == 4.0
        torch.testing.assert_close(state_w[idx]["exp_avg"], state_t[idx]["exp_avg"], rtol=1e-3, atol=1e-6)
        torch.testing.assert_close(state_w[idx]["exp_avg_sq"], state_t[idx]["exp_avg_sq"], rtol=1e-3, atol=1e-9)


class _Quadratic(torch.nn.Module):
    """Loss ``sum((w * scale - x)^2)`` of one parameter vector ``w``; returns (loss, w)."""

    def __init__(self, w: torch.Tensor, scale: torch.Tensor):
        super().__init__()
        self.w = torch.nn.Parameter(w)
        self.scale = scale

    def loss(self, x):
        return (((self.w * self.scale - x) ** 2).sum(), self.w.detach().clone())


def _quadratic():
    mod = _Quadratic(torch.tensor([1.5, -2.0, 0.25]), torch.tensor([1.0, 3.0, -0.5]))
    return mod.w, mod.loss


def test_whole_step_follows_a_reloaded_optimizer_and_clips(monkeypatch):
    """After ``load_state_dict`` replaces Adam's state tensors the whole step uses the new ones; with
    ``max_grad_norm`` it clips as ``clip_grad_norm_`` does.  Reference: the same steps eagerly."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    results = []
    for whole in (True, False):
        w, fn = _quadratic()
        opt = torch.optim.Adam([w], lr=0.05)
        step = CompiledStep(fn, whole, "demo")
        x = torch.tensor([0.5, 2.0, -1.0])
        for _ in range(2):
            step.gradient_step([opt], 0.05, x, max_grad_norm=0.5)
        saved = copy.deepcopy(opt.state_dict())
        for _ in range(2):
            step.gradient_step([opt], 0.05, x, max_grad_norm=0.5)
        opt.load_state_dict(saved)
        with torch.no_grad():
            w.copy_(torch.tensor([1.0, 1.0, 1.0]))
        step.gradient_step([opt], 0.02, x, max_grad_norm=0.5)
        if whole:
            assert step.whole_mode == "on", step.whole_error
        else:
            assert step.whole_mode == "off"
        results.append((w.detach().clone(), copy.deepcopy(opt.state_dict()["state"])))
    (w_whole, st_whole), (w_eager, st_eager) = results
    torch.testing.assert_close(w_whole, w_eager, rtol=1e-6, atol=1e-6)
    assert float(st_whole[0]["step"]) == float(st_eager[0]["step"]) == 3.0
    torch.testing.assert_close(st_whole[0]["exp_avg"], st_eager[0]["exp_avg"], rtol=1e-6, atol=1e-7)


def test_failed_whole_step_warns_and_the_step_is_taken_once_on_the_two_graph_path(monkeypatch, caplog):
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    w, fn = _quadratic()
    opt = torch.optim.Adam([w], lr=0.05)
    step = CompiledStep(fn, True, "demo update")
    x = torch.tensor([0.5, 2.0, -1.0])
    step.gradient_step([opt], 0.05, x)  # first step, eager

    def broken(*args):
        raise RuntimeError("InductorError: no C++ compiler")

    step._whole = broken
    step.whole_options = {}  # already without Inductor options (with them it retries without first: below)
    with caplog.at_level(logging.WARNING, logger=compiled_step.logger.name):
        step.gradient_step([opt], 0.05, x)
    assert step.whole_mode == "failed" and "no C++ compiler" in step.whole_error and step._whole is None
    assert float(opt.state[w]["step"]) == 2.0  # the failed attempt did not step; the fallback stepped once
    assert sum("demo update" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING) == 1


def test_whole_step_options_follow_their_kernel_switch(monkeypatch):
    """The whole step is compiled with ``WHOLE_STEP_OPTIONS`` (C++ wrapper, ATen's random draws) unless
    ``MLAGENTS_PLUGINS_PY_WRAPPER=1`` or another mlagents version; the loss-only graph never gets them."""
    from mlagents_plugins.host import patches

    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    monkeypatch.delenv("MLAGENTS_PLUGINS_PY_WRAPPER", raising=False)
    calls = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: calls.append(kw) or fn)
    _, fn = _quadratic()
    step = CompiledStep(fn, True, "x")
    assert compiled_step.whole_step_options() == {"cpp_wrapper": True, "fallback_random": True}
    assert step.whole_options == {"cpp_wrapper": True, "fallback_random": True}
    assert "options" not in calls[0] and calls[1]["options"] == step.whole_options and calls[1]["fullgraph"]
    monkeypatch.setenv("MLAGENTS_PLUGINS_PY_WRAPPER", "1")
    calls.clear()
    step = CompiledStep(fn, True, "x")
    assert step.whole_options == {} and "options" not in calls[1] and calls[1]["fullgraph"]
    monkeypatch.delenv("MLAGENTS_PLUGINS_PY_WRAPPER")
    monkeypatch.setattr(patches, "mlagents_version", lambda: "0.0.0")
    assert compiled_step.whole_step_options() == {}


def test_whole_step_failing_with_its_options_is_compiled_without_them(monkeypatch, caplog):
    """A compile with the Inductor options that fails (a C++ wrapper that does not build) warns once and compiles
    the whole step with Inductor's defaults; the steps equal plain eager Adam's."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    monkeypatch.delenv("MLAGENTS_PLUGINS_PY_WRAPPER", raising=False)
    real_compile = torch.compile
    tried = []

    def compile_failing_with_options(fn, **kw):
        if "options" not in kw:
            return real_compile(fn, **kw)

        def fails(*args):
            tried.append(kw["options"])
            raise RuntimeError("CppCompileError: cpp_wrapper build failed")

        return fails

    monkeypatch.setattr(torch, "compile", compile_failing_with_options)
    w, fn = _quadratic()
    w_ref, fn_ref = _quadratic()
    opt, opt_ref = torch.optim.Adam([w], lr=0.05), torch.optim.Adam([w_ref], lr=0.05)
    step = CompiledStep(fn, True, "demo update")
    assert step.whole_options
    x = torch.tensor([0.5, 2.0, -1.0])
    with caplog.at_level(logging.WARNING, logger=compiled_step.logger.name):
        for _ in range(3):
            step.gradient_step([opt], 0.05, x)
            opt_ref.zero_grad()
            fn_ref(x)[0].backward()
            opt_ref.step()
    assert len(tried) == 1 and step.whole_options == {} and step.whole_mode == "on", step.whole_error
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "without them" in warnings[0] and "cpp_wrapper build failed" in warnings[0]
    torch.testing.assert_close(w.detach(), w_ref.detach(), rtol=1e-6, atol=1e-6)
    assert float(opt.state[w]["step"]) == 3.0


def test_environment_switch_and_before_step_keep_the_two_graph_path(monkeypatch):
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    monkeypatch.setenv(compiled_step.WHOLE_STEP_SWITCH, "0")
    w, fn = _quadratic()
    assert CompiledStep(fn, True, "x").whole_mode == "off"
    monkeypatch.setenv(compiled_step.WHOLE_STEP_SWITCH, "1")
    step = CompiledStep(fn, True, "x")
    opt = torch.optim.Adam([w], lr=0.05)
    seen = []
    for _ in range(3):
        step.gradient_step([opt], 0.05, torch.zeros(3), before_step=lambda: seen.append(w.grad.clone()))
    assert len(seen) == 3 and step.whole_mode == "pending"  # never attempted while before_step is given


def test_parameters_off_the_cpu_keep_the_two_graph_path(monkeypatch):
    """Whole steps are for CPU parameters (a whole-step graph crashed the process on CUDA, docs/gpu.md): a step whose
    optimizers hold parameters elsewhere switches whole steps off and is taken once on the two-graph path."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    assert compiled_step._on_cpu([torch.optim.Adam([torch.zeros(2, requires_grad=True)])])
    assert not compiled_step._on_cpu([torch.optim.Adam([torch.zeros(2, device="meta", requires_grad=True)])])
    w, fn = _quadratic()
    opt = torch.optim.Adam([w], lr=0.05)
    step = CompiledStep(fn, True, "x")
    monkeypatch.setattr(compiled_step, "_on_cpu", lambda optimizers: False)
    for _ in range(2):
        step.gradient_step([opt], 0.05, torch.tensor([0.5, 2.0, -1.0]))
    assert step.whole_mode == "off (parameters not on the CPU)" and step._whole is None
    assert float(opt.state[w]["step"]) == 2.0 and step.mode == "compiled"


def test_discrete_log_probs_equal_ml_agents_distribution_with_masks():
    """``networks.discrete_log_probs`` (one traceable graph) against ML-Agents' own ``MultiCategoricalDistribution``
    on branches of different sizes with actions masked in the second one."""
    from mlagents.trainers.torch_entities.distributions import (
        MultiCategoricalDistribution,
    )

    from mlagents_plugins.sac.networks import discrete_log_probs

    torch.manual_seed(3)
    dist = MultiCategoricalDistribution(6, [3, 4, 2])
    for branch in dist.branches:  # larger weights than the 0.1-gain init, so the branches differ clearly
        torch.nn.init.normal_(branch.weight, std=0.8)
    encoding = torch.randn(5, 6)
    mask = torch.ones(5, 9)
    mask[0, 3] = mask[0, 5] = 0.0
    mask[3, 4] = 0.0
    want = torch.cat([d.all_log_prob() for d in dist(encoding, mask)], dim=1)
    got = discrete_log_probs(dist, encoding, mask)
    assert torch.equal(got, want)
    assert float(got[0, 3]) < -15 and float(got[0, 0]) > -10  # masked actions: log(1e-7)


def test_steps_before_the_kernel_is_chosen_stay_off_the_whole_path(monkeypatch):
    """``ready=False`` (the matmul kernel chooser still timing): eager steps, the whole step still pending; the
    first ready step is still eager, the next compiles; all equal to plain eager Adam."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    w, fn = _quadratic()
    w_ref, fn_ref = _quadratic()
    opt, opt_ref = torch.optim.Adam([w], lr=0.05), torch.optim.Adam([w_ref], lr=0.05)
    step = CompiledStep(fn, True, "demo")
    x = torch.tensor([0.5, 2.0, -1.0])
    modes = []
    for ready in (False, False, True, True, True):
        step.gradient_step([opt], 0.05, x, ready=ready)
        modes.append(step.whole_mode)
        opt_ref.zero_grad()
        fn_ref(x)[0].backward()
        opt_ref.step()
    assert modes == ["pending", "pending", "first step eager", "on", "on"], step.whole_error
    torch.testing.assert_close(w.detach(), w_ref.detach(), rtol=1e-6, atol=1e-6)
    assert float(opt.state_dict()["state"][0]["step"]) == 5.0


def test_many_steps_of_one_method_each_compile_their_own_graphs(monkeypatch):
    """Modules of one class with different sizes, each with its own step over the same method (behaviors with
    different observation sizes in one mlagents-learn, or benchmark runs on different scenes one after another in
    one process): every one compiles its whole step, past Dynamo's limit of graphs per code object (8; lowered to 2
    here, so that 4 modules cross it at less than half the compiling of 10), and each learns what its eager twin
    learns."""
    monkeypatch.setenv(compiled_step.ENV_SWITCH, "1")
    with torch._dynamo.config.patch(recompile_limit=2):
        _each_compiles(range(2, 6))


def _each_compiles(sizes):
    for size in sizes:
        x = torch.linspace(1.0, -1.0, size)
        w0 = torch.randn(size, generator=torch.Generator().manual_seed(size))
        scale = torch.linspace(-0.5, 3.0, size)
        mod, ref = _Quadratic(w0.clone(), scale), _Quadratic(w0.clone(), scale)
        opt, opt_ref = torch.optim.Adam(mod.parameters(), lr=0.05), torch.optim.Adam(ref.parameters(), lr=0.05)
        step = CompiledStep(mod.loss, True, f"behavior {size}")
        for _ in range(3):
            step.gradient_step([opt], 0.05, x)
            opt_ref.zero_grad()
            ref.loss(x)[0].backward()
            opt_ref.step()
        assert step.whole_mode == "on", (size, step.whole_error)
        torch.testing.assert_close(mod.w.detach(), ref.w.detach(), rtol=1e-6, atol=1e-6)


def test_tracing_autograd_is_on_only_inside_its_block_and_restored_after_an_error():
    config = torch._dynamo.config
    before = config.trace_autograd_ops
    try:
        for start in (False, True):
            config.trace_autograd_ops = start
            with compiled_step._tracing_autograd():
                assert config.trace_autograd_ops is True
            assert config.trace_autograd_ops is start
            with pytest.raises(RuntimeError):
                with compiled_step._tracing_autograd():
                    raise RuntimeError("compile failed")
            assert config.trace_autograd_ops is start
    finally:
        config.trace_autograd_ops = before  # whatever fails above, the process-wide flag is left as it was
