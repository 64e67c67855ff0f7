"""``FastSACTrainer`` (``trainer_type: fast_sac``): sampling and batch assembly on top of the off-policy base.

Intake, cadence and replay persistence live in ``OffPolicyTrainerBase``; the algorithm lives in
``FastSACOptimizer`` and the SAC head (``mlagents_plugins/sac/``).  This file turns sampled replay rows into a
``SACBatch`` (``sac.batch``): n-step windows (``sequence_indices`` gives the next ``n - 1`` rows and whether they
belong to the same segment), rewards per stream (extrinsic from the stored reward; intrinsic providers evaluated
on the sampled rows), PER weights, and DrQ's random shifts of camera frames (``random_shift_pad``,
``common/image_augment.py``): the observations and the bootstrap observations of a batch get independent shifts,
drawn from the run seed.  With ``network_settings.memory`` the rows also hold the memory each step was acted from
and an update samples sequences instead (``fast_sac/recurrent.py``, ``offpolicy/sequences.py``).
"""
from typing import Dict, List, cast

import numpy as np
from mlagents.torch_utils import default_device
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents.trainers.trajectory import Trajectory
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.logging_util import get_logger

from mlagents_plugins.common.bf16_matmul import use_bf16_linears_
from mlagents_plugins.common.fast_kernels import fuse_swish_
from mlagents_plugins.common.image_augment import augment, image_sizes
from mlagents_plugins.common.lean_policy import LeanPolicy
from mlagents_plugins.fast_sac import recurrent
from mlagents_plugins.fast_sac.optimizer import FastSACOptimizer
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.offpolicy import sequences
from mlagents_plugins.offpolicy.trainer import OffPolicyTrainerBase
from mlagents_plugins.replay.specs import FieldSpec
from mlagents_plugins.sac import losses
from mlagents_plugins.sac.batch import (
    SACBatch,
    annealed_per_beta,
    sample_starts,
    window_batch,
)

TRAINER_NAME = "fast_sac"
STAT_PER_BETA = "Replay/PER Beta"
STAT_SHIFT_PAD = "Policy/Random Shift Pad"  # DrQ shift in pixels (0 = off); behaviors with camera observations

logger = get_logger(__name__)


class FastSACTrainer(OffPolicyTrainerBase):
    hyperparameters: FastSACSettings
    optimizer: FastSACOptimizer

    def __init__(self, *args, **kwargs):  # the arguments of ``OffPolicyTrainerBase``
        super().__init__(*args, **kwargs)
        self.shift_pad = 0
        self.has_images = False

    @staticmethod
    def get_trainer_name() -> str:
        return TRAINER_NAME

    # ------------------------------------------------------------------ recurrent policies (fast_sac/recurrent.py)
    @classmethod
    def check_settings(cls, behavior_name: str, trainer_settings: TrainerSettings) -> None:
        """``network_settings.memory`` is trained on sequences (``recurrent.check_memory_settings``)."""
        recurrent.check_memory_settings(behavior_name, trainer_settings)

    @property
    def memory(self):
        """``network_settings.memory`` (None: no recurrent policy)."""
        return self.trainer_settings.network_settings.memory

    def replay_fields(self, spec: BehaviorSpec) -> Dict[str, FieldSpec]:
        fields = super().replay_fields(spec)
        if self.memory is not None:
            fields.update(sequences.memory_fields(self.memory.memory_size))
        return fields

    def trajectory_to_rows(self, trajectory: Trajectory, obs: List[np.ndarray]) -> Dict[str, np.ndarray]:
        rows = super().trajectory_to_rows(trajectory, obs)
        if self.memory is not None:
            rows.update(sequences.memory_rows(trajectory, self.memory.memory_size))
        return rows

    @property
    def prioritized_replay(self) -> bool:
        return self.hyperparameters.prioritized_replay

    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: BehaviorSpec) -> TorchPolicy:
        # random_shift_pad resolved once for this behavior's observations (null: automatic); every batch uses it.
        self.has_images = bool(image_sizes(behavior_spec.observation_specs))
        self.shift_pad = self.hyperparameters.shift_pad(behavior_spec.observation_specs)
        if self.has_images:
            logger.info(f"{self.brain_name}: DrQ random shifts of camera frames by up to {self.shift_pad} pixels "
                        f"(random_shift_pad: {self.hyperparameters.random_shift_pad}; null = automatic, 0 = off)")
        policy = LeanPolicy(
            self.seed,
            behavior_spec,
            self.trainer_settings.network_settings,
            SimpleActor,
            {"conditional_sigma": True, "tanh_squash": True},
        )
        self.hyperparameters.network_recipe().apply_(policy.actor)  # before the optimizer holds its parameters
        fuse_swish_(policy.actor)
        if self.hyperparameters.update_bf16(default_device()):
            # Its hidden products in bf16 inside the optimizer's update only (common/bf16_matmul.py): acting and
            # the ONNX export stay fp32.
            switched = use_bf16_linears_(policy.actor)
            logger.info(f"{self.brain_name}: update_precision {self.hyperparameters.update_precision}: the update "
                        f"multiplies bf16 in the hidden layers ({switched} of the actor's, and the critics')")
        return policy

    def create_optimizer(self) -> TorchOptimizer:
        if self.memory is not None:
            return recurrent.RecurrentFastSACOptimizer(cast(TorchPolicy, self.policy), self.trainer_settings)
        return FastSACOptimizer(cast(TorchPolicy, self.policy), self.trainer_settings)

    # ------------------------------------------------------------------ sampling
    def per_beta(self) -> float:
        """PER importance-sampling exponent now (``batch.annealed_per_beta``: ``per_beta`` -> 1 at ``max_steps``)."""
        return annealed_per_beta(self.hyperparameters.per_beta, self._step, self.trainer_settings.max_steps)

    def sample_sequences(self) -> recurrent.RecurrentBatch:
        """Windows of ``burn_in + sequence_length`` rows (``sequences.sequence_windows``) as a ``RecurrentBatch``;
        DrQ's shifts are drawn per camera frame of the window."""
        hp = self.hyperparameters
        count = recurrent.num_sequences(hp.batch_size, self.memory.sequence_length)
        rows = self.replay.sample_indices(count, self.rng)
        windows = sequences.sequence_windows(self.replay, rows, self.memory.sequence_length, hp.burn_in)
        batch = recurrent.sequence_batch(
            self.replay, windows, hp.resolved_n_step(), self.policy.behavior_spec, self._stream_rewards,
            self.optimizer.gammas, self.optimizer.use_done, self.optimizer.device,
        )
        if self.shift_pad <= 0:
            return batch
        return batch._replace(z=augment(batch.z, self.shift_pad, self.torch_rng))

    def sample_batch(self) -> SACBatch:
        hp = self.hyperparameters
        dev = self.optimizer.device
        beta = self.per_beta() if hp.prioritized_replay else 0.0
        start, weights = sample_starts(self.replay, self.rng, hp.batch_size, hp.prioritized_replay, beta, dev)
        self._last_indices = start
        batch = window_batch(
            self.replay, start, weights, hp.resolved_n_step(), self.policy.behavior_spec, self._stream_rewards,
            self.optimizer.gammas, self.optimizer.use_done, dev,
        )
        if self.shift_pad <= 0:
            return batch
        return batch._replace(s_tm1=augment(batch.s_tm1, self.shift_pad, self.torch_rng),
                              s_t=augment(batch.s_t, self.shift_pad, self.torch_rng))

    def _stream_rewards(self, idx: np.ndarray, window: Dict[str, np.ndarray]) -> np.ndarray:
        """[B, N, S] rewards per stream; intrinsic providers evaluated on the window's rows (one AgentBuffer)."""
        return self.stream_rewards(window[offpolicy_rows.REWARD], lambda: self.replay.gather(idx.reshape(-1)))

    def update_once(self) -> Dict[str, float]:
        if self.memory is not None:
            stats, _ = self.optimizer.update(self.sample_sequences())
            if self.has_images:
                stats[STAT_SHIFT_PAD] = float(self.shift_pad)
            return stats
        batch = self.sample_batch()
        stats, td_abs = self.optimizer.update(batch)
        if self.hyperparameters.prioritized_replay:
            hp = self.hyperparameters
            pri = losses.per_priorities(td_abs.detach().double(), hp.per_alpha, hp.per_epsilon)
            self.replay.update_priorities(self._last_indices, pri.cpu().numpy())
            stats[STAT_PER_BETA] = self.per_beta()
        if self.has_images:
            stats[STAT_SHIFT_PAD] = float(self.shift_pad)
        return stats
