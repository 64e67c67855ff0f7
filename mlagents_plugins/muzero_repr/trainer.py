"""``muzero_repr`` trainer: the shared off-policy base (intake, cadence, replay persistence) plus two updates.

Every base update (``steps_per_update`` environment steps) makes one SAC update of the RL head; every
``model_update_interval`` base updates the learned model makes ``model_updates_per_interval`` MuZero updates
first, so the representation trains on its own cadence.  Both sample the same replay buffer.
"""
from typing import Dict, cast

from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.muzero_repr.actor import MuZeroActor
from mlagents_plugins.muzero_repr.optimizer import MuZeroReprOptimizer, check_reward_signals
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.offpolicy.trainer import OffPolicyTrainerBase

TRAINER_NAME = "muzero_repr"


class MuZeroReprTrainer(OffPolicyTrainerBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # At start-up (trainer creation), not later when the first agent connects and the optimizer is built.
        check_reward_signals([t.value for t in self.trainer_settings.reward_signals])

    @staticmethod
    def get_trainer_name() -> str:
        return TRAINER_NAME

    @property
    def muzero_settings(self) -> MuZeroReprSettings:
        return cast(MuZeroReprSettings, self.trainer_settings.hyperparameters)

    @property
    def prioritized_replay(self) -> bool:
        return bool(self.muzero_settings.prioritized_replay)

    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: BehaviorSpec) -> TorchPolicy:
        hp = self.muzero_settings
        return TorchPolicy(
            self.seed,
            behavior_spec,
            self.trainer_settings.network_settings,
            MuZeroActor,
            {
                "latent_size": hp.latent_size,
                "head_hidden_units": hp.head_hidden_units,
                "head_num_layers": hp.head_num_layers,
                "rl_gradient_to_repr": hp.rl_gradient_to_repr,
                "conditional_sigma": True,
                "tanh_squash": True,
            },
        )

    def create_optimizer(self) -> MuZeroReprOptimizer:
        return MuZeroReprOptimizer(cast(TorchPolicy, self.policy), self.trainer_settings)

    def per_beta(self) -> float:
        """PER importance-sampling exponent, annealed linearly from ``per_beta`` to 1 at ``max_steps``."""
        frac = min(1.0, self._step / max(1, self.trainer_settings.max_steps))
        b0 = self.muzero_settings.per_beta
        return b0 + (1.0 - b0) * frac

    def update_once(self) -> Dict[str, float]:
        hp = self.muzero_settings
        opt = cast(MuZeroReprOptimizer, self.optimizer)
        stats: Dict[str, float] = {}
        if self.num_updates % hp.model_update_interval == 0:
            for _ in range(hp.model_updates_per_interval):
                stats.update(opt.update_model(self.replay, self.rng, self.per_beta()))
        stats.update(opt.update_rl(self.replay, self.rng, self.per_beta()))
        return stats
