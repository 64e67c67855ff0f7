"""``ReplayStore``: where an off-policy trainer's replay buffer lives and how it is saved and restored.

One per trainer (``OffPolicyTrainerBase.replay_store``), in the run's behavior folder (``artifact_path``):

* ``replay_storage: memory`` - the rows in the process's memory; ``save_replay_buffer: true`` writes them all to
  ``replay_buffer.mlreplay`` at every checkpoint and at exit (``persistence.save_replay``).
* ``replay_storage: disk`` - the rows in memory-mapped files of ``replay_buffer.mlreplay.rows-<id>/`` next to
  it; a checkpoint flushes them and writes only the small state ``replay_buffer.mlreplay``
  (``persistence.save_replay_state``).  So that a crash between two checkpoints still resumes exactly, the files
  keep the last checkpoint's rows until the next one: they hold up to ``checkpoint_interval + 2 * time_horizon``
  rows (at most ``buffer_size``) beyond ``buffer_size``, written as rows arrive.  Without
  ``save_replay_buffer`` there is no such margin, and the folder is removed at exit.

``open`` gives the trainer its buffer: on ``--resume`` with ``save_replay_buffer`` the saved one (a missing file
gives a warning and an empty buffer; a damaged or mismatching one stops the run, saying what is left untouched
and what the user can do); else one filled from ``init_replay_from``; else an empty one.
"""
import os
from typing import Optional, Tuple

from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import TrainerSettings
from mlagents_envs.logging_util import get_logger
from mlagents_envs.timers import hierarchical_timer

from mlagents_plugins.offpolicy.settings import OffPolicyBaseSettings
from mlagents_plugins.replay import persistence
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.replay.errors import ReplayFileError, resume_failure
from mlagents_plugins.replay.specs import ReplaySpec
from mlagents_plugins.replay.storage import DiskStorage

logger = get_logger(__name__)

REPLAY_FILENAME = "replay_buffer.mlreplay"
STORAGE_DISK = "disk"


class ReplayStore:
    """The replay buffer's storage and persistence for one trainer (see the module docstring)."""

    def __init__(self, artifact_path: str, trainer_settings: TrainerSettings, load: bool) -> None:
        self.artifact_path = artifact_path
        self.hyperparameters: OffPolicyBaseSettings = trainer_settings.hyperparameters
        self.load = load
        self._checkpoint_interval = trainer_settings.checkpoint_interval
        self._time_horizon = trainer_settings.time_horizon

    @property
    def path(self) -> str:
        return os.path.join(self.artifact_path, REPLAY_FILENAME)

    @property
    def on_disk(self) -> bool:
        return self.hyperparameters.replay_storage == STORAGE_DISK

    def spare_rows(self) -> int:
        """Physical rows a disk-backed buffer keeps beyond ``buffer_size`` so the last checkpoint's rows survive
        until the next checkpoint: rows between two checkpoints are at most ``checkpoint_interval`` plus one
        trajectory chunk (``time_horizon``), doubled for margin; none when nothing is saved."""
        if not (self.on_disk and self.hyperparameters.save_replay_buffer):
            return 0
        return min(self.hyperparameters.buffer_size, self._checkpoint_interval + 2 * self._time_horizon)

    def new_buffer(self, capacity: int, fields: ReplaySpec, prioritized: bool) -> ReplayBuffer:
        """An empty buffer in this store's storage (a new rows folder for disk)."""
        if not self.on_disk:
            return ReplayBuffer(capacity, fields, prioritized=prioritized)
        os.makedirs(self.artifact_path, exist_ok=True)
        storage = DiskStorage.create(self.artifact_path, REPLAY_FILENAME)
        spare = self.spare_rows()
        if self.hyperparameters.save_replay_buffer and self._checkpoint_interval + 2 * self._time_horizon > spare:
            logger.warning(
                f"replay_storage: disk keeps {spare} spare rows, fewer than checkpoint_interval + 2 x time_horizon "
                f"({self._checkpoint_interval} + 2 x {self._time_horizon}): if more rows come between two "
                "checkpoints, a crash before the next one leaves a replay buffer that --resume refuses (it says "
                "why). Lower checkpoint_interval to at most buffer_size to rule that out."
            )
        return ReplayBuffer(capacity, fields, prioritized=prioritized, storage=storage,
                            physical_rows=capacity + spare)

    # ------------------------------------------------------------------ opening
    def open(self, fields: ReplaySpec, prioritized: bool) -> Tuple[ReplayBuffer, Optional[dict]]:
        """The trainer's buffer and, when it is this run's saved one, the counters saved with it (else None)."""
        hp = self.hyperparameters
        if self.load and hp.save_replay_buffer:
            if os.path.exists(self.path):
                try:
                    replay, extra = self._load(self.path, fields, reopen=True)
                except ReplayFileError as err:
                    raise resume_failure(self.path, err) from err
                self._warn_if_few_spare_rows(replay)
                return replay, extra
            logger.warning(f"Resuming without a replay buffer: {self.path} does not exist; starting with an empty buffer.")
        if hp.init_replay_from is not None:
            path = self._init_replay_path(hp.init_replay_from)
            if not os.path.exists(path):
                raise TrainerConfigError(
                    f"hyperparameters.init_replay_from = {hp.init_replay_from!r}: replay file {path} does not exist."
                )
            replay, _ = self._load(path, fields, reopen=False)
            logger.info(f"Initialised replay buffer from {path}: {replay.size} rows.")
            if replay.prioritized != prioritized:
                raise TrainerConfigError(
                    f"the loaded replay buffer {'has' if replay.prioritized else 'has no'} priorities but "
                    f"prioritized_replay is {prioritized}"
                )
            return replay, None
        return self.new_buffer(hp.buffer_size, fields, prioritized), None

    def _load(self, path: str, fields: ReplaySpec, reopen: bool) -> Tuple[ReplayBuffer, dict]:
        made = []

        def make(capacity: int, layout: ReplaySpec, prioritized: bool) -> ReplayBuffer:
            made.append(self.new_buffer(capacity, layout, prioritized))
            return made[-1]

        try:
            return persistence.load_replay(path, expected_fields=fields, capacity=self.hyperparameters.buffer_size,
                                           new_buffer=make, reopen=reopen and self.on_disk)
        except BaseException:
            for buffer in made:  # rows folders made for this load; the files loaded from stay as they were
                if buffer.storage.persistent:
                    buffer.storage.remove()
            raise

    def _warn_if_few_spare_rows(self, replay: ReplayBuffer) -> None:
        spare = replay.physical_rows - replay.capacity
        if replay.storage.persistent and spare < self.spare_rows():
            logger.warning(
                f"The disk-backed replay buffer in {replay.storage.folder} keeps {spare} spare rows, fewer than this "
                f"run's settings ask for ({self.spare_rows()}): if more rows come between two checkpoints, a crash "
                "before the next one leaves a replay buffer that --resume refuses (it says why)."
            )

    def _init_replay_path(self, value: str) -> str:
        """``init_replay_from`` as a file path, or run id -> that run's file for this behavior."""
        if os.path.isfile(value) or os.sep in value or value.endswith(".mlreplay"):
            return value
        results_dir = os.path.dirname(os.path.dirname(os.path.abspath(self.artifact_path)))
        return os.path.join(results_dir, value, os.path.basename(self.artifact_path), REPLAY_FILENAME)

    # ------------------------------------------------------------------ saving
    def save(self, replay: ReplayBuffer, extra: dict) -> None:
        """Save ``replay`` with the trainer's counters ``extra``: every row (memory), or the flushed rows' state
        (disk)."""
        with hierarchical_timer("save_replay_buffer"):
            if replay.storage.persistent:
                persistence.save_replay_state(self.path, replay, extra)
            else:
                persistence.save_replay(self.path, replay, extra)
        logger.info(f"Saved replay buffer ({replay.size} rows) to {self.path}.")

    def discard_unsaved(self, replay: Optional[ReplayBuffer]) -> None:
        """At exit without ``save_replay_buffer``: a disk-backed buffer's files are of no further use."""
        if replay is not None and replay.storage.persistent and not self.hyperparameters.save_replay_buffer:
            replay.storage.remove()
