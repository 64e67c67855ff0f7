"""``OffPolicyTrainerBase`` (on ``trainer_base.PluginTrainerBase``): trajectory intake into a ``ReplayBuffer``,
update cadence, replay persistence, stats, reward streams of replayed rows (``stream_rewards``).

Subclasses (fast_sac, taac, muzero_repr) provide:

* ``create_policy`` / ``create_optimizer`` (as for any ``RLTrainer``);
* ``replay_fields(behavior_spec)`` and ``trajectory_to_rows(trajectory, obs)`` - the replay layout
  and how one trajectory chunk becomes rows (default: the standard transition rows of ``offpolicy.rows``);
* ``update_once()`` - draw a minibatch from ``self.replay`` and take one gradient step, returning stats.

Optional hooks:

* ``step_extras(behavior_spec)`` - named per-step arrays the policy records while acting
  (``offpolicy.extras.StepExtras``); the base adds them to the replay layout and stores them with every row.
* ``observe_rows(rows, trajectory)`` - sees each chunk's complete rows (standard + extras) before they enter
  the replay, e.g. to report rollout statistics.

The base decides *when*: after ``buffer_init_steps`` environment steps (and once the buffer holds a batch)
it keeps ``num_updates == floor((step - buffer_init_steps) / steps_per_update)``; intrinsic reward providers
are updated on their own ``reward_signal_steps_per_update`` cadence with their own minibatch, and never when
only the extrinsic reward is present.  Steps before the buffer can serve a batch owe no updates, so the first
update does not come as a burst.  The counters are saved with the replay buffer, so ``--resume`` carries
the ratio on exactly; without a saved buffer they are re-derived from the step (like ML-Agents).

Replay storage and persistence (``replay_storage``, ``save_replay_buffer``, ``init_replay_from``) belong to
``self.replay_store`` (``offpolicy.replay_store.ReplayStore``): it makes the buffer (or loads it on ``--resume``)
and saves it at every checkpoint and at exit.  A corrupt or mismatching file stops the run with the loader's
error (saying also what the user can do), and that run then saves nothing on its way out, so the file stays
byte-identical, never replaced by an empty buffer.
"""
import abc
import base64
from collections import defaultdict
from typing import Callable, Dict, List, Optional

import numpy as np
from mlagents.torch_utils import torch
from mlagents.trainers.buffer import AgentBuffer, BufferKey
from mlagents.trainers.policy import Policy
from mlagents.trainers.policy.checkpoint_manager import ModelCheckpoint
from mlagents.trainers.torch_entities.components.reward_providers.extrinsic_reward_provider import (
    ExtrinsicRewardProvider,
)
from mlagents.trainers.trajectory import Trajectory
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.logging_util import get_logger
from mlagents_envs.timers import timed

from mlagents_plugins.common.input_checks import NonfiniteGate
from mlagents_plugins.common.trainer_base import PluginTrainerBase
from mlagents_plugins.host.atomic_checkpoint import CheckpointSaveError
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.offpolicy.extras import StepExtras
from mlagents_plugins.offpolicy.replay_store import ReplayStore
from mlagents_plugins.offpolicy.settings import OffPolicyBaseSettings
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.errors import ReplaySaveError
from mlagents_plugins.replay.specs import FieldSpec

logger = get_logger(__name__)

# Keys of the counters stored in the replay file's ``extra`` dict.
EXTRA_STEP = "step"
EXTRA_UPDATES = "num_updates"
EXTRA_RS_UPDATES = "num_reward_signal_updates"
EXTRA_TRAINER = "trainer_type"
EXTRA_RNG = "rng_state"
EXTRA_TORCH_RNG = "torch_rng_state"  # base64 of the torch generator's state bytes

STAT_UPDATES = "Replay/Updates"
STAT_DROPPED_NONFINITE = "Replay/Dropped Non-finite Chunks"
STAT_REPLAY_SIZE = "Replay/Size"


def _group_rewards_only(steps) -> AgentBuffer:
    """The chunk's group rewards as the one field ``RLTrainer._warn_if_group_reward`` reads."""
    buf = AgentBuffer()
    buf[BufferKey.GROUP_REWARD].set([e.group_reward for e in steps])
    return buf


class OffPolicyTrainerBase(PluginTrainerBase, abc.ABC):
    """Replay-buffer trainer skeleton; see the module docstring for what subclasses implement."""

    hyperparameters: OffPolicyBaseSettings

    def __init__(self, *args, **kwargs):  # the arguments of ``PluginTrainerBase``
        super().__init__(*args, **kwargs)
        self.rng = np.random.default_rng(self.seed)
        # Draws made on batches (DrQ shifts, muzero_repr's random actions after an episode's end) come from the run
        # seed too; its state is saved with the replay rows, so a resumed run draws what the uninterrupted one would.
        self.torch_rng = torch.Generator().manual_seed(int(self.seed))
        self.replay: Optional[ReplayBuffer] = None
        self.num_updates = 0
        self.num_reward_signal_updates = 0
        self.replay_store = ReplayStore(self.artifact_path, self.trainer_settings, self.load)
        # Set when loading the replay buffer (or checking it) failed in ``add_policy``: the run is about to
        # stop, and nothing it would save on the way out (models, replay) may replace the files it loaded.
        self.load_failure: Optional[str] = None
        # Set when a checkpoint or replay save failed (e.g. a full disk): the exit-time save is skipped.
        self.save_failure: Optional[str] = None
        # Trajectory chunks refused for NaN/inf observations or rewards (count, warning, stat).
        self.nonfinite = NonfiniteGate(self.brain_name, STAT_DROPPED_NONFINITE,
                                       "the replay buffer and the normalizer", logger)

    # ------------------------------------------------------------------ subclass interface
    def replay_fields(self, spec: BehaviorSpec) -> Dict[str, FieldSpec]:
        """Replay layout; default the standard transition row (``offpolicy.rows``)."""
        return offpolicy_rows.transition_fields(spec)

    def trajectory_to_rows(self, trajectory: Trajectory, obs: List[np.ndarray]) -> Dict[str, np.ndarray]:
        """Rows of one trajectory chunk (one replay segment; ``obs``: its stacked observations); default the
        standard transition rows."""
        return offpolicy_rows.trajectory_to_rows(self.policy.behavior_spec, trajectory, obs)

    def step_extras(self, spec: BehaviorSpec) -> Optional[StepExtras]:
        """Per-step extras this trainer's policy records (stored as replay columns), or None (default)."""
        return None

    def observe_rows(self, rows: Dict[str, np.ndarray], trajectory: Trajectory) -> None:
        """Called with each chunk's complete rows (standard + extras) before they enter the replay."""

    def replay_layout(self, spec: BehaviorSpec) -> Dict[str, FieldSpec]:
        """The replay buffer's fields: ``replay_fields`` plus the declared step extras."""
        fields = dict(self.replay_fields(spec))
        extras = self.step_extras(spec)
        if extras is not None:
            clash = sorted(set(fields) & set(extras.fields))
            if clash:
                raise ValueError(f"step extras {clash} have the names of replay fields of {type(self).__name__}")
            fields.update(extras.fields)
        return fields

    def _rows_of(self, trajectory: Trajectory, obs: List[np.ndarray]) -> Dict[str, np.ndarray]:
        rows = self.trajectory_to_rows(trajectory, obs)
        extras = self.step_extras(self.policy.behavior_spec)
        if extras is not None:
            rows.update(extras.read(trajectory))
        self.observe_rows(rows, trajectory)
        return rows

    @property
    def prioritized_replay(self) -> bool:
        """Whether the replay buffer keeps priorities (subclasses with PER override)."""
        return False

    @abc.abstractmethod
    def update_once(self) -> Dict[str, float]:
        """Sample from ``self.replay`` and take one gradient step; return stats to report (mean per summary)."""

    # ------------------------------------------------------------------ policy / buffer setup
    def after_add_policy(self, policy: Policy) -> None:
        # Without saved counters, assume the ratio was kept before (ML-Agents' behaviour on resume).
        self.num_updates = self._updates_due(self.hyperparameters.steps_per_update)
        self.num_reward_signal_updates = self._updates_due(self.hyperparameters.reward_signal_steps_per_update)
        try:
            self.replay, extra = self.replay_store.open(self.replay_layout(policy.behavior_spec), self.prioritized_replay)
        except Exception as err:
            # ML-Agents saves every trainer's model on its way out, also after this error; without this mark
            # the exit-time save would write the empty buffer over the file that failed to load.
            self.load_failure = str(err)
            raise
        if extra is not None:
            self._restore_counters(extra, self.replay_store.path)
            logger.info(
                f"Loaded replay buffer from {self.replay_store.path}: {self.replay.size} rows, write position "
                f"{self.replay.write_pos}, {self.num_updates} updates at step {self._step}."
            )

    @property
    def replay_path(self) -> str:
        return self.replay_store.path

    def _restore_counters(self, extra: dict, path: str) -> None:
        saved_step = int(extra.get(EXTRA_STEP, self._step))
        if saved_step != self._step:
            logger.warning(
                f"Replay buffer {path} was saved at step {saved_step} but the checkpoint is at step {self._step}; "
                "re-deriving the update counters from the checkpoint step."
            )
            return
        self.num_updates = int(extra.get(EXTRA_UPDATES, self.num_updates))
        self.num_reward_signal_updates = int(extra.get(EXTRA_RS_UPDATES, self.num_reward_signal_updates))
        if EXTRA_RNG in extra:
            self.rng.bit_generator.state = extra[EXTRA_RNG]
        if EXTRA_TORCH_RNG in extra:  # replay files of release 0.1.0 have none: the generator starts from the seed
            state = np.frombuffer(base64.b64decode(extra[EXTRA_TORCH_RNG]), dtype=np.uint8).copy()
            self.torch_rng.set_state(torch.from_numpy(state))

    def replay_extra(self) -> dict:
        """Counters saved next to the rows so a resumed run continues the exact update ratio."""
        updates, rs_updates = self.num_updates, self.num_reward_signal_updates
        if not self.should_still_train:
            # Steps of the chunk that crossed max_steps came after training stopped: they owe no updates, so a
            # run resumed with a larger max_steps does not start with a burst for them.
            updates = max(updates, self._updates_due(self.hyperparameters.steps_per_update))
            rs_updates = max(rs_updates, self._updates_due(self.hyperparameters.reward_signal_steps_per_update))
        return {
            EXTRA_STEP: int(self._step),
            EXTRA_UPDATES: int(updates),
            EXTRA_RS_UPDATES: int(rs_updates),
            EXTRA_TRAINER: self.get_trainer_name(),
            EXTRA_RNG: self.rng.bit_generator.state,
            EXTRA_TORCH_RNG: base64.b64encode(self.torch_rng.get_state().numpy().tobytes()).decode("ascii"),
        }

    def _checkpoint(self) -> ModelCheckpoint:
        try:
            ckpt = super()._checkpoint()
            if self.hyperparameters.save_replay_buffer and self.replay is not None and self.load_failure is None:
                self.replay_store.save(self.replay, self.replay_extra())
        except (CheckpointSaveError, ReplaySaveError) as err:
            self.save_failure = str(err)
            raise
        return ckpt

    def save_model(self) -> None:
        """ML-Agents' exit-time save (which calls ``_checkpoint``, so the buffer is written too), skipped
        after a failed load: the files on disk are the user's last good state and the evidence; and after a
        failed save: the same cause (a full disk) would fail again and bury the first error under a second."""
        if self.load_failure is not None:
            logger.warning(
                f"Not saving {self.brain_name}: its replay buffer failed to load, so the files in "
                f"{self.artifact_path} are left exactly as they were."
            )
            return
        if self.save_failure is not None:
            logger.warning(
                f"Not saving {self.brain_name} on exit: a save failed during the run (see the error); the last "
                f"complete checkpoint and replay buffer in {self.artifact_path} are unchanged."
            )
            return
        super().save_model()
        self.replay_store.discard_unsaved(self.replay)

    # ------------------------------------------------------------------ intake
    def _process_trajectory(self, trajectory: Trajectory) -> None:
        super()._process_trajectory(trajectory)
        obs = offpolicy_rows.stacked_observations(trajectory)
        if self.nonfinite.refuses(trajectory, self._stats_reporter, obs):
            # A NaN in the replay or the normalizer would reach every later update and every checkpoint.
            return
        agent_id = trajectory.agent_id
        steps = trajectory.steps
        if not self._has_warned_group_rewards and any(e.group_reward for e in steps):
            self._warn_if_group_reward(_group_rewards_only(steps))
        if self.is_training:
            self.policy.actor.update_normalization(offpolicy_rows.observation_buffer(obs))
        rewards = np.asarray([e.reward for e in steps])
        self.collected_rewards["environment"][agent_id] += float(np.sum(rewards))
        if self._signals_need_buffer:  # intrinsic providers (or groupmate rewards) read an AgentBuffer of the chunk
            buf = trajectory.to_agentbuffer()
            for name, signal in self.optimizer.reward_signals.items():
                self.collected_rewards[name][agent_id] += float(np.sum(signal.evaluate(buf) * signal.strength))
        else:  # the extrinsic provider's value without the buffer: individual + group rewards, float32
            extrinsic = rewards.astype(np.float32) + np.asarray([e.group_reward for e in steps], dtype=np.float32)
            for name, signal in self.optimizer.reward_signals.items():
                self.collected_rewards[name][agent_id] += float(np.sum(extrinsic * signal.strength))
        if self.is_training:  # also the chunk that crosses max_steps, so a resumed run has every row
            self.replay.add(self._rows_of(trajectory, obs))
        if trajectory.done_reached:
            self._update_end_episode_stats(agent_id, self.optimizer)

    # ------------------------------------------------------------------ cadence
    def _updates_due(self, steps_per_update: float) -> int:
        return max(0, int((self._step - self.hyperparameters.buffer_init_steps) / steps_per_update))

    def _is_ready_update(self) -> bool:
        return (
            self.replay is not None
            and self._step >= self.hyperparameters.buffer_init_steps
            and self.replay.size >= self.hyperparameters.batch_size
        )

    @property
    def _signals_need_buffer(self) -> bool:
        """Whether a reward provider's ``evaluate`` needs the chunk's ``AgentBuffer``: every one but the plain
        extrinsic reward (individual + group reward), whose value intake computes from the steps."""
        return any(not isinstance(s, ExtrinsicRewardProvider) or s.add_groupmate_rewards
                   for s in self.optimizer.reward_signals.values())

    @property
    def has_intrinsic_signals(self) -> bool:
        return any(not isinstance(s, ExtrinsicRewardProvider) for s in self.optimizer.reward_signals.values())

    @timed
    def _update_policy(self) -> bool:
        self.cumulative_returns_since_policy_update.clear()
        stats: Dict[str, List[float]] = defaultdict(list)
        due = self._updates_due(self.hyperparameters.steps_per_update)
        updated = False
        while self.num_updates < due:
            for k, v in self.update_once().items():
                stats[k].append(v)
            self.num_updates += 1
            updated = True
            if self.optimizer.bc_module:
                for k, v in self.optimizer.bc_module.update().items():
                    stats[k].append(v)
        if self.has_intrinsic_signals:
            due_rs = self._updates_due(self.hyperparameters.reward_signal_steps_per_update)
            while self.num_reward_signal_updates < due_rs:
                for k, v in self.update_reward_signals_once().items():
                    stats[k].append(v)
                self.num_reward_signal_updates += 1
        else:
            self.num_reward_signal_updates = self._updates_due(self.hyperparameters.reward_signal_steps_per_update)
        for k, v in stats.items():
            self._stats_reporter.add_stat(k, float(np.mean(v)))
        if updated:
            self._stats_reporter.set_stat(STAT_UPDATES, float(self.num_updates))
            self._stats_reporter.set_stat(STAT_REPLAY_SIZE, float(self.replay.size))
        return updated

    def advance(self) -> None:
        super().advance()
        # Steps collected before the buffer could serve a batch owe no updates (no burst once it can).
        if self.replay is not None and self.replay.size < self.hyperparameters.batch_size:
            self.num_updates = max(self.num_updates, self._updates_due(self.hyperparameters.steps_per_update))
            self.num_reward_signal_updates = max(
                self.num_reward_signal_updates, self._updates_due(self.hyperparameters.reward_signal_steps_per_update)
            )

    def stream_rewards(self, reward: np.ndarray, rows: Callable[[], Dict[str, np.ndarray]]) -> np.ndarray:
        """``[*reward.shape, S]`` float32 rewards of each of the optimizer's ``stream_names``, scaled by the
        provider's strength, for replayed rows whose stored reward is ``reward`` (any shape): the extrinsic
        stream is the stored reward; any other provider is evaluated on ``rows()`` (the same rows, flat, as
        ``ReplayBuffer.gather`` returns them; called at most once, only if such a provider exists)."""
        agent_buffer = None
        out: List[np.ndarray] = []
        for name in self.optimizer.stream_names:
            signal = self.optimizer.reward_signals[name]
            if isinstance(signal, ExtrinsicRewardProvider):
                r = reward
            else:
                if agent_buffer is None:
                    agent_buffer = offpolicy_rows.rows_to_agent_buffer(self.policy.behavior_spec, rows())
                r = np.asarray(signal.evaluate(agent_buffer), np.float32).reshape(reward.shape)
            out.append(np.asarray(r, np.float32) * np.float32(signal.strength))
        return np.stack(out, axis=-1)

    def update_reward_signals_once(self) -> Dict[str, float]:
        """One update of every intrinsic reward provider on its own uniformly sampled minibatch."""
        idx = self.replay.sample_indices(self.hyperparameters.batch_size, self.rng)
        batch = offpolicy_rows.rows_to_agent_buffer(self.policy.behavior_spec, self.replay.gather(idx))
        out: Dict[str, float] = {}
        for signal in self.optimizer.reward_signals.values():
            if not isinstance(signal, ExtrinsicRewardProvider):
                out.update(signal.update(batch))
        return out
