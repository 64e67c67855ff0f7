"""``TaacPolicy``: acting with per-agent TAAC state, and the per-step extras that reach the replay buffer.

Per-agent rollout state (tau^-, last switch, repeat count) lives in ML-Agents' per-agent memory
(``Policy.memory_dict``): ``retrieve_memories`` gives zeros for an agent that has none, and the agent
processor calls ``remove_memories`` when an episode ends, so every episode starts from ``tau^- = 0``
exactly as in a Unity build running the ONNX file (or from a random ``tau^-`` with
``randomize_first_state_tau``).

What acting saw at every step - ``tau^-``, the executed ``tau``, the switch and the repeat count - is
returned as named step extras (``offpolicy.extras``, declared by ``taac_step_extras``); the off-policy base
stores them as the replay columns of the same names, so training sees what acting saw, including an
episode's last step (whose ``memory_out`` never reaches the trajectory).
"""
from typing import Any, Dict, List

import numpy as np

from mlagents.torch_utils import torch
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps
from mlagents_envs.timers import timed

from mlagents_plugins.offpolicy.extras import StepExtras
from mlagents_plugins.replay.specs import FieldSpec
from mlagents_plugins.taac.networks import ActStep, TaacActor

# Step extras (= replay columns) recorded at every rollout step.
TAU_PREV = "tau_prev"  # [D] tau^- the step started from
TAU = "tau"  # [D] trajectory executed at this step
SWITCH = "switch"  # rollout switch b (took the proposal, forced switches included)
REPEATS = "repeats"  # steps the executed trajectory has run, this one included


def taac_step_extras(tau_size: int) -> StepExtras:
    return StepExtras(
        {
            TAU_PREV: FieldSpec((tau_size,), "float32"),
            TAU: FieldSpec((tau_size,), "float32"),
            SWITCH: FieldSpec((), "bool"),
            REPEATS: FieldSpec((), "float32"),
        }
    )


def step_extras_of(step: ActStep) -> Dict[str, np.ndarray]:
    return {
        TAU_PREV: step.tau_prev.detach().cpu().numpy(),
        TAU: step.tau.detach().cpu().numpy(),
        SWITCH: step.switch.detach().cpu().numpy().astype(bool),
        REPEATS: step.repeats.detach().cpu().numpy().astype(np.float32),
    }


class TaacPolicy(TorchPolicy):
    def __init__(
        self,
        seed: int,
        behavior_spec: BehaviorSpec,
        network_settings: NetworkSettings,
        actor_kwargs: Dict[str, Any],
        randomize_first_state_tau: bool = False,
    ):
        super().__init__(seed, behavior_spec, network_settings, TaacActor, actor_kwargs)
        self.actor: TaacActor
        self.m_size = self.actor.memory_size
        self._export_m_size = self.actor.memory_size
        self.randomize_first_state_tau = randomize_first_state_tau
        # Draws the random first tau^- of each episode; saved with the checkpoint (see TaacOptimizer).
        self.first_tau_rng = np.random.default_rng(seed)
        self.step_extras = taac_step_extras(self.actor.tau_size)

    @property
    def export_memory_size(self) -> int:
        return self.actor.memory_size

    def initial_memories(self, global_agent_ids: List[str]) -> np.ndarray:
        """Memories to act from: the stored ones, or zeros (random ``tau^-``) for agents starting an episode."""
        mem = self.retrieve_memories(global_agent_ids)
        if self.randomize_first_state_tau:
            for i, agent_id in enumerate(global_agent_ids):
                if agent_id not in self.memory_dict:
                    mem[i, : self.actor.tau_size] = self.first_tau_rng.uniform(-1.0, 1.0, self.actor.tau_size)
        return mem

    @timed
    def evaluate(self, decision_requests: DecisionSteps, global_agent_ids: List[str]) -> Dict[str, Any]:
        tensor_obs = [torch.as_tensor(np.asarray(o, np.float32)) for o in decision_requests.obs]
        memories = torch.as_tensor(self.initial_memories(global_agent_ids))
        with torch.no_grad():
            step = self.actor.act(tensor_obs, memories, deterministic=self.network_settings.deterministic)
        action = ActionTuple(continuous=step.action.cpu().numpy())
        return {
            "action": action,
            "env_action": action,
            **self.step_extras.policy_outputs(step_extras_of(step)),
            "memory_out": step.memory_out.cpu().numpy(),
            "p_switch": step.p_switch.cpu().numpy(),
        }
