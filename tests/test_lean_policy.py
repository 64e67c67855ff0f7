"""``LeanPolicy`` acts as ML-Agents' ``TorchPolicy``: same actions from the same torch seed, same log-probabilities
and entropies, for every action kind the package's trainers use (tanh-squashed SAC actors, impala's plain Gaussian
with a state-independent sigma, masked discrete branches, hybrid), stochastic and deterministic.

The reference is ``TorchPolicy.get_action`` itself on a policy holding the same weights: its actions come from
``ActionModel``'s distribution objects, so a mistake in the lean formulas (a swapped mean and sample in the log
density, a missing Jacobian, a mask applied to the wrong branch, entropies summed in the wrong direction) shows as a
difference.  Tolerance: both evaluate the same float32 operations on the same inputs (the lean path inline, not
through transform objects), so values agree to float32 rounding of a few operations (1e-5 relative, 1e-6 absolute);
discrete picks and the random draws must be identical.
"""
import numpy as np
import pytest

from mlagents.torch_utils import torch
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import DecisionSteps

from mlagents_plugins.common.lean_policy import LeanPolicy
from tests.builders import behavior_spec

RTOL, ATOL = 1e-5, 1e-6


def decision_steps(spec, n, rng, masks=False):
    obs = [rng.normal(size=(n,) + tuple(o.shape)).astype(np.float32) for o in spec.observation_specs]
    action_mask = None
    if masks and spec.action_spec.discrete_size:
        # every branch keeps at least its first action; others blocked at random (True = blocked)
        action_mask = []
        for b in spec.action_spec.discrete_branches:
            m = rng.random((n, b)) < 0.4
            m[:, 0] = False
            action_mask.append(m)
    agent_ids = np.arange(10, 10 + n, dtype=np.int32)
    return DecisionSteps(obs, rng.normal(size=n).astype(np.float32), agent_ids, action_mask,
                         np.zeros(n, np.int32), np.zeros(n, np.float32))


def policies(spec, actor_kwargs, deterministic=False, normalize=False, return_log_probs=True):
    settings = NetworkSettings(hidden_units=16, num_layers=2, deterministic=deterministic, normalize=normalize)
    torch.manual_seed(3)
    ref = TorchPolicy(0, spec, settings, SimpleActor, dict(actor_kwargs))
    lean = LeanPolicy(0, spec, settings, SimpleActor, dict(actor_kwargs), return_log_probs=return_log_probs)
    lean.actor.load_state_dict(ref.actor.state_dict())
    with torch.no_grad():  # a state-independent sigma that is not zero, so a sigma mix-up shows
        for p in list(ref.actor.parameters()) + list(lean.actor.parameters()):
            if p.shape == (1, spec.action_spec.continuous_size) and p.requires_grad:
                p.copy_(torch.linspace(-0.7, 0.4, p.shape[1]).unsqueeze(0))
    return ref, lean


def both_act(ref, lean, steps, seed=11):
    torch.manual_seed(seed)
    a = ref.get_action(steps, worker_id=2)
    torch.manual_seed(seed)
    b = lean.get_action(steps, worker_id=2)
    return a, b


def close(x, y):
    np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=RTOL, atol=ATOL)


CASES = {
    "sac_continuous": (dict(obs_shapes=((5,), (3,)), cont=3), {"conditional_sigma": True, "tanh_squash": True}),
    "impala_continuous": (dict(obs_shapes=((4,),), cont=2), {"conditional_sigma": False, "tanh_squash": False}),
    "discrete": (dict(obs_shapes=((6,),), cont=0, branches=(3, 5)), {"conditional_sigma": True, "tanh_squash": True}),
    "hybrid": (dict(obs_shapes=((6,),), cont=2, branches=(4,)), {"conditional_sigma": True, "tanh_squash": True}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("deterministic", [False, True])
def test_same_outputs_as_torch_policy(case, deterministic):
    spec_kw, actor_kwargs = CASES[case]
    spec = behavior_spec(**spec_kw)
    ref, lean = policies(spec, actor_kwargs, deterministic=deterministic)
    rng = np.random.default_rng(5)
    for n in (1, 7):
        steps = decision_steps(spec, n, rng, masks=True)
        a, b = both_act(ref, lean, steps)
        assert b.agent_ids == a.agent_ids
        close(b.action.continuous, a.action.continuous)
        close(b.env_action.continuous, a.env_action.continuous)
        np.testing.assert_array_equal(b.action.discrete, a.action.discrete)
        np.testing.assert_array_equal(b.env_action.discrete, a.env_action.discrete)
        assert b.action.discrete.dtype == a.action.discrete.dtype == np.int32
        assert b.outputs["entropy"].shape == a.outputs["entropy"].shape == (n,)
        close(b.outputs["entropy"], a.outputs["entropy"])
        lp_a, lp_b = a.outputs["log_probs"], b.outputs["log_probs"]
        if spec.action_spec.continuous_size:
            if not (deterministic and actor_kwargs["tanh_squash"]):
                close(lp_b.continuous, lp_a.continuous)
            else:  # tanh(mean) (host/deterministic_tanh.py, installed by conftest): ML-Agents' log_prob inverts it
                # with atanh, which loses precision as tanh nears 1; ours evaluates at the mean itself
                ok = np.all(np.abs(b.action.continuous) < 0.99, axis=1)
                np.testing.assert_allclose(lp_b.continuous[ok], lp_a.continuous[ok], rtol=1e-4, atol=1e-3)
        if spec.action_spec.discrete_size:
            close(lp_b.discrete, lp_a.discrete)
        assert set(b.outputs) == {"action", "env_action", "log_probs", "entropy"}


def test_masked_actions_never_chosen_and_clip_only_without_tanh():
    spec = behavior_spec(obs_shapes=((6,),), cont=2, branches=(4, 3))
    _, lean = policies(spec, {"conditional_sigma": False, "tanh_squash": False})
    rng = np.random.default_rng(0)
    steps = decision_steps(spec, 64, rng, masks=True)
    torch.manual_seed(0)
    info = lean.get_action(steps)
    for k, branch_mask in enumerate(steps.action_mask):
        picked = info.action.discrete[:, k]
        assert not branch_mask[np.arange(64), picked].any()
    # not squashed: the environment gets clamp(a, -3, 3) / 3, the trajectory keeps a
    np.testing.assert_allclose(info.env_action.continuous, np.clip(info.action.continuous, -3, 3) / 3, rtol=1e-6)
    assert np.abs(info.action.continuous).max() > np.abs(info.env_action.continuous).max()


def test_without_log_probs_and_with_normalizer():
    spec = behavior_spec(obs_shapes=((5,),), cont=2)
    ref, lean = policies(spec, {"conditional_sigma": True, "tanh_squash": True}, normalize=True,
                         return_log_probs=False)
    rng = np.random.default_rng(1)
    data = torch.as_tensor(rng.normal(3.0, 2.0, size=(50, 5)).astype(np.float32))
    for policy in (ref, lean):  # the same normalizer statistics in both (lean reads the actor's own encoder)
        policy.actor.network_body.processors[0].update_normalization(data)
    steps = decision_steps(spec, 4, rng)
    a, b = both_act(ref, lean, steps)
    close(b.action.continuous, a.action.continuous)
    assert "log_probs" not in b.outputs
    close(b.outputs["entropy"], a.outputs["entropy"])


def test_no_agents_and_nan_check():
    spec = behavior_spec(obs_shapes=((3,),), cont=2)
    _, lean = policies(spec, {"conditional_sigma": True, "tanh_squash": True})
    empty = decision_steps(spec, 0, np.random.default_rng(0))
    assert lean.get_action(empty).outputs == {}
    steps = decision_steps(spec, 2, np.random.default_rng(0))
    steps.obs[0][0, 0] = np.nan
    with pytest.raises(RuntimeError, match="NaN"):
        lean.get_action(steps)


def test_no_autograd_graph_and_evaluate_is_the_same_path():
    spec = behavior_spec(obs_shapes=((3,),), cont=2)
    _, lean = policies(spec, {"conditional_sigma": True, "tanh_squash": True})
    steps = decision_steps(spec, 3, np.random.default_rng(2))
    torch.manual_seed(4)
    via_evaluate = lean.evaluate(steps, ["a", "b", "c"])
    torch.manual_seed(4)
    via_act = lean.act(steps)
    np.testing.assert_array_equal(via_evaluate["action"].continuous, via_act["action"].continuous)
    assert not torch.is_grad_enabled() or all(p.grad is None for p in lean.actor.parameters())


@pytest.mark.parametrize("patched", [True, False])
def test_deterministic_tanh_actions_follow_the_patch(patched, monkeypatch):
    """With ``deterministic_tanh`` (conftest installs it, as mlagents-learn's hook) a squashed policy's deterministic
    action is ``tanh(mean)`` in both policies; switched off, ML-Agents' unsquashed mean, in both."""
    from mlagents_plugins.host import deterministic_tanh, patches

    if not patched:
        monkeypatch.setenv("MLAGENTS_PLUGINS_UNSQUASHED_DETERMINISTIC", "1")
    try:
        assert patches.install("deterministic_tanh") is patched and deterministic_tanh.active() is patched
        spec = behavior_spec(obs_shapes=((6,),), cont=3)
        ref, lean = policies(spec, {"conditional_sigma": True, "tanh_squash": True}, deterministic=True)
        with torch.no_grad():  # a mean well outside [-1, 1] on some rows, where the two actions part
            for policy in (ref, lean):
                policy.actor.action_model._continuous_distribution.mu.weight.mul_(40.0)
        steps = decision_steps(spec, 9, np.random.default_rng(2), masks=True)
        a, b = both_act(ref, lean, steps)
        close(b.action.continuous, a.action.continuous)
        encoding, _ = ref.actor.network_body([torch.as_tensor(o) for o in steps.obs])
        mu = ref.actor.action_model._continuous_distribution.mu(encoding).detach().numpy()
        assert np.abs(mu).max() > 2.0
        close(b.action.continuous, np.tanh(mu) if patched else mu)
    finally:
        monkeypatch.delenv("MLAGENTS_PLUGINS_UNSQUASHED_DETERMINISTIC", raising=False)
        patches.install("deterministic_tanh")  # as the session had it
