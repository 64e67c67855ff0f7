"""impala with the shared fast kernels (fused Swish, fused Adam, oneDNN fp32 matmul on CPU): same math.

The reference is the same policy and critic built from the same seed but with ML-Agents' own ``Swish``,
the single-tensor Adam (``foreach=False``) and ``fast_cpu_matmul: false``; several updates on one batch
must give the same losses, gradient norms and parameters to fp32 accuracy.
"""
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.torch_entities.layers import Swish
from mlagents.trainers.torch_entities.networks import SimpleActor

from mlagents_plugins.common.fast_kernels import FusedSwish, fused_adam_kwargs
from mlagents_plugins.impala import optimizer as O
from mlagents_plugins.impala.optimizer import TorchImpalaOptimizer
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.impala.trainer import ImpalaTrainer
from tests.impala.helpers import impala_spec, trainer_settings
from tests.impala.test_components import _batch_for


def _count(module, cls) -> int:
    return sum(isinstance(m, cls) for m in module.modules())


def _unfuse_(module) -> None:
    """Put ML-Agents' two-kernel Swish back (the reference path)."""
    for name, child in list(module.named_children()):
        if isinstance(child, FusedSwish):
            setattr(module, name, Swish())
        else:
            _unfuse_(child)


def test_trainer_and_optimizer_use_the_fast_kernels(tmp_path):
    spec = impala_spec(2, (3,))
    trainer = ImpalaTrainer("B", 10, trainer_settings(), True, False, 0, str(tmp_path))
    policy = trainer.create_policy(BehaviorIdentifiers.from_name_behavior_id("B?team=0"), spec)
    assert _count(policy.actor, Swish) == 0 and _count(policy.actor, FusedSwish) > 0
    opt = TorchImpalaOptimizer(policy, trainer_settings())
    assert _count(opt.critic, Swish) == 0 and _count(opt.critic, FusedSwish) > 0
    (flag,) = fused_adam_kwargs(opt.device).items()
    assert opt.optimizer.defaults[flag[0]] is True
    rms = TorchImpalaOptimizer(policy, trainer_settings(optimizer="rmsprop"))
    assert isinstance(rms.optimizer, torch.optim.RMSprop) and rms.optimizer.defaults["foreach"] is True


@pytest.mark.parametrize("optimizer", ["adam", "rmsprop"])
def test_updates_with_fast_kernels_match_the_reference_kernels(optimizer):
    spec = impala_spec(2, (3, 2))  # hybrid actions: both heads and the critic are exercised
    batch = _batch_for(spec)
    runs = []
    for fast in (True, False):
        settings = trainer_settings(optimizer=optimizer, fast_cpu_matmul=fast, learning_rate=1e-3)
        torch.manual_seed(7)
        policy = ImpalaPolicy(0, spec, settings.network_settings, SimpleActor, {})
        opt = TorchImpalaOptimizer(policy, settings)  # fuses its critic
        if not fast:
            _unfuse_(opt.critic)
            assert _count(opt.critic, Swish) > 0
            cls = torch.optim.Adam if optimizer == "adam" else torch.optim.RMSprop
            opt.optimizer = cls(opt._params, **{k: v for k, v in opt.optimizer.defaults.items()
                                                if k in ("lr", "eps", "alpha")}, foreach=False)
        else:
            from mlagents_plugins.common.fast_kernels import fuse_swish_

            fuse_swish_(policy.actor)  # as ImpalaTrainer.create_policy does
        stats = [opt.update(batch) for _ in range(3)]
        params = [p.detach().clone() for p in list(policy.actor.parameters()) + list(opt.critic.parameters())]
        runs.append((stats, params))
    (stats_fast, params_fast), (stats_ref, params_ref) = runs
    for s_fast, s_ref in zip(stats_fast, stats_ref):
        for key in (O.STAT_POLICY_LOSS, O.STAT_VALUE_LOSS, O.STAT_GRAD_NORM, O.STAT_APPROX_KL):
            assert s_fast[key] == pytest.approx(s_ref[key], rel=1e-4, abs=1e-6), key
    moved = 0
    for a, b in zip(params_fast, params_ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
        moved += 1
    assert moved > 4
    # and the updates really changed the parameters (a no-op update would match trivially)
    torch.manual_seed(7)
    fresh = ImpalaPolicy(0, spec, trainer_settings().network_settings, SimpleActor, {})
    assert any((a - b).abs().max() > 1e-4 for a, b in zip(params_fast, fresh.actor.parameters()))
