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
