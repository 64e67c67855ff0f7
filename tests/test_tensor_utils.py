"""The shared pure pieces (``mlagents_plugins.common.tensor_utils``) against independent computations."""
import math

import numpy as np
import pytest
import torch

from mlagents_plugins.common import tensor_utils as tu


def test_check_shape_names_the_tensor_and_accepts_wildcards():
    tu.check_shape("x", torch.zeros(2, 3), (2, None))
    with pytest.raises(ValueError, match=r"x must have shape \[2, \*\], got \[3, 3\]"):
        tu.check_shape("x", torch.zeros(3, 3), (2, None))
    with pytest.raises(ValueError, match=r"y must have shape \[2\], got \[2, 1\]"):
        tu.check_shape("y", torch.zeros(2, 1), (2,))


def test_check_same_shape_lists_every_shape():
    tu.check_same_shape("f", a=torch.zeros(2, 3), b=torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"f: all inputs need the same shape, got \{'a': \(2, 3\), 'b': \(3,\)\}"):
        tu.check_same_shape("f", a=torch.zeros(2, 3), b=torch.ones(3))


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.float32])
def test_masked_mean_is_the_mean_over_set_entries(mask_dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    mask = torch.rand(5, 4, generator=gen) < 0.5
    kept = [float(x[i, j]) for i in range(5) for j in range(4) if mask[i, j]]
    assert float(tu.masked_mean(x, mask.to(mask_dtype))) == pytest.approx(sum(kept) / len(kept), rel=1e-12)
    assert float(tu.masked_mean(x, torch.zeros(5, 4, dtype=mask_dtype))) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        tu.masked_mean(x, mask[:, :2])


def test_tanh_gaussian_log_prob_matches_the_change_of_variables():
    gen = torch.Generator().manual_seed(1)
    mu = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    log_sigma = torch.randn(6, 3, generator=gen, dtype=torch.float64) * 0.5
    noise = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    u = mu + log_sigma.exp() * noise
    got = tu.tanh_gaussian_log_prob(u, noise, log_sigma)
    for b in range(6):
        want = 0.0
        for d in range(3):
            sigma = math.exp(float(log_sigma[b, d]))
            ub = float(u[b, d])
            log_n = -0.5 * ((ub - float(mu[b, d])) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)
            want += log_n - math.log(1.0 - math.tanh(ub) ** 2)
        assert float(got[b]) == pytest.approx(want, rel=1e-9, abs=1e-9)
    # Finite where 1 - tanh(u)^2 rounds to 0 in float32.
    far = torch.tensor([[30.0]])
    assert torch.isfinite(tu.tanh_gaussian_log_prob(far, torch.zeros(1, 1), torch.zeros(1, 1))).all()


def test_tanh_gaussian_log_prob_matches_torch_distributions():
    gen = torch.Generator().manual_seed(2)
    mu, log_sigma = torch.randn(4, 2, generator=gen), torch.randn(4, 2, generator=gen) * 0.3
    noise = torch.randn(4, 2, generator=gen)
    u = mu + log_sigma.exp() * noise
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mu, log_sigma.exp()), [torch.distributions.TanhTransform()]
    )
    want = dist.log_prob(torch.tanh(u).clamp(-1 + 1e-6, 1 - 1e-6)).sum(-1)
    torch.testing.assert_close(tu.tanh_gaussian_log_prob(u, noise, log_sigma), want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_stream_discounts(lib):
    gammas, use_done = [0.99, 0.9], [1.0, 0.0]
    terminal = [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]
    conv = (lambda x: np.asarray(x, np.float32)) if lib == "numpy" else (lambda x: torch.tensor(x))
    got = np.asarray(tu.stream_discounts(conv(gammas), conv(terminal), conv(use_done)))
    assert got.shape == (2, 3, 2)
    for b in range(2):
        for t in range(3):
            for s in range(2):
                want = gammas[s] * (0.0 if terminal[b][t] and use_done[s] else 1.0)
                assert got[b, t, s] == pytest.approx(want)


def test_frozen_stops_gradients_to_the_weights_only_within_the_block():
    net = torch.nn.Linear(2, 1)
    net.bias.requires_grad_(False)  # stays off afterwards: only what required a gradient is switched back
    x = torch.ones(1, 2, requires_grad=True)
    with tu.frozen(net) as same:
        assert same is net
        assert not any(p.requires_grad for p in net.parameters())
        net(x).sum().backward()
    assert net.weight.grad is None and x.grad is not None
    assert net.weight.requires_grad and not net.bias.requires_grad
    with pytest.raises(RuntimeError):
        with tu.frozen(net):
            raise RuntimeError("inside")
    assert net.weight.requires_grad


class _Scaled(torch.nn.Module):
    """``w * x + b`` with a keyword argument, to check call_frozen passes both kinds of argument."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([2.0, -3.0]))
        self.register_buffer("b", torch.tensor([0.5, 0.25]))

    def forward(self, x, scale=1.0):
        return (self.w * x + self.b) * scale


def test_call_frozen_gradient_reaches_the_input_only_eager_and_while_compiling():
    module = _Scaled()

    def grads(fn):
        x = torch.tensor([1.5, -0.5], requires_grad=True)
        module.w.grad = None
        fn(module, x, scale=4.0).sum().backward()
        return x.grad, module.w.grad

    x_grad, w_grad = grads(tu.call_frozen)
    torch.testing.assert_close(x_grad, torch.tensor([8.0, -12.0]))  # d/dx sum(4 (w x + b)) = 4 w
    assert w_grad is None and module.w.requires_grad
    compiled = torch.compile(tu.call_frozen, backend="aot_eager")  # traced by dynamo: the functional_call path
    x_grad, w_grad = grads(compiled)
    torch.testing.assert_close(x_grad, torch.tensor([8.0, -12.0]))
    assert w_grad is None and module.w.requires_grad
    assert not tu.is_compiling()


def test_polyak_update_moves_each_target_by_tau_of_the_gap():
    online = [torch.tensor([1.0, 3.0]), torch.tensor([[-2.0]])]
    target = [torch.tensor([5.0, -1.0]), torch.tensor([[4.0]])]
    tu.polyak_update_(online, target, 0.25)
    torch.testing.assert_close(target[0], torch.tensor([4.0, 0.0]))  # 0.75 * target + 0.25 * online, by hand
    torch.testing.assert_close(target[1], torch.tensor([[2.5]]))
    torch.testing.assert_close(online[0], torch.tensor([1.0, 3.0]))  # the online side is untouched


def test_target_copy_is_an_equal_separate_module_without_gradients():
    online = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    online[1].bias.requires_grad_(False)  # a frozen online tensor stays as it is
    target = tu.target_copy(online)
    pairs = list(zip(online.parameters(), target.parameters()))
    assert len(pairs) == 4 and all(torch.equal(p, t) for p, t in pairs)
    assert all(p.data_ptr() != t.data_ptr() for p, t in pairs)
    assert not any(t.requires_grad for t in target.parameters())
    assert [p.requires_grad for p in online.parameters()] == [True, True, True, False]
    with torch.no_grad():
        online[0].weight.add_(1.0)
    assert not torch.equal(online[0].weight, target[0].weight)
