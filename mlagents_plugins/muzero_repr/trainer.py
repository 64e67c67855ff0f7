"""``muzero_repr`` trainer: the shared off-policy base (intake, cadence, replay persistence), replay sampling,
and two updates.

Every base update (``steps_per_update`` environment steps) makes one SAC update of the RL head; every
``model_update_interval`` base updates the learned model makes ``model_updates_per_interval`` MuZero updates
first, so the representation trains on its own cadence.  Both sample the same replay buffer here, with the run
seed's generators: start rows (uniform, or by the model's value-error priorities with importance weights: the SAC
head's ``sample_starts``, as fast_sac) from the base's numpy generator, DrQ shifts and random actions after an
episode's end from ``torch_rng``.  ``muzero_repr/batch.py`` turns the rows into typed batches; the optimizer's
``update_model`` and ``update_rl`` take them.  The model update's value errors become the priorities here.
"""
import os
from typing import Any, Dict, Optional, cast

import numpy as np

from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.model_saver.torch_model_saver import DEFAULT_CHECKPOINT_NAME as CHECKPOINT_NAME
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.common.lean_policy import LeanPolicy
from mlagents_plugins.muzero_repr import batch as muzero_batch
from mlagents_plugins.muzero_repr.actor import MuZeroActor
from mlagents_plugins.muzero_repr.losses import LATENT_SCALINGS
from mlagents_plugins.muzero_repr.optimizer import (
    STAT_PER_BETA,
    STAT_PRIORITY_MAX,
    STAT_PRIORITY_MEAN,
    MuZeroReprOptimizer,
    check_reward_signals,
)
from mlagents_plugins.muzero_repr.settings import NO_CHECKPOINT, MuZeroReprSettings
from mlagents_plugins.offpolicy.trainer import OffPolicyTrainerBase
from mlagents_plugins.sac import losses as sac_losses
from mlagents_plugins.sac.batch import SACBatch, annealed_per_beta, sample_starts

TRAINER_NAME = "muzero_repr"
#: buffers of the actor's body that record a run's resolved choices, read from a resumed checkpoint before the
#: policy is built (``LatentBody``)
SAVED_RECORDS = ("critic_gradient", "latent_scaling_code")


class MuZeroReprTrainer(OffPolicyTrainerBase):
    hyperparameters: MuZeroReprSettings
    optimizer: MuZeroReprOptimizer

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # At start-up (trainer creation), not later when the first agent connects and the optimizer is built.
        check_reward_signals([t.value for t in self.trainer_settings.reward_signals])

    @staticmethod
    def get_trainer_name() -> str:
        return TRAINER_NAME

    @property
    def prioritized_replay(self) -> bool:
        return bool(self.hyperparameters.prioritized_replay)

    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: BehaviorSpec) -> TorchPolicy:
        hp = self.hyperparameters
        specs, action_spec = behavior_spec.observation_specs, behavior_spec.action_spec
        # random_shift_pad resolved once for this behavior's observations (null: automatic); every batch uses it.
        self.shift_pad = hp.shift_pad(behavior_spec.observation_specs)
        # model_update_interval resolved the same way (null: automatic); update_once reads it.
        self.model_update_interval = hp.model_interval(behavior_spec.observation_specs)
        head_units, head_layers = hp.head_size(self.trainer_settings.network_settings)
        saved = self._saved_policy_records()
        return LeanPolicy(
            self.seed,
            behavior_spec,
            self.trainer_settings.network_settings,
            MuZeroActor,
            {
                "latent_size": hp.latent_size,
                "head_hidden_units": head_units,
                "head_num_layers": head_layers,
                "rl_gradient_to_repr": hp.repr_gets_rl_gradient(specs, action_spec, self._saved_critic_gradient(saved)),
                "latent_scaling": hp.latent_scaling_for(specs, self._saved_latent_scaling(saved)),
                "conditional_sigma": True,
                "tanh_squash": True,
                "target_repr": hp.needs_target_repr(specs, action_spec),
                "read_target": hp.head_reads_target(specs, action_spec),
            },
        )

    def _saved_policy_records(self) -> Any:
        """The run-choice buffers (``SAVED_RECORDS``) of the checkpoint this run starts from (``--resume``, or
        ``--initialize-from``), read in one load: ``{key: int value, or None when the checkpoint has none (written
        before the buffer existed)}``; ``NO_CHECKPOINT`` for a fresh run."""
        # The file ML-Agents' model saver loads: init_path (a full file path by then) wins over --resume.
        init = self.trainer_settings.init_path
        path = init if init else (os.path.join(self.artifact_path, CHECKPOINT_NAME) if self.load else None)
        if not path or not os.path.isfile(path):
            return NO_CHECKPOINT
        state = torch.load(path, map_location="cpu").get("Policy", {})
        values = {key: state.get(f"network_body.{key}") for key in SAVED_RECORDS}
        return {key: None if v is None else int(v) for key, v in values.items()}

    @staticmethod
    def _saved_critic_gradient(records: Any) -> Any:
        """What the checkpoint this run starts from trained with (``records``: ``_saved_policy_records()``): True /
        False from its ``critic_gradient`` buffer, None when it has none (written before 0.3.0), ``NO_CHECKPOINT``
        for a fresh run.  Read before the optimizer is built, because the head's Adam holds h's parameters only
        with the gradient on, and a checkpoint's optimizer state loads only into the same parameter groups."""
        if records is NO_CHECKPOINT:
            return NO_CHECKPOINT
        saved = records["critic_gradient"]
        return None if saved is None else bool(saved)

    @staticmethod
    def _saved_latent_scaling(records: Any) -> Any:
        """h's ``latent_scaling`` the checkpoint this run starts from trained with (its ``latent_scaling_code``
        buffer), None when it has none (written before 0.3.0: min_max), ``NO_CHECKPOINT`` for a fresh run."""
        if records is NO_CHECKPOINT:
            return NO_CHECKPOINT
        saved = records["latent_scaling_code"]
        if saved is None:
            return None
        if not 0 <= saved < len(LATENT_SCALINGS):
            raise TrainerConfigError(
                f"the checkpoint's network_body.latent_scaling_code = {saved} is not one this version knows "
                f"(0..{len(LATENT_SCALINGS) - 1}: {list(LATENT_SCALINGS)}); it was written by a newer mlagents-plugins"
            )
        return LATENT_SCALINGS[saved]

    def create_optimizer(self) -> MuZeroReprOptimizer:
        return MuZeroReprOptimizer(cast(TorchPolicy, self.policy), self.trainer_settings)

    def after_add_policy(self, policy) -> None:
        super().after_add_policy(policy)
        # The checkpoint is loaded now: a target copy of h it did not hold starts as a copy of the loaded h, and the
        # critic-gradient record says what this run does (a set rl_gradient_to_repr may differ from the loaded one).
        body = cast(MuZeroActor, cast(TorchPolicy, policy).actor).network_body
        body.sync_target_after_load()
        body.critic_gradient.fill_(int(body.rl_gradient_to_repr))
        body.latent_scaling_code.fill_(LATENT_SCALINGS.index(body.representation.scaling))

    def per_beta(self) -> float:
        """PER importance-sampling exponent now (``batch.annealed_per_beta``: ``per_beta`` -> 1 at ``max_steps``)."""
        return annealed_per_beta(self.hyperparameters.per_beta, self._step, self.trainer_settings.max_steps)

    # ------------------------------------------------------------------ sampling
    def _starts(self, rng: Optional[np.random.Generator], per_beta: Optional[float]):
        """``batch_size`` start rows and their importance weights (None without PER).  With
        ``prioritized_replay`` both updates draw from the same priorities (the model's value error), so the RL
        head and the model see one sampling distribution, each corrected back to uniform."""
        hp = self.hyperparameters
        beta = self.per_beta() if per_beta is None else per_beta
        return sample_starts(self.replay, self.rng if rng is None else rng, hp.batch_size, hp.prioritized_replay,
                             beta, self.optimizer.device)

    def sample_model_batch(
        self, rng: Optional[np.random.Generator] = None, per_beta: Optional[float] = None
    ) -> muzero_batch.ModelBatch:
        """A ``ModelBatch`` of unroll windows.  ``rng`` picks the start rows (default the trainer's generator),
        ``per_beta`` is the importance-sampling exponent (default ``per_beta()``, annealed to 1)."""
        hp = self.hyperparameters
        opt = self.optimizer
        starts, weights = self._starts(rng, per_beta)
        return muzero_batch.model_batch(
            self.replay, starts, weights, self.policy.behavior_spec,
            num_unroll_steps=hp.num_unroll_steps, td_steps=hp.td_steps, reward_scale=opt.reward_scale,
            with_future_obs=hp.train_repr_prediction, actions_after_end=hp.actions_after_end,
            shift_pad=self.shift_pad, torch_rng=self.torch_rng, device=opt.device,
        )

    def sample_rl_batch(self, rng: Optional[np.random.Generator] = None, per_beta: Optional[float] = None) -> SACBatch:
        """The SAC head's ``SACBatch`` of n-step windows (arguments as ``sample_model_batch``)."""
        hp = self.hyperparameters
        opt = self.optimizer
        starts, weights = self._starts(rng, per_beta)
        return muzero_batch.rl_batch(
            self.replay, starts, weights, self.policy.behavior_spec, n_step=hp.n_step,
            reward_scale=opt.reward_scale, gamma=opt.gamma, shift_pad=self.shift_pad,
            torch_rng=self.torch_rng, device=opt.device,
        )

    def write_priorities(self, starts: np.ndarray, value_err: torch.Tensor) -> Dict[str, float]:
        """PER priorities ``(|v_0 - z_0| + per_epsilon)^per_alpha`` of the model batch's start rows, and their
        stats."""
        hp = self.hyperparameters
        pr = sac_losses.per_priorities(value_err, hp.per_alpha, hp.per_epsilon).cpu().numpy()
        self.replay.update_priorities(starts, pr)
        return {STAT_PRIORITY_MEAN: float(pr.mean()), STAT_PRIORITY_MAX: float(pr.max())}

    def update_once(self) -> Dict[str, float]:
        hp = self.hyperparameters
        opt = self.optimizer
        stats: Dict[str, float] = {}
        if self.num_updates % self.model_update_interval == 0:
            for _ in range(hp.model_updates_per_interval):
                batch = self.sample_model_batch()
                model_stats, value_err = opt.update_model(batch)
                stats.update(model_stats)
                if hp.prioritized_replay:
                    stats.update(self.write_priorities(batch.starts, value_err))
                    stats[STAT_PER_BETA] = self.per_beta()
        stats.update(opt.update_rl(self.sample_rl_batch()))
        return stats
