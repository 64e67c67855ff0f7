"""IMPALA trainer (on ``trainer_base.PluginTrainerBase``): intake of trajectories, cutting into pieces, batching
and update cadence.

The learning itself lives in ``TorchImpalaOptimizer``.  Two cadences (``update_style``):

* ``epochs`` (default): built-in ppo's.  Once never-used pieces holding at least ``buffer_size`` steps wait,
  the learner takes them as one round and makes ``max_reuse`` passes over the round's steps, each pass in
  shuffled minibatches of ``batch_size`` steps (whole ``batch_size`` minibatches only, as ppo).  V-trace
  needs whole pieces, so each pass starts by computing every step's value target and advantage with the
  current networks; the minibatch gradient steps then use those targets (``TorchImpalaOptimizer.pass_targets``).
* ``stream``: whenever never-used pieces holding at least ``batch_size`` steps wait, the learner takes the
  oldest of them (``batch_size`` steps' worth) for one gradient step, followed by ``max_reuse - 1`` steps on
  random batches of pieces used fewer than ``max_reuse`` times; V-trace runs on each batch.

Data are never discarded for being off-policy: V-trace corrects for the lag between the policy that acted
(possibly many updates old with ``threaded: true`` and many environment copies) and the one learning.
"""
from collections import defaultdict
from typing import Any, Dict, List, Type, Union

import numpy as np
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.buffer import BufferKey, RewardSignalUtil
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.settings import RewardSignalType, TrainerSettings
from mlagents.trainers.torch_entities.networks import SharedActorCritic, SimpleActor
from mlagents.trainers.trajectory import ObsUtil, Trajectory
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.logging_util import get_logger

from mlagents_plugins.common.fast_kernels import fuse_swish_
from mlagents_plugins.common.input_checks import NonfiniteGate
from mlagents_plugins.common.trainer_base import PluginTrainerBase
from mlagents_plugins.impala import recurrent
from mlagents_plugins.impala.optimizer import PassTargets, TorchImpalaOptimizer
from mlagents_plugins.impala.pieces import (
    UNKNOWN_VERSION,
    PieceQueue,
    cut_trajectory,
    make_batch,
    merge_sources,
)
from mlagents_plugins.impala.policy import ImpalaPolicy
from mlagents_plugins.impala.settings import ImpalaSettings

logger = get_logger(__name__)

TRAINER_NAME = "impala"

# Stats keys written by the trainer.
STAT_POLICY_LAG = "IMPALA/Policy Lag"  # optimizer updates between acting and learning, mean over a batch
STAT_PIECES_DROPPED = "IMPALA/Pieces Dropped"  # pieces discarded unused because the queue was full
STAT_QUEUE_SIZE = "IMPALA/Queue Size"  # pieces waiting (fresh + reusable) after the updates
STAT_ROUND_STOPPED = "IMPALA/Round Stopped By KL"  # epochs: fraction of rounds ended early by kl_stop
STAT_ROUND_STEPS = "IMPALA/Gradient Steps Per Round"  # epochs: gradient steps made in a round
STAT_VERSION_UNMATCHED = "IMPALA/Unmatched Acting Version"  # fraction of steps whose acting version is unknown
STAT_DROPPED_NONFINITE = "IMPALA/Dropped Non-finite Chunks"  # trajectory chunks refused for NaN/inf (a count)


class ImpalaTrainer(PluginTrainerBase):
    hyperparameters: ImpalaSettings
    policy: ImpalaPolicy
    optimizer: TorchImpalaOptimizer

    def __init__(self, *args, **kwargs):  # the arguments of ``PluginTrainerBase``
        super().__init__(*args, **kwargs)
        hp = self.hyperparameters
        if hp.update_style == "epochs":
            # A round holds buffer_size steps and ends with a whole piece, so the queue may briefly hold more;
            # pieces are not reused across rounds (the passes reuse them).  Under lag (threaded, many copies)
            # what waits beyond two rounds is dropped, oldest first.
            self.piece_queue = PieceQueue(2 * hp.buffer_size, 1, self.seed)
        else:
            self.piece_queue = PieceQueue(hp.buffer_size, hp.max_reuse, self.seed)
        self._shuffle_rng = np.random.default_rng(self.seed)  # minibatch order of the epochs style
        # Learned reward signals (curiosity, RND, GAIL) train on the same batches as the policy.
        self._learned_reward_signals = any(
            key != RewardSignalType.EXTRINSIC for key in self.trainer_settings.reward_signals
        )
        self._reported_dropped = 0
        # Trajectory chunks refused for NaN/inf observations or rewards (count, warning, stat).
        self.nonfinite = NonfiniteGate(self.brain_name, STAT_DROPPED_NONFINITE,
                                       "the learner's pieces and the normalizers", logger)
        # Recurrent policies with a separate critic: each agent's critic memory after its last chunk (zeros at an
        # episode's start), carried into its next chunk as built-in ppo does.
        self._critic_memory: Dict[str, np.ndarray] = {}
        memory = self.trainer_settings.network_settings.memory
        # Recurrent policies: steps per learner sequence (network_settings.memory.sequence_length, at most a piece).
        self._sequence_length = None if memory is None else recurrent.effective_sequence_length(
            memory.sequence_length, hp.unroll_length)

    # ---- intake -------------------------------------------------------------------------------
    def _process_trajectory(self, trajectory: Trajectory) -> None:
        super()._process_trajectory(trajectory)
        if self.nonfinite.refuses(trajectory, self._stats_reporter):
            # Kept out of the normalizers and the pieces, so no NaN reaches an update or a checkpoint.
            return
        agent_id = trajectory.agent_id
        buffer = trajectory.to_agentbuffer()
        self._warn_if_group_reward(buffer)
        if self.is_training:
            self.policy.actor.update_normalization(buffer)
            if not self.hyperparameters.shared_critic:
                self.optimizer.critic.update_normalization(buffer)

        self.collected_rewards["environment"][agent_id] += np.sum(buffer[BufferKey.ENVIRONMENT_REWARDS])
        for name, reward_signal in self.optimizer.reward_signals.items():
            reward = reward_signal.evaluate(buffer) * reward_signal.strength
            buffer[RewardSignalUtil.rewards_key(name)].extend(reward)
            self.collected_rewards[name][agent_id] += np.sum(reward)

        if self.should_still_train:
            critic_memories = self._critic_memories(buffer, agent_id, trajectory.done_reached)
            versions = self.policy.acting_versions(agent_id, [step.obs for step in trajectory.steps])
            self.piece_queue.add(
                cut_trajectory(
                    buffer,
                    num_obs=len(self.policy.behavior_spec.observation_specs),
                    terminal=trajectory.done_reached and not trajectory.interrupted,
                    stream_names=list(self.optimizer.reward_signals.keys()),
                    acting_version=versions,
                    unroll_length=self.hyperparameters.unroll_length,
                    keep_source=self._learned_reward_signals,
                    critic_memories=critic_memories,
                    sequence_length=self._sequence_length,
                )
            )
        if trajectory.done_reached:
            self._update_end_episode_stats(agent_id, self.optimizer)

    @classmethod
    def check_settings(cls, behavior_name: str, trainer_settings: TrainerSettings) -> None:
        """``network_settings.memory`` is trained on sequences of ``sequence_length`` steps within each unroll
        (``impala/recurrent.py``); a ``sequence_length`` below 1 is refused there, and ML-Agents refuses an odd
        ``memory_size`` itself."""
        recurrent.check_memory_settings(behavior_name, trainer_settings)

    def _critic_memories(self, buffer, agent_id: str, episode_ended: bool):
        """The separate critic's memory at each sequence start of this chunk, in order (None without memory or with a
        shared critic, whose memory is the policy's)."""
        if not self.policy.use_recurrent or self.hyperparameters.shared_critic:
            return None
        n = buffer.num_experiences
        starts = [t for piece in recurrent.sequence_starts(n, self.hyperparameters.unroll_length,
                                                           self._sequence_length) for t in piece]
        obs = [np.asarray(buffer[ObsUtil.get_name_at(i)].get_batch(), dtype=np.float32)
               for i in range(len(self.policy.behavior_spec.observation_specs))]
        start = self._critic_memory.get(agent_id, np.zeros(self.policy.m_size, np.float32))
        memories, end = recurrent.sequence_start_memories(self.optimizer.critic, obs, starts, start)
        if episode_ended:
            self._critic_memory.pop(agent_id, None)
        else:
            self._critic_memory[agent_id] = end
        return memories

    # ---- cadence ------------------------------------------------------------------------------
    def _is_ready_update(self) -> bool:
        if self.hyperparameters.update_style == "epochs":
            return self.piece_queue.fresh_steps >= self.hyperparameters.buffer_size
        return self.piece_queue.fresh_steps >= self.hyperparameters.batch_size

    def _update_policy(self) -> bool:
        hp = self.hyperparameters
        self.cumulative_returns_since_policy_update.clear()
        update_stats: Dict[str, List[float]] = defaultdict(list)
        if hp.update_style == "epochs":
            self._epochs_on(self.piece_queue.take_fresh(hp.buffer_size), update_stats)
        else:
            while self.piece_queue.fresh_steps >= hp.batch_size:
                self._learn_on(self.piece_queue.take_fresh(hp.batch_size), update_stats)
                for _ in range(hp.max_reuse - 1):
                    reused = self.piece_queue.sample_reusable(hp.batch_size)
                    if reused:
                        self._learn_on(reused, update_stats)
        for stat, values in update_stats.items():
            self._stats_reporter.add_stat(stat, float(np.mean(values)))
        if self.optimizer.bc_module:
            for stat, val in self.optimizer.bc_module.update().items():
                self._stats_reporter.add_stat(stat, val)
        self._stats_reporter.add_stat(STAT_PIECES_DROPPED, float(self.piece_queue.dropped - self._reported_dropped))
        self._reported_dropped = self.piece_queue.dropped
        self._stats_reporter.add_stat(STAT_QUEUE_SIZE, float(len(self.piece_queue)))
        return True

    def _record_lag(self, batch, update_stats: Dict[str, List[float]]) -> None:
        known = batch.acting_version != UNKNOWN_VERSION
        update_stats[STAT_VERSION_UNMATCHED].append(1.0 - float(np.mean(known)))
        if np.any(known):
            update_stats[STAT_POLICY_LAG].append(float(np.mean(self.policy.version - batch.acting_version[known])))

    def _epochs_on(self, pieces, update_stats: Dict[str, List[float]]) -> None:
        """One round of the epochs style: ``max_reuse`` passes over the steps of ``pieces``."""
        hp = self.hyperparameters
        batch = make_batch(pieces, hp.unroll_length)
        self._record_lag(batch, update_stats)
        if batch.sequences is not None:
            self._epochs_on_pieces(pieces, batch, update_stats)
            return
        n = int(batch.real_rows.shape[0])
        # Learned reward signals update on minibatches of the round's steps too, as under ppo.
        sources = merge_sources(pieces) if self._learned_reward_signals else None
        steps, stopped = 0, False
        for _ in range(hp.max_reuse):
            targets = self.optimizer.pass_targets(batch)
            order = torch.as_tensor(self._shuffle_rng.permutation(n), device=batch.real_rows.device)
            if sources is not None:
                sources.shuffle(sequence_length=1)
            for start in range(0, n - hp.batch_size + 1, hp.batch_size):
                rows = order[start:start + hp.batch_size]
                stats = self.optimizer.update_rows(batch, rows, targets)
                stopped = stats is None  # kl_stop: the learner moved too far from the acting policy
                if stopped:
                    break
                for stat, value in stats.items():
                    update_stats[stat].append(value)
                self.policy.version += 1
                steps += 1
                if sources is not None:
                    minibatch = sources.make_mini_batch(start, start + hp.batch_size)
                    for stat, value in self.optimizer.update_reward_signals(minibatch).items():
                        update_stats[stat].append(value)
            if stopped:
                break
        update_stats[STAT_ROUND_STOPPED].append(float(stopped))
        update_stats[STAT_ROUND_STEPS].append(float(steps))

    def _epochs_on_pieces(self, pieces, batch, update_stats: Dict[str, List[float]]) -> None:
        """The epochs style for a recurrent policy: each pass shuffles whole pieces (a sequence is replayed from its
        stored memory, so its steps stay together) into minibatches of at least ``batch_size`` steps; a last group
        short of that is left out of the pass, as ppo leaves out a partial minibatch."""
        hp = self.hyperparameters
        t_len = hp.unroll_length
        # index in the round's real-row order of step t of piece b: position_of[b * T + t]
        position_of = np.zeros(len(pieces) * t_len, dtype=np.int64)
        position_of[batch.sequences.rows.cpu().numpy()] = np.arange(int(batch.real_rows.shape[0]))
        steps, stopped = 0, False
        for _ in range(hp.max_reuse):
            targets = self.optimizer.pass_targets(batch)
            group: List[int] = []
            taken = 0
            for b in self._shuffle_rng.permutation(len(pieces)):
                group.append(int(b))
                taken += pieces[b].length
                if taken < hp.batch_size:
                    continue
                sub = make_batch([pieces[k] for k in group], t_len)
                local = sub.sequences.rows.cpu().numpy()
                index = position_of[np.asarray(group)[local // t_len] * t_len + local % t_len]
                rows = torch.as_tensor(index, device=batch.real_rows.device)
                sub_targets = PassTargets({name: v[rows] for name, v in targets.vs.items()}, targets.advantage[rows])
                stats = self.optimizer.update_pieces(sub, sub_targets)
                stopped = stats is None
                if stopped:
                    break
                for stat, value in stats.items():
                    update_stats[stat].append(value)
                if self._learned_reward_signals:
                    for stat, value in self.optimizer.update_reward_signals(
                            merge_sources([pieces[k] for k in group])).items():
                        update_stats[stat].append(value)
                self.policy.version += 1
                steps += 1
                group, taken = [], 0
            if stopped:
                break
        update_stats[STAT_ROUND_STOPPED].append(float(stopped))
        update_stats[STAT_ROUND_STEPS].append(float(steps))

    def _learn_on(self, pieces, update_stats: Dict[str, List[float]]) -> None:
        batch = make_batch(pieces, self.hyperparameters.unroll_length)
        self._record_lag(batch, update_stats)
        for stat, value in self.optimizer.update(batch).items():
            update_stats[stat].append(value)
        if self._learned_reward_signals:
            for stat, value in self.optimizer.update_reward_signals(merge_sources(pieces)).items():
                update_stats[stat].append(value)
        self.policy.version += 1

    # ---- policy / optimizer -------------------------------------------------------------------
    def create_optimizer(self) -> TorchOptimizer:
        return TorchImpalaOptimizer(self.policy, self.trainer_settings)

    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: BehaviorSpec) -> ImpalaPolicy:
        actor_cls: Union[Type[SimpleActor], Type[SharedActorCritic]] = SimpleActor
        actor_kwargs: Dict[str, Any] = {"conditional_sigma": False, "tanh_squash": False}
        if self.hyperparameters.shared_critic:
            actor_cls = SharedActorCritic
            actor_kwargs["stream_names"] = [key.value for key in self.trainer_settings.reward_signals]
        policy = ImpalaPolicy(self.seed, behavior_spec, self.trainer_settings.network_settings, actor_cls, actor_kwargs)
        fuse_swish_(policy.actor)  # same function, one kernel; parameters and ONNX nodes unchanged
        return policy

    @staticmethod
    def get_trainer_name() -> str:
        return TRAINER_NAME
