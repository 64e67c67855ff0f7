"""fast_sac's ``update_precision`` (``common/bf16_matmul.py``, issue #55): the hidden layers' products in bf16 inside
the gradient update only; acting, the checkpoint and the exported ONNX stay fp32."""
import numpy as np
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.common import bf16_matmul
from mlagents_plugins.common.bf16_matmul import Bf16Linear, bf16_products, native_bf16_matmul, use_bf16_linears_
from mlagents_plugins.fast_sac.settings import FastSACSettings
from tests.builders import behavior_spec, trajectory
from tests.fast_sac.helpers import make_trainer


def _layer(in_features: int = 260, out_features: int = 270, seed: int = 3) -> torch.nn.Linear:
    torch.manual_seed(seed)
    layer = torch.nn.Linear(in_features, out_features)
    with torch.no_grad():
        layer.bias.uniform_(-2.0, 3.0)  # large, asymmetric: a bias dropped or rounded to bf16 shows
    return layer


def test_product_is_the_bf16_rounded_product_inside_the_scope_and_fp32_outside():
    layer = _layer()
    x = torch.randn(7, 260, generator=torch.Generator().manual_seed(1)) * 1.7 + 0.3
    with torch.no_grad():
        fp32 = torch.nn.functional.linear(x, layer.weight, layer.bias)
    assert use_bf16_linears_(layer) == 1 and type(layer) is Bf16Linear
    assert torch.equal(layer(x), fp32)  # outside the scope: nn.Linear exactly
    # Independent reference: the operands rounded to bf16, their product in float64, rounded to bf16, the fp32 bias.
    xr, wr = x.to(torch.bfloat16).double(), layer.weight.to(torch.bfloat16).double()
    reference = (xr @ wr.T).to(torch.bfloat16).float() + layer.bias
    with bf16_products(), torch.no_grad():
        y = layer(x)
    assert y.dtype == torch.float32
    # fp32 accumulation in another order (another CPU's kernel) can move a product across one bf16 rounding step (at
    # most 2^-7 of it); adding the fp32 bias to two products a step apart rounds each sum to fp32 (2^-24 of it)
    step = (xr @ wr.T).abs().float() * 2.0 ** -7
    bias_rounding = (reference.abs() + 1.0) * 2.0 ** -23
    assert bool(((y - reference).abs() <= step + bias_rounding).all())
    assert float((y - fp32).abs().max()) > 1e-4  # it did round: not the fp32 product
    assert torch.equal(layer(x), fp32)  # and the scope ended


def test_only_layers_of_256_inputs_and_outputs_switch_and_state_dict_keys_stay():
    net = torch.nn.Sequential(torch.nn.Linear(20, 256), torch.nn.Linear(256, 256), torch.nn.Linear(256, 3),
                              torch.nn.Linear(256, 128), torch.nn.Linear(128, 128), torch.nn.Linear(300, 512))
    keys = list(net.state_dict())
    assert use_bf16_linears_(net) == 2
    assert [type(m) is Bf16Linear for m in net] == [False, True, False, False, False, True]
    assert list(net.state_dict()) == keys


def test_scope_nests_and_restores_after_an_error():
    assert not bf16_matmul._ACTIVE
    with bf16_products(False):
        assert not bf16_matmul._ACTIVE
    with pytest.raises(RuntimeError):
        with bf16_products():
            with bf16_products():
                assert bf16_matmul._ACTIVE
            assert bf16_matmul._ACTIVE
            raise RuntimeError("update failed")
    assert not bf16_matmul._ACTIVE


def test_settings_resolve_and_refuse(monkeypatch):
    assert FastSACSettings().update_precision is None
    monkeypatch.setattr(bf16_matmul, "bf16_is_faster", lambda: True)  # the timed probe: see the tests below
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"avx512f", "avx512bw"})  # no bf16 hardware
    assert not FastSACSettings().update_bf16("cpu")  # null is auto: fp32 here
    assert FastSACSettings(update_precision="bf16").update_bf16("cpu")
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    assert FastSACSettings().update_bf16("cpu")  # and bf16 where the CPU has it
    assert not FastSACSettings(critic_batch_renorm=True).update_bf16("cpu")  # auto: not with CrossQ's critics
    assert FastSACSettings(critic_batch_renorm=True, update_precision="bf16").update_bf16("cpu")
    assert not FastSACSettings().update_bf16("cuda")
    assert FastSACSettings(update_precision="auto").update_bf16("cpu")
    assert not FastSACSettings(update_precision="auto").update_bf16("meta")  # not a CPU: not measured
    assert not FastSACSettings(update_precision="fp32").update_bf16("cpu")
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"avx512f", "avx512bw"})  # Cascade Lake: emulated
    assert not native_bf16_matmul("cpu")
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"amx_bf16", "amx_tile"})
    assert native_bf16_matmul("cpu")
    monkeypatch.setattr(bf16_matmul, "bf16_is_faster", lambda: False)  # the flag, but bf16 measured slower
    assert not FastSACSettings().update_bf16("cpu")
    assert FastSACSettings(update_precision="bf16").update_bf16("cpu")  # an explicit bf16 is not second-guessed
    for value in ("bfloat16", True, "fp16"):
        with pytest.raises(TrainerConfigError, match="update_precision = .*'fp32' or 'bf16' or 'auto'"):
            FastSACSettings(update_precision=value)


@pytest.fixture
def fresh_probe():
    bf16_matmul._bf16_is_faster.cache_clear()
    yield
    bf16_matmul._bf16_is_faster.cache_clear()


@pytest.mark.parametrize("fp32_ms, bf16_ms, expected", [
    (1.0, 0.28, True),  # the AVX-512 BF16 Zen 5 EPYC
    (0.73, 0.25, True),  # an Intel Xeon with AMX on a busy host (its layer probe said 0.90x: fp32)
    (1.0, 0.75, True),  # at the margin
    (1.0, 0.8, False),  # near break-even stays fp32
    (0.8, 1.43, False),  # the Xeon VM listing avx512_bf16: the product at 1.79x fp32's time
    (2.0, 1.4, True),  # a ratio, not a difference: 0.7x of a slower fp32
    (0.5, 0.4, False),  # 0.8x of a faster fp32
])
def test_auto_takes_bf16_only_where_the_timed_products_are_faster(monkeypatch, fresh_probe, fp32_ms, bf16_ms, expected):
    calls = []
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    monkeypatch.setattr(bf16_matmul, "probe_product_times",
                        lambda: calls.append(1) or {"fp32": fp32_ms, "bf16": bf16_ms})
    assert FastSACSettings().update_bf16("cpu") is expected
    assert FastSACSettings(update_precision="auto").update_bf16("cpu") is expected
    assert len(calls) == 1  # measured once: every network of a run decides alike


def test_auto_times_nothing_without_the_hardware_or_with_batch_renorm(monkeypatch, fresh_probe):
    def probe():
        raise AssertionError("probed")

    monkeypatch.setattr(bf16_matmul, "probe_product_times", probe)
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"avx2", "avx512f"})
    assert not FastSACSettings().update_bf16("cpu")
    assert not FastSACSettings().update_bf16("cuda")
    monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda: {"avx512_bf16"})
    assert not FastSACSettings(critic_batch_renorm=True).update_bf16("cpu")
    assert not FastSACSettings(update_precision="fp32").update_bf16("cpu")


def test_probe_is_per_thread_count_and_logged(monkeypatch, fresh_probe, caplog):
    times = iter([{"fp32": 1.0, "bf16": 0.5}, {"fp32": 1.0, "bf16": 1.2}])
    monkeypatch.setattr(bf16_matmul, "probe_product_times", lambda: next(times))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        with caplog.at_level("INFO", logger=bf16_matmul.__name__):
            assert bf16_matmul.bf16_is_faster() and bf16_matmul.bf16_is_faster()
        assert "0.500 ms with bf16 products against 1.000 ms in fp32 (0.50x, 1 thread(s))" in caplog.text
        torch.set_num_threads(2)
        assert not bf16_matmul.bf16_is_faster()  # another thread count: measured again
    finally:
        torch.set_num_threads(threads)


def test_probe_times_the_three_products_of_one_layer_in_each_precision(monkeypatch):
    seen = []
    real = torch.mm

    def mm(a, b):
        seen.append((a.dtype, b.dtype, tuple(a.shape), tuple(b.shape)))
        return real(a, b)

    monkeypatch.setattr(torch, "mm", mm)
    ms = bf16_matmul.probe_product_times(features=32, rows=8, calls=5)
    monkeypatch.setattr(torch, "mm", real)
    assert set(ms) == {"fp32", "bf16"} and all(v >= 0 for v in ms.values())
    for dtype in (torch.float32, torch.bfloat16):
        shapes = {s[2:] for s in seen if s[0] == dtype and s[1] == dtype}
        # forward x W^T [8, 32] x [32, 32], input gradient dy W, weight gradient dy^T x [32, 8] x [8, 32]
        assert shapes == {((8, 32), (32, 32)), ((32, 8), (8, 32))}
        assert sum(1 for s in seen if s[0] == dtype) == 3 * sum(1 for s in seen if s[0] == dtype and s[2] == (32, 8))
    assert {s[0] for s in seen} == {torch.float32, torch.bfloat16}
    assert all(s[0] == s[1] for s in seen)  # operands already in the precision: no mixed product


def test_probe_draws_nothing_from_the_global_generator(fresh_probe):
    torch.manual_seed(11)
    state = torch.get_rng_state()
    bf16_matmul.probe_product_times(features=32, rows=8, calls=2)
    assert torch.equal(torch.get_rng_state(), state)


def test_the_auto_probe_leaves_a_runs_networks_and_noise_as_without_it(tmp_path, monkeypatch, fresh_probe):
    """The probe (real timing here) runs only where the CPU lists bf16 hardware; a run's initial networks and its
    first sampled noise must not depend on whether it ran.  At 64 units no layer switches to bf16 either way."""
    spec = behavior_spec(((9,),), cont=2)
    probed = []
    real_probe = bf16_matmul.probe_product_times
    monkeypatch.setattr(bf16_matmul, "probe_product_times", lambda: probed.append(1) or real_probe())
    runs = {}
    for flags, precision in (({"avx2"}, "fp32"), ({"avx512f", "avx512_bf16"}, "auto")):
        monkeypatch.setattr(bf16_matmul, "_cpu_flags", lambda flags=flags: flags)
        torch.manual_seed(5)
        trainer = make_trainer(spec, tmp_path / precision, hidden_units=64, num_layers=2, batch_size=32,
                               buffer_init_steps=10 ** 6, seed=5, update_precision=precision)
        head = trainer.optimizer.head
        params = [t.clone() for m in (trainer.policy.actor, head.q_net, head.q_target) for t in m.state_dict().values()]
        runs[precision] = (params, torch.rand(4))
    assert probed == [1]  # the probe ran in the second build only
    assert all(torch.equal(a, b) for a, b in zip(runs["fp32"][0], runs["auto"][0]))
    assert torch.equal(runs["fp32"][1], runs["auto"][1])


def _filled(tmp_path, precision: str, seed: int = 0):
    spec = behavior_spec(((9,),), cont=2)
    torch.manual_seed(seed)  # the same initial networks for each precision
    trainer = make_trainer(spec, tmp_path / precision, hidden_units=256, num_layers=2, batch_size=32,
                           buffer_init_steps=10 ** 6, seed=seed, update_precision=precision)
    rng = np.random.default_rng(4)
    for i in range(6):
        trainer._process_trajectory(trajectory(spec, 12, rng, done=i % 2 == 0))
    return trainer


def test_update_multiplies_bf16_in_actor_critics_and_targets_but_acts_in_fp32(tmp_path):
    fp32, bf16 = _filled(tmp_path, "fp32"), _filled(tmp_path, "bf16")
    head = bf16.optimizer.head
    for module in (bf16.policy.actor, head.q_net.q1, head.q_net.q2, head.q_target.q1, head.q_target.q2):
        assert sum(type(m) is Bf16Linear for m in module.modules()) == 1  # the 256x256 hidden layer
    assert not any(type(m) is Bf16Linear for m in fp32.optimizer.head.q_net.modules())
    for a, b in zip(fp32.policy.actor.state_dict().values(), bf16.policy.actor.state_dict().values()):
        assert torch.equal(a, b)  # the same initial networks
    obs = [torch.randn(5, 9, generator=torch.Generator().manual_seed(2))]
    with torch.no_grad():
        act_fp32 = fp32.policy.actor.network_body(obs)[0]
        act_bf16 = bf16.policy.actor.network_body(obs)[0]
    assert torch.equal(act_fp32, act_bf16)  # acting is fp32
    torch.manual_seed(7)
    s_fp32, _ = fp32.optimizer.update(fp32.sample_batch())
    torch.manual_seed(7)
    s_bf16, _ = bf16.optimizer.update(bf16.sample_batch())
    # the same batch and noise: the losses agree to bf16's resolution and differ beyond fp32's
    for key in ("Losses/Q1 Loss", "Losses/Policy Loss"):
        assert s_bf16[key] == pytest.approx(s_fp32[key], rel=3e-2, abs=1e-3)
    assert s_bf16["Losses/Q1 Loss"] != s_fp32["Losses/Q1 Loss"]
    assert not bf16_matmul._ACTIVE  # the scope closed with the update


def test_onnx_export_with_bf16_updates_is_fp32_and_matches_torch(tmp_path):
    from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch, export_policy
    import onnx

    trainer = _filled(tmp_path, "bf16")
    trainer.optimizer.update(trainer.sample_batch())
    path = export_policy(trainer.policy, str(tmp_path / "bf16"))
    obs = [np.random.default_rng(0).uniform(-2, 2, (4, 9)).astype(np.float32)]
    compare_onnx_with_torch(trainer.policy, path, obs, np.ones((4, 0), np.float32), np.zeros((4, 1, 0), np.float32))
    model = onnx.load(path)
    assert "Cast" not in {node.op_type for node in model.graph.node}
    bf16_type = onnx.TensorProto.BFLOAT16
    assert all(init.data_type != bf16_type for init in model.graph.initializer)


def test_recurrent_critic_body_switches(tmp_path):
    from tests.fast_sac.test_recurrent import _settings, _spec, _trainer

    settings = _settings(update_precision="bf16")
    settings.network_settings.hidden_units = 256
    settings.network_settings.num_layers = 2
    trainer = _trainer(_spec(), tmp_path, settings)
    opt = trainer.optimizer
    assert opt.head.bf16_update
    for module in (trainer.policy.actor, opt.critic_body, opt.target_critic_body):
        assert sum(type(m) is Bf16Linear for m in module.modules()) == 1


@pytest.mark.parametrize("precision,hidden,timed", [("bf16", 256, False), ("fp32", 256, True), ("bf16", 128, True)])
def test_fp32_kernel_is_timed_only_where_hidden_products_stay_fp32(tmp_path, monkeypatch, caplog, precision, hidden,
                                                                   timed):
    """With bf16 hidden layers the fp32 products left are thin ones, where oneDNN's per-call cost lost in the compiled
    step (bench/results/fast-sac-kernel-choice-2026-12-03): the chooser stays off and ATen's kernel runs.  At 128 units
    nothing switches to bf16, so the fp32 kernel is still timed."""
    from mlagents_plugins.common import fast_kernels

    monkeypatch.setattr(fast_kernels, "_ONEDNN_MATMUL_OK", True)  # as where the probe finds oneDNN exact and faster
    spec = behavior_spec(((9,),), cont=2)
    with caplog.at_level("INFO", logger="mlagents_plugins.sac.head"):
        trainer = make_trainer(spec, tmp_path, hidden_units=hidden, num_layers=2, update_precision=precision)
    chooser = trainer.optimizer.head.matmul_kernels
    assert chooser.active is timed
    assert chooser.decided is not timed and (timed or chooser.use_onednn is False)
    # bench gym's records read the kernel from the log where it is not timed, as from the chooser's line
    from bench import gym as bench_gym

    assert bench_gym.parse_update_numerics(caplog.text)["matmul_kernel"] == (None if timed else "default")
