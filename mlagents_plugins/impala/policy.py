"""A ``LeanPolicy`` that knows its version and remembers which version chose each action.

Why: the policy-lag statistic (updates between acting and learning) needs the version at acting time,
but ML-Agents' AgentProcessor copies only fixed fields (action, log-probs, memory) of the policy's output
into the trajectory.  The policy therefore keeps, per agent, a short log of (observation fingerprint,
version) written in ``get_action``; the trainer reads it back for each trajectory step, matching by the
observation the step was acted on, so dropped or reset steps cannot shift the alignment.
``ActionInfo.outputs["policy_version"]`` carries the same number for anyone reading run_out.
"""
import threading
from collections import OrderedDict, deque
from typing import Deque, List, Sequence, Tuple

import numpy as np
from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.behavior_id_utils import get_global_agent_id
from mlagents_envs.base_env import DecisionSteps

from mlagents_plugins.common.lean_policy import LeanPolicy
from mlagents_plugins.impala.pieces import UNKNOWN_VERSION

POLICY_VERSION_KEY = "policy_version"


def obs_fingerprint(obs: Sequence[np.ndarray]) -> int:
    return hash(tuple(np.ascontiguousarray(o, dtype=np.float32).tobytes() for o in obs))


class ImpalaPolicy(LeanPolicy):
    """``LeanPolicy`` (acting with the behaviour log-probabilities V-trace needs) + ``version`` (optimizer updates
    applied so far) + the acting-time version log."""

    max_log_per_agent = 4096  # entries kept per agent; older ones are forgotten
    max_agents = 65536  # agents remembered (least recently acting dropped first)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, return_log_probs=True, **kwargs)
        self.version = 0
        self._log: "OrderedDict[str, Deque[Tuple[int, int]]]" = OrderedDict()
        self._log_lock = threading.Lock()  # get_action (env thread) vs trainer thread (threaded: true)

    def get_action(self, decision_requests: DecisionSteps, worker_id: int = 0) -> ActionInfo:
        version = self.version
        info = super().get_action(decision_requests, worker_id)
        n = len(decision_requests)
        if n == 0:
            return info
        info.outputs[POLICY_VERSION_KEY] = np.full(n, version, dtype=np.int64)
        with self._log_lock:
            for idx, agent_id in enumerate(decision_requests.agent_id):
                gid = get_global_agent_id(worker_id, int(agent_id))
                log = self._log.get(gid)
                if log is None:
                    log = self._log[gid] = deque(maxlen=self.max_log_per_agent)
                else:
                    self._log.move_to_end(gid)
                log.append((obs_fingerprint([o[idx] for o in decision_requests.obs]), version))
            while len(self._log) > self.max_agents:
                self._log.popitem(last=False)
        return info

    def acting_versions(self, global_agent_id: str, step_obs: List[Sequence[np.ndarray]]) -> np.ndarray:
        """Versions that chose the actions of consecutive steps of one agent (consumes the log)."""
        out = np.full(len(step_obs), UNKNOWN_VERSION, dtype=np.int64)
        with self._log_lock:
            log = self._log.get(global_agent_id)
            if log is None:
                return out
            for k, obs in enumerate(step_obs):
                fp = obs_fingerprint(obs)
                match = next((i for i, (f, _) in enumerate(log) if f == fp), None)
                if match is None:
                    continue
                for _ in range(match):
                    log.popleft()
                out[k] = log.popleft()[1]
        return out
