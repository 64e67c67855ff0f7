"""mlagents' tanh-squashed Gaussian gives its unsquashed mean as the deterministic action.

``TanhGaussianDistInstance`` (built-in sac's continuous policy, and fast_sac's and muzero_repr's, which keep
ML-Agents' actor) samples ``tanh(u)``, ``u ~ N(mean, std)``, but inherits ``GaussianDistInstance.deterministic_sample``,
which returns ``mean`` itself.  So the exported ``deterministic_continuous_actions`` (what Unity runs with
deterministic inference, and what ``bench gym`` evaluates) and ``--deterministic`` acting take ``mean``, unbounded,
which the scene then clips to [-1, 1], instead of ``tanh(mean)``, the action the policy's own squashing gives its
most likely pre-squash value (SB3's and taac's deterministic action).  The two differ wherever ``|mean|`` is not
small (``tanh(0.8) = 0.66``; a mean of 2.5 and of 40 both clip to 1): a trained policy's deterministic actions
are harder than the ones it learned with.  The replacement returns ``tanh(mean)``; the sampled actions, the
log-probabilities and training are unchanged.  (bench/results/fast-sac-norm-bins-2026-12-01: HalfCheetah-v5
checkpoints evaluated both ways.)
"""
from mlagents.torch_utils import torch
from mlagents.trainers.torch_entities.distributions import TanhGaussianDistInstance

#: ``deterministic_sample`` as ML-Agents has it (in 1.1.0 inherited from ``GaussianDistInstance``: the mean); switching
#: the patch off sets it on the class itself, the same function
ORIGINAL = TanhGaussianDistInstance.deterministic_sample


def deterministic_sample(self) -> torch.Tensor:
    """``tanh(mean)``: the squashed image of the Gaussian's mean."""
    return torch.tanh(self.mean)


def active() -> bool:
    """Whether deterministic actions of tanh-squashed policies are squashed in this process (the patch installed)."""
    return TanhGaussianDistInstance.__dict__.get("deterministic_sample") is deterministic_sample


def install_deterministic_tanh() -> bool:
    """Idempotently replace ``TanhGaussianDistInstance.deterministic_sample``; returns whether it is active."""
    from mlagents_plugins.host import patches

    if not patches.allowed("deterministic_tanh"):
        if active():
            TanhGaussianDistInstance.deterministic_sample = ORIGINAL
        return False
    if not active():
        TanhGaussianDistInstance.deterministic_sample = deterministic_sample
    return True
