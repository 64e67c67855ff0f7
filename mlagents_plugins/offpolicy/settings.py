"""Hyperparameters shared by every trainer built on ``OffPolicyTrainerBase`` (fast_sac, taac, muzero_repr).

Each field states its meaning beside it; validators raise ``TrainerConfigError`` naming the field, the value
given and what is allowed, so a bad YAML stops ``mlagents-learn`` at start-up with a readable message.
"""
from typing import Any, ClassVar, Optional

import attr
from mlagents.trainers.settings import OffPolicyHyperparamSettings

from mlagents_plugins.common import config_compat as compat
from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.validators import (
    fail,
    non_negative_int,
    one_of,
    optional_bool,
    positive_float,
    positive_int,
    strict_bool,
)


#: values of ``replay_storage``
REPLAY_STORAGES = ("memory", "disk")


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class OffPolicyBaseSettings(OffPolicyHyperparamSettings):
    # Transitions per gradient step.
    batch_size: int = attr.ib(default=256, validator=positive_int)
    # Replay capacity in transitions (rows); the oldest row is overwritten one at a time once full.
    buffer_size: int = attr.ib(default=100000, validator=positive_int)
    # Environment steps collected (with the initial policy) before the first update.
    buffer_init_steps: int = attr.ib(default=1000, validator=non_negative_int)
    # Environment steps (summed over agents) per gradient update; 0.25 = four updates per step.
    steps_per_update: float = attr.ib(default=1.0, validator=positive_float)
    # Save the replay buffer with every checkpoint and at exit, and restore it on --resume.
    save_replay_buffer: Any = attr.ib(default=False, validator=strict_bool)  # bool (see strict_bool)
    # Where the replay rows live: "memory" (the process's RAM) or "disk" (memory-mapped files in the run's behavior
    # folder, cached by the operating system: for a buffer larger than the RAM the trainer may use).  Sampling,
    # saving and --resume behave the same; with save_replay_buffer a checkpoint writes only the small state next
    # to the files, which then keep the last checkpoint's rows until the next one (see docs/replay.md).
    replay_storage: str = attr.ib(default="memory", validator=one_of(*REPLAY_STORAGES))
    # Environment steps per update of the intrinsic reward providers (GAIL, curiosity, RND).
    reward_signal_steps_per_update: float = attr.ib(validator=positive_float)
    # Fill the replay buffer from another run's saved buffer before training: a replay file path or a run
    # id (then ``results/<run id>/<behavior>/<replay file>`` next to this run is used).  Its counters are not
    # taken over: this run's step and update counts start from its own checkpoint.
    init_replay_from: Optional[str] = attr.ib(default=None)
    # On CPU, run the update's fp32 matmuls with oneDNN's kernel when a start-up probe finds it exact to fp32
    # and, timed on the first updates, faster than the default (MKL) kernel - about 2x on AVX-512 AMD
    # processors at 256 units; no effect elsewhere or on CUDA.  false = always the default kernel.  See
    # mlagents_plugins/common/fast_kernels.py.
    fast_cpu_matmul: Any = attr.ib(default=True, validator=strict_bool)  # bool
    # Compile the update's forward passes and losses with torch.compile (same math, elementwise ops fused;
    # see mlagents_plugins/common/compiled_step.py), after a one-off compile of 5-30 s.  null = automatic: compile
    # when every observation is a vector (Inductor's CPU convolutions were slower than eager on the camera
    # scene); true = always; false = never.  Where compiling fails (e.g. no C++ compiler) the update runs
    # eagerly, with a warning.
    compile_update: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # --- built-in ppo's settings, which mean nothing to an off-policy trainer (see config_compat) ---
    beta: Any = compat.no_equivalent("ppo", "The entropy bonus is tuned automatically towards a target entropy "
                                     "(init_entcoef sets where it starts).")
    beta_schedule: Any = compat.no_equivalent("ppo", "The entropy coefficient is tuned automatically.")
    epsilon: Any = compat.no_equivalent("ppo", "There is no clipped surrogate in an off-policy trainer.")
    epsilon_schedule: Any = compat.no_equivalent("ppo", "There is no clipped surrogate in an off-policy trainer.")
    lambd: Any = compat.no_equivalent("ppo", "The critics bootstrap one step (fast_sac, muzero_repr: n_step); "
                                      "there is no GAE lambda.")
    num_epoch: Any = compat.no_equivalent("ppo", "Use steps_per_update: environment steps per gradient update.")
    shared_critic: Any = compat.no_equivalent("ppo", "The critics are separate Q networks; there is nothing to share.")

    #: the trainer_type these settings belong to (named in error messages)
    TRAINER_TYPE: ClassVar[str] = "off-policy"

    def __attrs_post_init__(self) -> None:
        compat.apply_aliases(self, self.TRAINER_TYPE)

    @reward_signal_steps_per_update.default
    def _reward_signal_steps_per_update_default(self) -> float:
        return self.steps_per_update

    @init_replay_from.validator
    def _check_init_replay(self, attribute: "attr.Attribute", value: Any) -> None:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            fail(attribute.name, value, "a replay file path or a run id (a non-empty string), or null")
