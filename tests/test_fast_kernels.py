"""The kernel swaps in mlagents_plugins/common/fast_kernels.py change speed only, never the function computed."""
import copy
import time

import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.layers import LinearEncoder, Swish
from mlagents.trainers.torch_entities.networks import ValueNetwork
from mlagents_envs.base_env import DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.common import fast_kernels as K


def _value_network() -> ValueNetwork:
    spec = ObservationSpec((7,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs")
    return ValueNetwork(["extrinsic"], [spec], NetworkSettings(hidden_units=32, num_layers=3), 3, 1)


def test_fuse_swish_replaces_every_swish_and_keeps_outputs_and_state_dict():
    torch.manual_seed(0)
    net = _value_network()
    before = copy.deepcopy(net)
    n_swish = sum(isinstance(m, Swish) for m in net.modules())
    assert n_swish == 3
    assert K.fuse_swish_(net) == n_swish
    assert not any(isinstance(m, Swish) for m in net.modules())
    assert sum(isinstance(m, K.FusedSwish) for m in net.modules()) == n_swish
    assert list(net.state_dict()) == list(before.state_dict())
    obs = [torch.randn(5, 7) * 3.0]
    act = torch.randn(5, 3)
    out_new, _ = net(obs, actions=act)
    out_old, _ = before(obs, actions=act)
    torch.testing.assert_close(out_new["extrinsic"], out_old["extrinsic"], rtol=1e-6, atol=1e-6)
    # gradients match too (the fused kernel's backward is the same derivative)
    out_new["extrinsic"].sum().backward()
    out_old["extrinsic"].sum().backward()
    for (name, p_new), p_old in zip(net.named_parameters(), before.parameters()):
        torch.testing.assert_close(p_new.grad, p_old.grad, rtol=1e-5, atol=1e-6, msg=name)


def test_fused_swish_is_x_sigmoid_x():
    x = torch.tensor([-3.0, -0.5, 0.0, 0.25, 4.0])
    expected = torch.tensor([v / (1.0 + np.exp(-v)) for v in x.tolist()], dtype=torch.float32)
    torch.testing.assert_close(K.FusedSwish()(x), expected)


def test_fused_adam_kwargs_gives_the_same_steps_as_multi_tensor_adam():
    torch.manual_seed(1)
    enc = LinearEncoder(6, 2, 16)
    twin = copy.deepcopy(enc)
    kwargs = K.fused_adam_kwargs(torch.device("cpu"))
    assert kwargs in ({"fused": True}, {"foreach": True})
    opt_a = torch.optim.Adam(enc.parameters(), lr=1e-2, **kwargs)
    opt_b = torch.optim.Adam(twin.parameters(), lr=1e-2, foreach=True)
    for step in range(5):
        x = torch.randn(9, 6) + step
        for net, opt in ((enc, opt_a), (twin, opt_b)):
            opt.zero_grad()
            (net(x) ** 2).mean().backward()
            opt.step()
    for p, q in zip(enc.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    # the state_dict format is the same, so a checkpoint written with one loads into the other
    opt_b.load_state_dict(opt_a.state_dict())


def test_fused_adam_falls_back_where_no_kernel_exists():
    assert K.fused_adam_kwargs(torch.device("meta")) == {"foreach": True}


@pytest.mark.parametrize(
    "rel_err,t_default,t_candidate,expected",
    [
        (6e-7, 3.0, 1.5, True),  # fp32-exact and twice as fast (oneDNN on AVX-512 AMD)
        (2.4e-3, 3.0, 0.5, False),  # bf16-rounded inputs: not the same math, however fast
        (4.9e-4, 3.0, 1.0, False),  # TF32-like rounding
        (6e-7, 3.0, 2.9, False),  # exact but not worth switching
        (6e-7, 1.0, 1.5, False),  # exact but slower
    ],
)
def test_matmul_kernel_is_accepted_only_when_exact_and_faster(rel_err, t_default, t_candidate, expected):
    assert K.accept_matmul_kernel(rel_err, t_default, t_candidate) is expected


def test_fast_fp32_matmul_is_exact_scoped_and_restores_precision():
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(300, 200, generator=gen)
    b = torch.randn(200, 100, generator=gen)
    ref = a.double() @ b.double()
    assert torch.get_float32_matmul_precision() == "highest"
    with K.fast_fp32_matmul(torch.device("cpu")):
        inside = a @ b
        active = torch.get_float32_matmul_precision()
    assert torch.get_float32_matmul_precision() == "highest"
    assert active == ("medium" if K.onednn_fp32_matmul_available() else "highest")
    rel = float((inside.double() - ref).abs().max() / ref.abs().max())
    assert rel < 1e-5  # fp32 accuracy; bf16 rounding would give ~2e-3
    with pytest.raises(ValueError):
        with K.fast_fp32_matmul(torch.device("cpu")):
            raise ValueError("boom")
    assert torch.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("device,enabled", [("meta", True), ("cpu", False)])
def test_fast_fp32_matmul_does_nothing_off_cpu_or_when_disabled(device, enabled):
    with K.fast_fp32_matmul(torch.device(device), enabled):
        assert torch.get_float32_matmul_precision() == "highest"


def _run_chooser(chooser, slow_when_onednn: bool, calls: int):
    modes = []
    for _ in range(calls):
        with chooser.scope():
            onednn = torch.get_float32_matmul_precision() == "medium"
            modes.append(onednn)
            time.sleep(0.004 if onednn == slow_when_onednn else 0.001)
        assert torch.get_float32_matmul_precision() == "highest"
    return modes


@pytest.mark.skipif(not K.onednn_fp32_matmul_available(), reason="oneDNN fp32 kernel not exact/faster here")
@pytest.mark.parametrize("onednn_faster", [True, False])
def test_chooser_times_both_kernels_then_keeps_the_faster(onednn_faster):
    chooser = K.MatmulKernelChooser(torch.device("cpu"), True, trials=4, warmup=2)
    modes = _run_chooser(chooser, slow_when_onednn=not onednn_faster, calls=2 + 8)
    assert modes[2:] == [True, False] * 4  # alternating while timing
    assert chooser.use_onednn is onednn_faster
    later = _run_chooser(chooser, slow_when_onednn=not onednn_faster, calls=5)
    assert later == [onednn_faster] * 5


@pytest.mark.parametrize("device,enabled", [("meta", True), ("cpu", False)])
def test_chooser_is_inert_off_cpu_or_when_disabled(device, enabled):
    chooser = K.MatmulKernelChooser(torch.device(device), enabled, trials=2, warmup=0)
    assert _run_chooser(chooser, slow_when_onednn=False, calls=6) == [False] * 6
    assert chooser.use_onednn is False
