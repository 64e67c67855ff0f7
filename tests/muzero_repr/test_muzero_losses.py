"""Pure math of muzero_repr against hand values and naive references."""
import math

import pytest
import torch

from mlagents_plugins.muzero_repr import losses as L


def naive_h(x, eps):
    return math.copysign(math.sqrt(abs(x) + 1) - 1, x) + eps * x if x != 0 else 0.0


def test_value_transform_hand_values():
    # h(3) = sqrt(4) - 1 + 0.001*3 = 1.003 ; h(-8) = -(3 - 1) - 0.008 = -2.008 ; h(0) = 0
    x = torch.tensor([3.0, -8.0, 0.0, 120.0])
    y = L.value_transform(x, 0.001)
    assert torch.allclose(y, torch.tensor([1.003, -2.008, 0.0, 10.0 + 0.12]), atol=1e-6)
    for xi, yi in zip(x.tolist(), y.tolist()):
        assert yi == pytest.approx(naive_h(xi, 0.001), abs=1e-6)


@pytest.mark.parametrize("eps", [0.0, 0.001, 0.1])
def test_inverse_value_transform_round_trip(eps):
    x = torch.tensor([-1234.5, -3.0, -0.25, 0.0, 0.7, 15.0, 999.0], dtype=torch.float64)
    back = L.inverse_value_transform(L.value_transform(x, eps), eps)
    assert torch.allclose(back, x, rtol=1e-9, atol=1e-9)
    # And the other way round on h-space values.
    y = torch.tensor([-7.5, -0.1, 0.0, 2.25, 30.0], dtype=torch.float64)
    assert torch.allclose(L.value_transform(L.inverse_value_transform(y, eps), eps), y, atol=1e-9)


def test_inverse_value_transform_hand_value():
    # eps = 0: h^-1(2) = (2 + 1)^2 - 1 = 8 ; h^-1(-0.5) = -(1.5^2 - 1) = -1.25
    assert torch.allclose(
        L.inverse_value_transform(torch.tensor([2.0, -0.5]), 0.0), torch.tensor([8.0, -1.25])
    )


def naive_h_inverse_float64(y, eps):
    """h^-1 in float64 by the textbook root; its cancellation costs ~1e-13 relative, far below float32's."""
    c = abs(y) + 1.0 + eps
    u = (math.sqrt(1.0 + 4.0 * eps * c) - 1.0) / (2.0 * eps) if eps > 0 else abs(y) + 1.0
    return math.copysign(u * u - 1.0, y) if y != 0 else 0.0


@pytest.mark.parametrize("eps", [0.0, 0.001, 0.1])
def test_inverse_value_transform_float32_is_accurate_to_a_few_ulp(eps):
    # Inputs are exact float32 numbers; the result takes about 8 float32 roundings (each <= 2^-24
    # relative, eps itself rounded once), all on positive operands, so it must be within 16 ulp relative
    # of the float64 reference.  The old root formula failed this by up to 23% near 0 and 1e-4 at 40.
    y32 = torch.tensor([-300.25, -5.403, -0.731, -3e-3, -1e-6, 0.0, 2e-6, 1e-3, 0.2, 5.4037, 17.0, 250.5],
                       dtype=torch.float32)
    x32 = L.inverse_value_transform(y32, eps)
    assert x32.dtype == torch.float32
    expected = torch.tensor([naive_h_inverse_float64(v, eps) for v in y32.double().tolist()], dtype=torch.float64)
    rel_err = (x32.double() - expected).abs() / expected.abs().clamp(min=1e-300)
    assert x32[5] == 0.0
    assert float(rel_err.max()) <= 16 * 2.0**-24, rel_err


def test_scalar_to_support_two_hot_hand_values():
    probs = L.scalar_to_support(torch.tensor([1.25, -2.0, 7.0, -0.5]), support_size=3)
    assert probs.shape == (4, 7)
    expected = torch.zeros(4, 7)
    expected[0, 4] = 0.75  # atom 1
    expected[0, 5] = 0.25  # atom 2
    expected[1, 1] = 1.0  # atom -2
    expected[2, 6] = 1.0  # clipped to 3
    expected[3, 2] = 0.5  # atom -1
    expected[3, 3] = 0.5  # atom 0
    assert torch.allclose(probs, expected)


def test_support_round_trip_and_shape_error():
    x = torch.tensor([[-2.9, 0.0, 0.3], [2.999, 1.0, -1.75]])
    probs = L.scalar_to_support(x, 3)
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3))
    assert torch.allclose(L.support_to_scalar(probs, 3), x, atol=1e-6)
    with pytest.raises(ValueError, match="2 \\* support_size"):
        L.support_to_scalar(probs, 4)


def test_scalar_prediction_loss_categorical_and_scalar():
    target = torch.tensor([3.0, -8.0])
    eps = 0.0
    # categorical: cross entropy with two-hot of h(target) = [1.0, -2.0]
    logits = torch.tensor([[0.1, -0.3, 0.2, 0.5, 1.0], [0.0, 2.0, -1.0, 0.3, 0.4]])
    loss = L.scalar_prediction_loss(logits, target, support_size=2, transform_eps=eps)
    logp = torch.log_softmax(logits, -1)
    assert torch.allclose(loss, torch.stack([-logp[0, 3], -logp[1, 0]]))
    # scalar: 0.5 (pred - h(target))^2
    pred = torch.tensor([0.5, -1.0])
    loss = L.scalar_prediction_loss(pred, target, support_size=0, transform_eps=eps)
    assert torch.allclose(loss, torch.tensor([0.5 * 0.25, 0.5 * 1.0]))
    # transform disabled: raw target
    loss = L.scalar_prediction_loss(pred, target, support_size=0, transform_eps=-1)
    assert torch.allclose(loss, torch.tensor([0.5 * 2.5**2, 0.5 * 7.0**2]))
    with pytest.raises(ValueError, match="categorical pred"):
        L.scalar_prediction_loss(pred, target, support_size=2, transform_eps=eps)


def test_prediction_to_scalar_inverts_loss_target():
    target = torch.tensor([5.5, -0.3, 40.0])
    probs = L.scalar_to_support(L.value_transform(target, 0.001), 10)
    logits = torch.log(probs.clamp(min=1e-12))
    assert torch.allclose(L.prediction_to_scalar(logits, 10, 0.001), target, atol=1e-3)
    assert torch.allclose(L.prediction_to_scalar(L.value_transform(target, 0.001), 0, 0.001), target,
                          atol=1e-4)


def test_min_max_scale():
    latent = torch.tensor([[2.0, 4.0, 3.0], [-1.0, -1.0, -1.0]])
    out = L.min_max_scale(latent, eps=0.0 + 1e-12)
    assert torch.allclose(out[0], torch.tensor([0.0, 1.0, 0.5]))
    assert torch.allclose(out[1], torch.zeros(3))


def test_scale_latent_min_max_drops_scale_and_offset_tanh_keeps_them():
    """Two samples whose raw latents differ by a positive scale and an offset: min-max maps them to the same latent
    (what a magnitude-coded observation loses), tanh keeps them apart and keeps signs (values from math.tanh)."""
    import math

    raw = torch.tensor([[0.5, -1.0, 2.0], [0.5 * 3.0 + 0.25, -1.0 * 3.0 + 0.25, 2.0 * 3.0 + 0.25]])
    mm = L.scale_latent(raw, "min_max")
    assert torch.allclose(mm[0], mm[1], atol=1e-5)
    assert torch.allclose(mm[0], torch.tensor([1.5 / 3.0, 0.0, 1.0]), atol=1e-5)
    th = L.scale_latent(raw, "tanh")
    assert torch.allclose(th[1], torch.tensor([math.tanh(1.75), math.tanh(-2.75), math.tanh(6.25)]), atol=1e-6)
    assert th[0, 1] < 0 and not torch.allclose(th[0], th[1])
    with pytest.raises(ValueError, match="allowed: \\['min_max', 'tanh'\\]"):
        L.scale_latent(raw, "minmax")


def test_negative_cosine_similarity_stops_target_gradient():
    pred = torch.tensor([[1.0, 0.0], [1.0, 1.0]], requires_grad=True)
    target = torch.tensor([[0.0, 2.0], [3.0, 3.0]], requires_grad=True)
    loss = L.negative_cosine_similarity(pred, target)
    assert torch.allclose(loss, torch.tensor([0.0, -1.0]), atol=1e-6)
    loss.sum().backward()
    assert target.grad is None
    assert pred.grad is not None


def test_masked_mean_over_batch():
    loss = torch.tensor([[1.0, 2.0, 3.0], [5.0, 7.0, 11.0]])
    mask = torch.tensor([[True, False, False], [True, True, False]])
    assert torch.allclose(L.masked_mean_over_batch(loss, mask), torch.tensor([3.0, 7.0, 0.0]))


def test_shape_errors_name_the_function_and_tensors():
    with pytest.raises(ValueError, match="masked_mean_over_batch: all inputs need the same shape"):
        L.masked_mean_over_batch(torch.zeros(4, 3), torch.ones(4, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"loss_k must have shape \[\*, \*\], got \[4\]"):
        L.masked_mean_over_batch(torch.zeros(4), torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="negative_cosine_similarity: .*'pred': \\(2, 3\\)"):
        L.negative_cosine_similarity(torch.zeros(2, 3), torch.zeros(2, 4))


def test_policy_losses_hand_values():
    mean = torch.tensor([[[0.5, -0.5]], [[0.0, 1.0]]])
    act = torch.tensor([[[1.0, -0.5]], [[0.0, -1.0]]])
    assert torch.allclose(L.continuous_policy_loss(mean, act), torch.tensor([[0.125], [2.0]]))
    logits0 = torch.tensor([[[0.0, 1.0, 2.0]]])
    logits1 = torch.tensor([[[3.0, -1.0]]])
    acts = torch.tensor([[[2, 1]]])
    got = L.discrete_policy_loss([logits0, logits1], acts)
    want = -torch.log_softmax(logits0, -1)[0, 0, 2] - torch.log_softmax(logits1, -1)[0, 0, 1]
    assert torch.allclose(got, want.reshape(1, 1))


def test_scale_gradient_forward_identity_backward_scaled():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    y = L.scale_gradient(x, 0.25)
    assert torch.equal(y, x.detach())
    (y * torch.tensor([3.0, 5.0])).sum().backward()
    assert torch.allclose(x.grad, torch.tensor([0.75, 1.25]))
