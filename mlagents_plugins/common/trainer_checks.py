"""Start-up checks shared by every trainer here (one message, one place)."""
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import TrainerSettings


def reject_recurrent_policy(behavior_name: str, trainer_settings: TrainerSettings) -> None:
    """Refuse ``network_settings.memory`` at start-up rather than train a recurrent policy wrongly.

    None of our trainers stores the initial memories a recurrent policy needs for training on sequences.
    """
    memory = trainer_settings.network_settings.memory
    if memory is not None:
        raise TrainerConfigError(
            f"network_settings.memory is set for behavior '{behavior_name}' ({memory}), but trainer_type "
            f"'{trainer_settings.trainer_type}' does not support recurrent policies; allowed: memory: null "
            "(remove the 'memory' section), or use ppo/sac for recurrent policies."
        )
