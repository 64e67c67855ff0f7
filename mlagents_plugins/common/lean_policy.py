"""``LeanPolicy``: ML-Agents' ``TorchPolicy`` with a lean acting path for actors built like ``SimpleActor``.

Why: ``TorchPolicy.get_action`` runs once per decision step for all agents, but on its way it builds a global
agent id string and looks up a memory row for every agent (also without memories), wraps the sampled actions,
log-probabilities and entropies in distribution, ``AgentAction`` and ``ActionLogProbs`` objects (a
``TanhTransform`` for squashed Gaussians), and converts every tensor to numpy through ``ModelUtils``.  Here one
call per decision step does the same math on plain tensors under ``torch.inference_mode`` and returns the same
outputs (``ACTING_OUTPUTS``):

* ``action`` / ``env_action``: ``ActionTuple``s, the environment's clipped to ``[-1, 1]`` (``clamp(a, -3, 3) / 3``)
  when the Gaussian is not tanh-squashed, as ``ActionModel.clip_action`` does;
* ``log_probs``: a ``LogProbsTuple`` of the sampled actions, only when the trainer reads them
  (``return_log_probs``: impala's V-trace); the agent processor stores an empty one otherwise;
* ``entropy``: ``[N]``, the sum over the action model's parts (continuous: the mean over dimensions of the
  Gaussians' entropies; discrete: each branch's), which the agent processor reports as ``Policy/Entropy``.

The random numbers are drawn as ``ActionModel`` draws them (one ``randn_like`` of the means, then one
``multinomial`` per discrete branch), so with the same torch seed the same actions come out.  The actor's own
modules are called (observation encoders and normalizers, body, ``mu``/``log_sigma``/branch layers), so
checkpoints, ``state_dict`` keys and the ONNX export (``SimpleActor.forward``) are untouched.  A recurrent policy
(never made by this package's trainers) and an actor that is not a ``SimpleActor`` or has its own
``get_action_and_stats`` keep ``TorchPolicy``'s path.
"""
import math
from typing import Any, Dict, List, Optional

import numpy as np

from mlagents.torch_utils import torch
from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.torch_entities.distributions import EPSILON
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps

from mlagents_plugins.host import deterministic_tanh

#: keys of the outputs dict of one acting call (``log_probs`` only with ``return_log_probs``)
ACTING_OUTPUTS = ("action", "env_action", "log_probs", "entropy")

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
_LOG_2 = math.log(2.0)
_ENTROPY_CONST = 2 * math.pi * math.e


def gaussian_log_prob(u: torch.Tensor, mu: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``GaussianDistInstance.log_prob``: per-dimension log density of ``u`` (epsilons where ML-Agents has them)."""
    return -((u - mu) ** 2) / (2 * std ** 2 + EPSILON) - torch.log(std + EPSILON) - _LOG_SQRT_2PI


def tanh_log_abs_det_jacobian(u: torch.Tensor) -> torch.Tensor:
    """``TanhTransform.log_abs_det_jacobian(u, tanh(u))``: ``2 (log 2 - u - softplus(-2u))``."""
    return 2.0 * (_LOG_2 - u - torch.nn.functional.softplus(-2.0 * u))


def gaussian_entropy(std: torch.Tensor) -> torch.Tensor:
    """``GaussianDistInstance.entropy``: ``[N, 1]``, the mean over dimensions (as ML-Agents, "like TF")."""
    return torch.mean(0.5 * torch.log(_ENTROPY_CONST * std ** 2 + EPSILON), dim=1, keepdim=True)


class LeanPolicy(TorchPolicy):
    """``TorchPolicy`` whose acting is one batched call without per-agent Python (see the module docstring).

    :param return_log_probs: also return the sampled actions' log-probabilities (trainers that train on the
        behaviour policy's probabilities); off-policy SAC-style trainers leave it off.
    """

    def __init__(
        self,
        seed: int,
        behavior_spec: BehaviorSpec,
        network_settings,
        actor_cls: type,
        actor_kwargs: Dict[str, Any],
        return_log_probs: bool = False,
    ):
        super().__init__(seed, behavior_spec, network_settings, actor_cls, actor_kwargs)
        self.return_log_probs = return_log_probs
        # the lean path mirrors SimpleActor.get_action_and_stats; anything else acts through TorchPolicy
        self.lean = (
            not self.use_recurrent
            and isinstance(self.actor, SimpleActor)
            and type(self.actor).get_action_and_stats is SimpleActor.get_action_and_stats
        )
        spec = behavior_spec.action_spec
        self._branch_slices = []
        start = 0
        for size in spec.discrete_branches:
            self._branch_slices.append((start, start + int(size)))
            start += int(size)
        self._mask_width = start

    def _allow_mask(self, decision_requests: DecisionSteps, n: int, device: torch.device) -> Optional[torch.Tensor]:
        """``[N, sum(branches)]`` float 1 = allowed on ``device``, as ``TorchPolicy._extract_masks`` (None without
        branches)."""
        if not self._branch_slices:
            return None
        if decision_requests.action_mask is None:
            return torch.ones(n, self._mask_width, device=device)
        return torch.as_tensor(1 - np.concatenate(decision_requests.action_mask, axis=1), device=device)

    def _device(self) -> torch.device:
        """Where the actor's parameters are (``--torch-device``): the observations go there, the actions come back."""
        return next(self.actor.parameters()).device

    def act(self, decision_requests: DecisionSteps) -> Dict[str, Any]:
        """The outputs of one acting call for every agent of ``decision_requests`` (``ACTING_OUTPUTS``)."""
        n = len(decision_requests)
        actor = self.actor
        model = actor.action_model
        deterministic = model._deterministic
        with torch.inference_mode():
            device = self._device()
            inputs = [torch.as_tensor(o, device=device) for o in decision_requests.obs]
            encoding, _ = actor.network_body(inputs)
            entropies: List[torch.Tensor] = []
            cont = cont_env = cont_lp = disc = disc_lp = None
            gauss = model._continuous_distribution
            if gauss is not None:
                mu = gauss.mu(encoding)
                if gauss.conditional_sigma:
                    log_sigma = torch.clamp(gauss.log_sigma(encoding), min=-20, max=2)
                else:
                    log_sigma = mu * 0 + gauss.log_sigma
                std = torch.exp(log_sigma)
                if deterministic:  # the distribution's deterministic_sample: the mean, squashed or not
                    if gauss.tanh_squash and deterministic_tanh.active():
                        cont, u = torch.tanh(mu), mu  # host/deterministic_tanh.py
                    else:  # ML-Agents' own: the mean, unsquashed also with tanh
                        cont = mu
                        u = torch.atanh(mu) if gauss.tanh_squash else mu  # what its log_prob inverts
                else:
                    u = mu + torch.randn_like(mu) * std
                    cont = torch.tanh(u) if gauss.tanh_squash else u
                if self.return_log_probs:
                    cont_lp = gaussian_log_prob(u, mu, std)
                    if gauss.tanh_squash:
                        cont_lp = cont_lp - tanh_log_abs_det_jacobian(u)
                cont_env = torch.clamp(cont, -3, 3) / 3 if model.clip_action else cont
                entropies.append(gaussian_entropy(std))
            cat = model._discrete_distribution
            if cat is not None:
                mask = self._allow_mask(decision_requests, n, device)
                picks, lps = [], []
                for (lo, hi), branch in zip(self._branch_slices, cat.branches):
                    allow = mask[:, lo:hi]
                    logits = branch(encoding) * allow - 1e8 * (-1.0 * allow + 1.0)
                    probs = torch.softmax(logits, dim=-1)
                    pick = torch.argmax(probs, dim=1, keepdim=True) if deterministic else torch.multinomial(probs, 1)
                    picks.append(pick)
                    if self.return_log_probs:
                        lps.append(torch.log(torch.gather(probs, 1, pick) + EPSILON))
                    entropies.append(-torch.sum(probs * torch.log(probs + EPSILON), dim=-1, keepdim=True))
                disc = torch.cat(picks, dim=1)
                if self.return_log_probs:
                    disc_lp = torch.cat(lps, dim=1)
            entropy = torch.cat(entropies, dim=1).sum(dim=1) if len(entropies) > 1 else entropies[0][:, 0]
            out: Dict[str, Any] = {
                "action": ActionTuple(
                    continuous=None if cont is None else cont.cpu().numpy(),
                    discrete=None if disc is None else disc.cpu().numpy(),
                ),
                "env_action": ActionTuple(
                    continuous=None if cont_env is None else cont_env.cpu().numpy(),
                    discrete=None if disc is None else disc.cpu().numpy(),
                ),
                "entropy": entropy.cpu().numpy(),
            }
            if self.return_log_probs:
                out["log_probs"] = LogProbsTuple(
                    continuous=None if cont_lp is None else cont_lp.cpu().numpy(),
                    discrete=None if disc_lp is None else disc_lp.cpu().numpy(),
                )
        return out

    def evaluate(self, decision_requests: DecisionSteps, global_agent_ids: List[str]) -> Dict[str, Any]:
        if not self.lean:
            return super().evaluate(decision_requests, global_agent_ids)
        return self.act(decision_requests)

    def get_action(self, decision_requests: DecisionSteps, worker_id: int = 0) -> ActionInfo:
        if not self.lean:
            return super().get_action(decision_requests, worker_id)
        if len(decision_requests) == 0:
            return ActionInfo.empty()
        run_out = self.act(decision_requests)
        self.check_nan_action(run_out["action"])
        return ActionInfo(
            action=run_out["action"],
            env_action=run_out["env_action"],
            outputs=run_out,
            agent_ids=list(decision_requests.agent_id),
        )
