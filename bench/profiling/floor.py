"""The floor of the profile: a trainer type ``floor`` that trains nothing and acts without a network.

Registered only inside the profiled ``mlagents-learn`` process (``bench.profiling.child``), never as an entry
point of the package.  It runs the same build, environment manager, trainer controller, agent processor and
trajectory queues as any trainer, so its CPU per environment step is what every trainer pays before doing
anything of its own:

* ``FloorPolicy.get_action``: uniform random actions in [-1, 1] (continuous) or over each branch (discrete), in
  the structure ML-Agents' ``TorchPolicy`` returns (``action``, ``log_probs``, ``entropy`` per agent), so the
  agent processor does the same work with them;
* ``FloorTrainer._process_trajectory``: only ML-Agents' ``RLTrainer`` bookkeeping (step count, summaries), the
  trajectory is dropped; no update, no model, nothing saved.
"""
from typing import Any, Dict, List

import attr
import numpy as np

from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.policy import Policy
from mlagents.trainers.settings import HyperparamSettings
from mlagents.trainers.torch_entities.action_log_probs import LogProbsTuple
from mlagents.trainers.trainer.rl_trainer import RLTrainer
from mlagents.trainers.trajectory import Trajectory
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps

TRAINER_TYPE = "floor"


@attr.s(auto_attribs=True)
class FloorSettings(HyperparamSettings):
    """The floor reads no hyperparameter: ``HyperparamSettings``' fields are accepted so any config loads."""


class FloorPolicy(Policy):
    """Random actions, no network (see the module docstring)."""

    def __init__(self, seed: int, behavior_spec: BehaviorSpec, network_settings) -> None:
        super().__init__(seed, behavior_spec, network_settings)
        self.rng = np.random.default_rng(seed)
        self.step = 0

    def get_action(self, decision_requests: DecisionSteps, worker_id: int = 0) -> ActionInfo:
        n = len(decision_requests)
        if n == 0:
            return ActionInfo.empty()
        spec = self.behavior_spec.action_spec
        continuous = self.rng.uniform(-1.0, 1.0, (n, spec.continuous_size)).astype(np.float32)
        discrete = np.stack([self.rng.integers(0, b, n) for b in spec.discrete_branches], axis=1).astype(np.int32) \
            if spec.discrete_size else np.zeros((n, 0), np.int32)
        action = ActionTuple(continuous=continuous, discrete=discrete)
        outputs: Dict[str, Any] = {
            "action": action,
            "env_action": action,
            "log_probs": LogProbsTuple(continuous=np.zeros_like(continuous),
                                       discrete=np.zeros(discrete.shape, np.float32)),
            "entropy": np.zeros(n, np.float32),
        }
        return ActionInfo(action=action, env_action=action, outputs=outputs, agent_ids=list(decision_requests.agent_id))

    def increment_step(self, n_steps: int) -> int:
        self.step += n_steps
        return self.step

    def get_current_step(self) -> int:
        return self.step

    def load_weights(self, values: List[np.ndarray]) -> None:
        if values:
            raise ValueError(f"the floor policy has no weights; got {len(values)} arrays")

    def init_load_weights(self) -> None:
        """Nothing to load: the floor policy has no weights."""

    def get_weights(self) -> List[np.ndarray]:
        return []


class FloorTrainer(RLTrainer):
    """Steps and summaries as ML-Agents counts them, nothing else (see the module docstring)."""

    def __init__(self, behavior_name: str, reward_buff_cap: int, trainer_settings, training: bool, load: bool,
                 seed: int, artifact_path: str) -> None:
        super().__init__(behavior_name, trainer_settings, training, load, artifact_path, reward_buff_cap)
        self.seed = seed
        self.policy: FloorPolicy = None  # type: ignore[assignment]

    @staticmethod
    def get_trainer_name() -> str:
        return TRAINER_TYPE

    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: BehaviorSpec) -> FloorPolicy:
        return FloorPolicy(self.seed, behavior_spec, self.trainer_settings.network_settings)

    def add_policy(self, parsed_behavior_id: BehaviorIdentifiers, policy: Policy) -> None:
        self.policy = policy
        self.policies[parsed_behavior_id.behavior_id] = policy

    def get_policy(self, name_behavior_id: str) -> Policy:
        return self.policy

    def create_optimizer(self):
        raise TypeError("the floor trains nothing: it has no optimizer (add_policy never asks for one)")

    def _process_trajectory(self, trajectory: Trajectory) -> None:
        """ML-Agents' step count and summaries; the trajectory itself is dropped."""
        super()._process_trajectory(trajectory)

    def _is_ready_update(self) -> bool:
        return False

    def _update_policy(self) -> bool:
        return False

    def save_model(self) -> None:
        """Nothing to save: the floor has no model."""


def register() -> None:
    """Make ``trainer_type: floor`` known to this process's ``mlagents-learn`` (after its own registration)."""
    from mlagents import plugins as mla_plugins

    mla_plugins.all_trainer_types[TRAINER_TYPE] = FloorTrainer
    mla_plugins.all_trainer_settings[TRAINER_TYPE] = FloorSettings
