"""``critic_small_init``: both critics' output layers start uniform in [-3e-3, 3e-3] (DDPG's final layer) while the
hidden layers keep ML-Agents' initialization; null (the default) turns it on with hybrid actions only
(bench/results/tiny-hybrid-2026-11-29, tiny-fixes-2026-11-28).
"""
import pytest
import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionSpec

from mlagents_plugins.common.critic_norm import SMALL_OUTPUT_INIT
from mlagents_plugins.sac.networks import TwinQ
from tests.builders import behavior_spec
from tests.fast_sac.helpers import make_trainer


def _twin(small: bool, seed: int = 3) -> TwinQ:
    torch.manual_seed(seed)
    spec = behavior_spec(((5,),), cont=2, branches=(2, 3))
    return TwinQ(["extrinsic", "curiosity"], spec.observation_specs, NetworkSettings(hidden_units=24, num_layers=2),
                 ActionSpec(2, (2, 3)), small_output_init=small)


def _head_params(twin: TwinQ):
    return {f"q{i}.{name}": p for i, q in ((1, twin.q1), (2, twin.q2)) for name, p in q.value_heads.named_parameters()}


def test_output_layers_start_small_and_hidden_layers_keep_ml_agents_init():
    small, default = _twin(True), _twin(False)
    heads_small, heads_default = _head_params(small), _head_params(default)
    assert heads_small.keys() == heads_default.keys() and len(heads_small) == 8  # 2 critics x 2 streams x (W, b)
    for name, p in heads_small.items():
        assert p.abs().max() <= SMALL_OUTPUT_INIT, name
        # drawn, not zeroed: the weights spread over the interval
        if p.numel() > 10:
            assert p.abs().max() > SMALL_OUTPUT_INIT / 2 and p.std() > SMALL_OUTPUT_INIT / 4, name
    # ML-Agents' own output layers are far larger (the flag changes something)
    assert max(float(p.detach().abs().max()) for p in heads_default.values()) > 30 * SMALL_OUTPUT_INIT
    head_ids = {id(p) for q in (small.q1, small.q2) for p in q.value_heads.parameters()}
    default_params = dict(default.named_parameters())
    for name, p in small.named_parameters():
        if id(p) not in head_ids:
            assert torch.equal(p, default_params[name]), name


def test_first_q_values_and_their_action_slopes_are_near_zero():
    twin = _twin(True)
    g = torch.Generator().manual_seed(0)
    obs = [torch.randn(64, 5, generator=g) * 2.0 + 0.5]
    a_lo = torch.full((64, 2), -0.9)
    a_hi = torch.tensor([[0.9, -0.3]]).expand(64, 2)
    with torch.no_grad():
        # Q = W h + b per head: bounded by SMALL_OUTPUT_INIT * (|h|_1 + 1) whatever the hidden features h are
        body = twin.q1.network_body
        for acts in (a_lo, a_hi):
            hidden, _ = body(obs, actions=acts)
            bound = SMALL_OUTPUT_INIT * (hidden.abs().sum(dim=1) + 1.0)  # [B]
            q1, _ = twin(obs, acts)
            assert (q1.abs().amax(dim=(1, 2)) <= bound + 1e-7).all()
        q_lo, _ = twin(obs, a_lo)
        q_hi, _ = twin(obs, a_hi)
    default = _twin(False)
    with torch.no_grad():
        d_lo, _ = default(obs, a_lo)
        d_hi, _ = default(obs, a_hi)
    # the slope in the continuous actions starts an order of magnitude below ML-Agents' initialization's
    assert (q_hi - q_lo).abs().mean() * 10 < (d_hi - d_lo).abs().mean()


@pytest.mark.parametrize("cont, branches, setting, expected", [
    # null: on with hybrid actions (one or more of each kind), off with one kind alone
    (2, (), None, False), (2, (2, 2), None, True), (1, (3,), None, True), (0, (3, 2), None, False),
    (2, (2,), True, True), (0, (3,), True, True), (2, (), False, False), (2, (2, 2), False, False),
])
def test_setting_reaches_online_and_target_critics(tmp_path, cont, branches, setting, expected):
    hyper = {} if setting is None else {"critic_small_init": setting}
    trainer = make_trainer(behavior_spec(((4,),), cont=cont, branches=branches), tmp_path, **hyper)
    assert trainer.hyperparameters.critic_small_init is setting
    for twin in (trainer.optimizer.head.q_net, trainer.optimizer.head.q_target):
        biggest = max(float(p.detach().abs().max()) for q in (twin.q1, twin.q2) for p in q.value_heads.parameters())
        assert (biggest <= SMALL_OUTPUT_INIT) is expected
