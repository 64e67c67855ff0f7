"""Errors raised when a replay file cannot be used."""
from mlagents.trainers.exception import UnityTrainerException


class ReplayFileError(UnityTrainerException):
    """A replay file is missing, truncated, corrupt or of an unknown format/version.

    The message always names the path and what is wrong; loading never falls back to an empty buffer.
    """


class ReplayFileNotFoundError(ReplayFileError, FileNotFoundError):
    """The replay file does not exist (also a ``FileNotFoundError``, so resume code can start fresh)."""


class ReplaySpecMismatchError(ReplayFileError):
    """The file's field specs differ from the ones the trainer expects (each differing field is listed)."""


class ReplaySaveError(UnityTrainerException):
    """The replay buffer could not be written (e.g. a full disk); the previous file at that path is unchanged."""


def resume_failure(path: str, err: ReplayFileError) -> ReplayFileError:
    """``err`` (same class, so callers can still tell a mismatch from a damaged file) with what ``--resume``
    left untouched and the user's ways on from there added to its message."""
    return type(err)(
        f"{err}\n"
        f"--resume stopped: the replay buffer in {path} could not be loaded. Nothing of this run was saved, "
        "so that file (and the checkpoint) are unchanged. To go on, either move the file aside (then --resume "
        "starts with an empty replay buffer, optionally filled from hyperparameters.init_replay_from: <another "
        "replay file or run id>), or start a new run id. `mlagents-plugins-replay inspect <file> --verify` "
        "shows what the file holds."
    )
