"""``critic_neutral_init``: a fresh critic's Q does not depend on the actions (the first layer's weights on the
continuous action inputs are 0, each discrete branch's output rows equal), while the observation features and the
output scale keep ML-Agents' initialization, and the zeroed weights still learn (bench/results/tiny-defaults-2026-11-28).
"""
import pytest
import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionSpec

from mlagents_plugins.sac.networks import TwinQ
from tests.builders import behavior_spec
from tests.fast_sac.helpers import make_trainer


def _twin(neutral: bool, layer_norm: bool = False, seed: int = 3) -> TwinQ:
    torch.manual_seed(seed)
    spec = behavior_spec(((5,),), cont=2, branches=(2, 3))
    return TwinQ(["extrinsic", "curiosity"], spec.observation_specs, NetworkSettings(hidden_units=24, num_layers=2),
                 ActionSpec(2, (2, 3)), layer_norm=layer_norm, action_neutral_init=neutral)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_fresh_q_does_not_depend_on_the_actions_but_on_the_observation(layer_norm):
    neutral, default = _twin(True, layer_norm), _twin(False, layer_norm)
    g = torch.Generator().manual_seed(0)
    obs = [torch.randn(16, 5, generator=g) * 2.0 + 0.5]
    a1 = torch.rand(16, 2, generator=g) * 1.8 - 0.9
    a2 = -a1.flip(1)
    with torch.no_grad():
        q_a, _ = neutral(obs, a1)
        q_b, q2_b = neutral(obs, a2)
        d_a, _ = default(obs, a1)
        d_b, _ = default(obs, a2)
    # Equal weight rows give equal outputs up to float32 rounding, whose order a CPU's GEMM kernel may choose per
    # output column (bit-equal on an Intel Xeon, not on an AMD EPYC): a float32 sum of 24 products is within about
    # 24 * 2^-24 of its magnitude, so 1e-5 of the largest |Q| allows that and nothing of the 1e-3 differences below.
    tol = 1e-5 * float(torch.cat([q_a, q_b, d_a]).abs().max())

    def same(x, y):
        return bool((x - y).abs().max() <= tol)

    assert same(q_a, q_b)  # no slope in the continuous actions
    for q in (q_a, q2_b):  # every action of a branch has the same value: branch (2) = outputs 0-1, (3) = 2-4
        assert same(q[..., 0], q[..., 1]) and same(q[..., 2], q[..., 3]) and same(q[..., 3], q[..., 4])
        assert (q[..., 1] - q[..., 2]).abs().max() > 1e-3
    assert (d_a - d_b).abs().max() > 1e-3 and (d_a[..., 0] - d_a[..., 1]).abs().max() > 1e-3  # the default has both
    assert q_a.std(dim=0).min() > 1e-3  # the observation still matters
    # the output scale is ML-Agents' own (not shrunk, unlike critic_small_init)
    assert q_a.abs().mean() > 0.2 * d_a.abs().mean()


def test_zeroed_weights_still_learn():
    twin = _twin(True)
    obs = [torch.randn(8, 5)]
    q1, _ = twin(obs, torch.rand(8, 2))
    q1.sum().backward()
    first = next(m for m in twin.q1.network_body._body_endoder.modules() if isinstance(m, torch.nn.Linear))
    assert torch.count_nonzero(first.weight[:, -2:]) == 0 and first.weight.grad[:, -2:].abs().sum() > 0


@pytest.mark.parametrize("setting", [None, True, False])
def test_setting_reaches_online_and_target_critics(tmp_path, setting):
    hyper = {} if setting is None else {"critic_neutral_init": setting}
    trainer = make_trainer(behavior_spec(((4,),), cont=2, branches=(2,)), tmp_path, **hyper)
    expected = trainer.hyperparameters.critic_neutral_init
    assert expected is (False if setting is None else setting)
    for twin in (trainer.optimizer.head.q_net, trainer.optimizer.head.q_target):
        for q in (twin.q1, twin.q2):
            first = next(m for m in q.network_body._body_endoder.modules() if isinstance(m, torch.nn.Linear))
            assert bool(torch.count_nonzero(first.weight[:, -2:]) == 0) is expected
