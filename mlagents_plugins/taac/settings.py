"""``taac`` hyperparameters (the ``hyperparameters:`` block of a ``trainer_type: taac`` behavior).

Extends the shared off-policy settings (batch/buffer/``steps_per_update``/replay persistence) with TAAC's
own fields.  Every validator raises ``TrainerConfigError`` naming the field, the value and what is allowed.
"""
import math
from typing import Any, ClassVar, List, Optional, Sequence

import attr
from mlagents.trainers.settings import ScheduleType

from mlagents_plugins.common import config_compat as compat
from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.validators import (
    entropy_scale,
    fail,
    non_negative_int,
    optional_bool,
    positive_float,
    positive_int,
    strict_bool,
    unit_interval,
)
from mlagents_plugins.offpolicy.rows import has_visual
from mlagents_plugins.offpolicy.settings import OffPolicyBaseSettings
from mlagents_plugins.taac.trajectories import TrajectoryKind


def _to_kind_name(value: Any) -> Any:
    """Accept ``constant``/``linear``/``quadratic`` (any case) or a ``TrajectoryKind``; others go to the validator.

    Stored as a string (not the enum) so that cattrs hands any YAML value to our validator, which names the
    field, instead of failing inside ``Enum(value)`` with a bare ``ValueError``.
    """
    if isinstance(value, TrajectoryKind):
        return value.value
    if isinstance(value, str):
        return value.strip().lower()
    return value


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class TaacSettings(OffPolicyBaseSettings):
    TRAINER_TYPE: ClassVar[str] = "taac"
    # Adam step size of actor, critics and both temperatures (schedule: constant, or linear to 0 at max_steps).
    learning_rate: float = attr.ib(default=3.0e-4, validator=positive_float)
    learning_rate_schedule: ScheduleType = ScheduleType.CONSTANT
    # Trajectory family: constant (TAAC, repeat the action), linear (TAAC-L), quadratic (TAAC-Q).
    trajectory: str = attr.ib(default=TrajectoryKind.CONSTANT.value, converter=_to_kind_name)
    # linear/quadratic only: the actor proposes the next action and the derivatives are inferred (true), or
    # it proposes the highest derivative directly (false).
    inverse_mode: Any = attr.ib(default=True, validator=strict_bool)  # bool (Any: see offpolicy.settings.strict_bool)
    # Critics Q(s, tau) trained side by side; their minimum is used for the switch and the target (the actor's
    # objective: actor_min_q).
    num_critic_replicas: int = attr.ib(default=2, validator=positive_int)
    # Polyak rate of the target critics: target <- (1 - rate) * target + rate * online ...
    target_update_tau: float = attr.ib(default=0.005, validator=unit_interval)
    # ... applied once every this many gradient updates.
    target_update_period: int = attr.ib(default=1, validator=positive_int)
    # Initial temperature of the first-stage (action proposal) policy.
    init_action_temperature: float = attr.ib(default=0.1, validator=positive_float)
    # Initial temperature of the second-stage switch softmax over (Q(s, tau^-), Q(s, tau_hat)).
    init_switch_temperature: float = attr.ib(default=0.1, validator=positive_float)
    # Target entropy of the proposal = -scale * action dims (SAC's heuristic at scale 1).
    action_target_entropy_scale: float = attr.ib(default=1.0, validator=entropy_scale)
    # Target entropy of the binary switch, in nats, in [0, ln 2); 0.23 ~ a switch that is 94% sure.
    switch_target_entropy: float = attr.ib(default=0.23)
    # [min, max] clip of the advantage Q(s, tau_hat) - Q(s, tau^-) inside the switch softmax, or null.
    b1_advantage_clipping: Optional[List[float]] = attr.ib(default=None)
    # Layer normalization, without learned scale or shift, after each hidden layer of every critic (before the
    # activation; mlagents_plugins/common/critic_norm.py), as fast_sac's critics have it for continuous actions; the
    # TAAC paper has none.  null: on for critics of at least 64 units a hidden layer (critic_norm.LAYER_NORM_MIN_UNITS;
    # narrower ones learned ML-Agents' tiny tasks worse with it).  docs/taac.md "Critic layer normalization".
    critic_layer_norm: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Every critic's output layer starts uniform in [-3e-3, 3e-3] (DDPG's final layer, Lillicrap et al. 2016) instead of
    # ML-Agents' initialization, so the first Q values and their slopes in tau are near 0 and the actor does not
    # follow a random slope before the rewards have shaped one (fast_sac's critic_small_init).  Off by default: the tiny
    # camera task 1/3 -> 3/3 with it, the tiny entity task 1/3 -> 0/3 (bench/results/tiny-fixes-2026-11-28).
    critic_small_init: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # The first this many gradient updates train the critics alone: the actor (its proposal) and both temperatures
    # stay as initialized, so the policy keeps acting broadly while the critics learn from what it does, instead of
    # following the fresh critics' random slopes in tau before any reward has shaped them (TD3's and CrossQ's policy
    # delay, applied to the first updates only; fast_sac's critic_warmup_updates).  0 = off.
    # (bench/results/tiny-defaults-2026-11-28, docs/taac.md "Critic warm-up").
    critic_warmup_updates: int = attr.ib(default=0, validator=non_negative_int)
    # Every critic starts indifferent to tau: its first layer's weights on the tau inputs are 0, so a fresh critic has
    # no random slope in tau, while its output scale and observation features keep ML-Agents' initialization (unlike
    # critic_small_init; fast_sac's critic_neutral_init).  (bench/results/tiny-defaults-2026-11-28).
    critic_neutral_init: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # The actor's (proposal's) objective on the replicas' minimum Q (true: the TAAC paper) instead of the first
    # replica's alone (false: TD3's and built-in sac's actor, fast_sac's with continuous actions).  The switch and the
    # targets use the minimum either way.  null = automatic: the first replica's when an observation is an image, the
    # minimum otherwise.  On the tiny one-camera task the minimum held the actor on a fresh critic's goal-blind slope
    # on 3 of 20 seeds, the first replica on 1 of 20; on HalfCheetah-v5 (vector) the first replica ended at 3352
    # against the minimum's 4390 (bench/results/tiny-issue53-2026-11-30; docs/taac.md "Deviations from the paper").
    actor_min_q: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Rollout and inference only: force a new trajectory after this many steps of the same one (0: no limit).
    max_repeat_steps: int = attr.ib(default=0, validator=non_negative_int)
    # Start each episode from a uniformly random tau^- instead of zeros (exploration; off in the paper).
    randomize_first_state_tau: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # Length of the replayed windows the compare-through return runs along (>= 2); a batch holds
    # ceil(batch_size / mini_batch_length) windows.  null (automatic): the longest of at most 8 rows that leaves a
    # batch at least 8 windows, and at least 2 (batch_size 16: 2; 32: 4; 64 and more: 8), so a small batch still
    # draws from 8 places in the replay (bench/results/tiny-candidates-2026-11-29).
    mini_batch_length: Optional[int] = attr.ib(default=None)

    # --- built-in sac's names (a sac config loads unchanged; see config_compat) ---
    tau: Optional[float] = compat.alias("target_update_tau", "sac")
    init_entcoef: Optional[float] = compat.alias("init_action_temperature", "sac")

    @trajectory.validator
    def _check_kind(self, attribute: "attr.Attribute", value: Any) -> None:
        if not isinstance(value, str) or value not in {k.value for k in TrajectoryKind}:
            fail(attribute.name, value, "one of " + ", ".join(k.value for k in TrajectoryKind))

    @switch_target_entropy.validator
    def _check_switch_entropy(self, attribute: "attr.Attribute", value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < math.log(2.0):
            fail(attribute.name, value, f"a number in [0, ln 2 = {math.log(2.0):.4f})")

    def actor_reads_min(self, observation_specs: Sequence[Any]) -> bool:
        """``actor_min_q``, or when null, whether no observation is an image (``rows.has_visual``)."""
        if self.actor_min_q is not None:
            return bool(self.actor_min_q)
        return not has_visual(observation_specs)

    def critics_layer_normed(self, hidden_units: int) -> bool:
        """``critic_layer_norm``, or when null, whether the critics have at least ``LAYER_NORM_MIN_UNITS`` units a
        hidden layer (``critic_norm.layer_norm_by_default``; taac takes continuous actions only)."""
        if self.critic_layer_norm is not None:
            return bool(self.critic_layer_norm)
        from mlagents_plugins.common.critic_norm import layer_norm_by_default

        return layer_norm_by_default(hidden_units)

    @b1_advantage_clipping.validator
    def _check_clipping(self, attribute: "attr.Attribute", value: Any) -> None:
        if value is None:
            return
        ok = (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            and value[0] < value[1]
        )
        if not ok:
            fail(attribute.name, value, "null or a pair [min, max] of numbers with min < max")

    @mini_batch_length.validator
    def _check_length(self, attribute: "attr.Attribute", value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            fail(attribute.name, value, "null (automatic) or an integer >= 2 (the compare-through return needs a next step)")

    #: the automatic ``mini_batch_length``: windows of at most this many rows ...
    AUTO_WINDOW_MAX: ClassVar[int] = 8
    #: ... and at least this many windows a batch
    AUTO_MIN_WINDOWS: ClassVar[int] = 8

    @property
    def window_length(self) -> int:
        """``mini_batch_length``, or when null the longest window of at most ``AUTO_WINDOW_MAX`` rows that leaves
        ``batch_size`` at least ``AUTO_MIN_WINDOWS`` windows, never under 2."""
        if self.mini_batch_length is not None:
            return int(self.mini_batch_length)
        return max(2, min(self.AUTO_WINDOW_MAX, int(self.batch_size) // self.AUTO_MIN_WINDOWS))

    @property
    def trajectory_kind(self) -> TrajectoryKind:
        return TrajectoryKind(self.trajectory)

    @property
    def advantage_clipping(self) -> Optional[tuple]:
        v = self.b1_advantage_clipping
        return None if v is None else (float(v[0]), float(v[1]))
