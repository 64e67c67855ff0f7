"""``PluginTrainerBase``: the ``RLTrainer`` skeleton every trainer of this package shares.

Both trainer families extend it: ``impala.trainer.ImpalaTrainer`` (queue of trajectory pieces) and
``offpolicy.trainer.OffPolicyTrainerBase`` (replay buffer; fast_sac, taac, muzero_repr).  It holds what was
written four times before, with ML-Agents' ``RLTrainer`` semantics unchanged:

* ``__init__`` with the argument order mlagents' trainer factory passes (``behavior_name, reward_buff_cap,
  trainer_settings, training, load, seed, artifact_path``); ``check_settings`` runs first, so a refused
  configuration stops before ``RLTrainer`` is built;
* ``add_policy``: one policy per trainer (a second team gets ML-Agents' self-play warning), the optimizer
  built from it, reward-stream totals, the model saver (register policy and optimizer, initialise or load),
  the step restored from the policy; ``after_add_policy`` is the subclass's hook after that;
* ``get_policy`` and ``advance`` (which binds the trainer's thread to ``--torch-device`` first).
"""
from collections import defaultdict
from typing import Any

from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.policy import Policy
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.trainer.rl_trainer import RLTrainer
from mlagents_envs.logging_util import get_logger

from mlagents_plugins.common.trainer_checks import reject_recurrent_policy
from mlagents_plugins.host.trainer_thread_device import bind_thread_to_default_device

logger = get_logger(__name__)


class PluginTrainerBase(RLTrainer):
    """One policy, one optimizer, ML-Agents' model saver; see the module docstring."""

    hyperparameters: Any  # ``trainer_settings.hyperparameters``; subclasses annotate their settings type

    def __init__(
        self,
        behavior_name: str,
        reward_buff_cap: int,
        trainer_settings: TrainerSettings,
        training: bool,
        load: bool,
        seed: int,
        artifact_path: str,
    ):
        self.check_settings(behavior_name, trainer_settings)
        super().__init__(behavior_name, trainer_settings, training, load, artifact_path, reward_buff_cap)
        self.hyperparameters = trainer_settings.hyperparameters
        self.seed = seed
        self.policy: Policy = None  # type: ignore[assignment]
        self.optimizer = None  # built in ``add_policy``

    @classmethod
    def check_settings(cls, behavior_name: str, trainer_settings: TrainerSettings) -> None:
        """Refuse settings this trainer cannot run (raise ``TrainerConfigError``); default: recurrent policies."""
        reject_recurrent_policy(behavior_name, trainer_settings)

    def add_policy(self, parsed_behavior_id: BehaviorIdentifiers, policy: Policy) -> None:
        if self.policy:
            logger.warning(
                f"Your environment contains multiple teams, but trainer_type '{self.get_trainer_name()}' does not "
                "support adversarial games. Enable self-play to train adversarial games."
            )
        self.policy = policy
        self.policies[parsed_behavior_id.behavior_id] = policy
        self.optimizer = self.create_optimizer()
        for name in self.optimizer.reward_signals.keys():
            self.collected_rewards[name] = defaultdict(lambda: 0)
        self.model_saver.register(self.policy)
        self.model_saver.register(self.optimizer)
        self.model_saver.initialize_or_load()
        self._step = policy.get_current_step()
        self.after_add_policy(policy)

    def after_add_policy(self, policy: Policy) -> None:
        """Called at the end of ``add_policy`` (policy, optimizer and step in place); default nothing."""

    def get_policy(self, name_behavior_id: str) -> Policy:
        return self.policy

    def advance(self) -> None:
        bind_thread_to_default_device()  # threaded: true runs this in the trainer's own thread; no-op on CPU
        super().advance()
