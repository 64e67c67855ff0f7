"""``TaacPolicy``: acting with per-agent TAAC state, and the step record that reaches the replay buffer.

Per-agent rollout state (tau^-, last switch, repeat count) lives in ML-Agents' per-agent memory
(``Policy.memory_dict``): ``retrieve_memories`` gives zeros for an agent that has none, and the agent
processor calls ``remove_memories`` when an episode ends, so every episode starts from ``tau^- = 0``
exactly as in a Unity build running the ONNX file (or from a random ``tau^-`` with
``randomize_first_state_tau``).

Why a step record in the log-probs slot: ML-Agents 1.1.0's ``AgentExperience`` has no free per-step field,
and the trainer must see what acting saw at *every* row, including an episode's last one (whose
``memory_out`` never reaches the trajectory).  TAAC needs no action log-probabilities, so the continuous
log-probs slot carries ``[tau^- (D) | tau (D) | switch (1) | repeats (1)]`` instead (see ``StepRecord``).
"""
from typing import Any, Dict, List, NamedTuple

import numpy as np

from mlagents.torch_utils import torch
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps
from mlagents_envs.timers import timed

from mlagents_plugins.taac.networks import ActStep, TaacActor


class StepRecord(NamedTuple):
    """Rollout facts of one agent step, as numpy rows ``[N, ...]``."""

    tau_prev: np.ndarray
    tau: np.ndarray
    switch: np.ndarray  # bool
    repeats: np.ndarray

    @staticmethod
    def width(tau_size: int) -> int:
        return 2 * tau_size + 2

    @staticmethod
    def pack(step: ActStep) -> np.ndarray:
        rec = torch.cat(
            [step.tau_prev, step.tau, step.switch.float().unsqueeze(-1), step.repeats.float().unsqueeze(-1)], dim=-1
        )
        return rec.detach().cpu().numpy().astype(np.float32)

    @staticmethod
    def unpack(rec: np.ndarray, tau_size: int) -> "StepRecord":
        rec = np.asarray(rec, dtype=np.float32)
        if rec.ndim != 2 or rec.shape[1] != StepRecord.width(tau_size):
            raise ValueError(
                f"TAAC step record must be [N, {StepRecord.width(tau_size)}] for trajectory size {tau_size}, "
                f"got shape {rec.shape}: was this trajectory produced by a taac policy of the same settings?"
            )
        d = tau_size
        return StepRecord(rec[:, :d], rec[:, d : 2 * d], rec[:, 2 * d] > 0.5, rec[:, 2 * d + 1])


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
        self._rng = np.random.default_rng(seed)

    @property
    def export_memory_size(self) -> int:
        return self.actor.memory_size

    def initial_memories(self, global_agent_ids: List[str]) -> np.ndarray:
        """Memories to act from: the stored ones, or zeros (random ``tau^-``) for agents starting an episode."""
        mem = self.retrieve_memories(global_agent_ids)
        if self.randomize_first_state_tau:
            for i, agent_id in enumerate(global_agent_ids):
                if agent_id not in self.memory_dict:
                    mem[i, : self.actor.tau_size] = self._rng.uniform(-1.0, 1.0, self.actor.tau_size)
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
            "log_probs": LogProbsTuple(continuous=StepRecord.pack(step)),
            "memory_out": step.memory_out.cpu().numpy(),
            "p_switch": step.p_switch.cpu().numpy(),
        }
