"""Hyperparameters of the SAC head (``SACHeadSettings``): every field of ``fast_sac``'s ``hyperparameters:`` block, and
the RL head's fields of ``muzero_repr``'s, which extends it."""
from typing import Any

import attr
from mlagents.trainers.settings import ScheduleType

from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.validators import (
    entropy_scale,
    optional_bool,
    positive_float,
    positive_int,
    strict_bool,
    unit_interval,
)
from mlagents_plugins.offpolicy.settings import OffPolicyBaseSettings


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class SACHeadSettings(OffPolicyBaseSettings):
    # Adam step size of actor, critics and temperatures (``learning_rate_schedule``: constant or linear to 0
    # at max_steps).
    learning_rate: float = attr.ib(default=3.0e-4, validator=positive_float)
    learning_rate_schedule: ScheduleType = ScheduleType.CONSTANT
    # Polyak rate of the target critics: target <- (1 - tau) * target + tau * online, once per update.
    tau: float = attr.ib(default=0.005, validator=unit_interval)
    # Initial entropy temperature alpha, for continuous actions and every discrete branch.
    init_entcoef: float = attr.ib(default=1.0, validator=positive_float)
    # Target entropy = -scale * continuous action dims (SAC paper: scale 1).
    continuous_target_entropy_scale: float = attr.ib(default=1.0, validator=entropy_scale)
    # Target entropy of a discrete branch = scale * log(branch size) (0.2 ~ epsilon-greedy 0.05).
    discrete_target_entropy_scale: float = attr.ib(default=0.2, validator=unit_interval)
    # Actor objective on min(Q1, Q2) (SAC-2 paper) instead of Q1 alone (TD3, ML-Agents' sac).  Q1 alone saves one
    # critic pass per update (~15% of the step); the targets use the twin minimum either way.  null = automatic:
    # min with discrete actions alone (measured on "branches": 0.82 vs 0.52 at 40k steps), Q1 with any continuous
    # action, hybrid included (built-in sac's choice; on the tiny 2c2d hybrid task the twin minimum, from critics
    # that never saw the other sign of a continuous action, held the actor off it: bench/results/tiny-hybrid-2026-11-29).
    actor_min_q: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Whether the critics' TD targets carry the entropy bonus (soft Q, SAC-2 eq. 3).  false: they bootstrap
    # E_pi[min Q] and value the rewards alone, while the actor and the temperatures still use the entropy
    # (SACLite, Yu et al. 2022).  null = automatic: true for continuous-only actions, false with discrete
    # branches, where a bonus of alpha * log(branch size) per step, bootstrapped through time-outs, outweighs
    # rewards of order 1 (docs/fast_sac.md "Entropy in the targets").
    entropy_reward: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Steps in the TD target: rewards of n consecutive steps then a bootstrap (1 = standard SAC).  2 by default:
    # with one-step targets a critic's error on a near-tie (a step of delay costs (1 - gamma) x the value) can
    # sustain itself through its own bootstrap, and the policy then loses what it had learned (issue #14; chosen
    # on the tuning scenes, docs/fast_sac.md "n-step targets").
    n_step: int = attr.ib(default=2, validator=positive_int)
    # Layer normalization (Ba et al. 2016), without learned scale or shift, after each hidden layer of both
    # critics (before the activation), as in DroQ (Hiraoka et al. 2022) and RLPD (Ball et al. 2023); the SAC
    # papers have none.  null = automatic: on for continuous-only actions, where without it the policy lost much
    # of what it had learned under a constant learning rate ("balance", "balance_distractors"), off with discrete
    # branches (on "hybrid" it fell with it).  docs/fast_sac.md "Critic layer normalization".
    critic_layer_norm: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Both critics' output layers start small: weights and biases uniform in [-3e-3, 3e-3] (DDPG's final layer,
    # Lillicrap et al. 2016) instead of ML-Agents' initialization, so the first Q values and their slopes in the
    # continuous actions are near 0 and the actor does not follow a random slope before the rewards have shaped one.
    # null = automatic: on with hybrid actions (continuous and discrete), off otherwise.  With hybrid actions it
    # kept the continuous actions of the tiny 2c2d task off the sign a fresh critic's random slope picked (with the
    # actor on Q1, actor_min_q null: 6 of 6 seeds against 0 of 6); with continuous actions alone it cost the tiny
    # entity task (3/3 -> 2/3) (bench/results/tiny-hybrid-2026-11-29, tiny-fixes-2026-11-28); muzero_repr's critics on
    # the latent follow the same rule (bench/results/muzero-tiny-2026-11-29).
    critic_small_init: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Prioritized replay (Schaul et al. 2016): sample rows in proportion to (|TD error| + eps)^alpha.
    prioritized_replay: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # Priority exponent alpha (0 = uniform).
    per_alpha: float = attr.ib(default=0.6, validator=unit_interval)
    # Importance-sampling exponent beta at the start; annealed linearly to 1 at max_steps.
    per_beta: float = attr.ib(default=0.4, validator=unit_interval)
    # Added to |TD error| so no row gets priority 0.
    per_epsilon: float = attr.ib(default=1.0e-6, validator=positive_float)

    def critics_start_small(self, continuous_size: int, num_branches: int) -> bool:
        """Whether both critics' output layers start small: ``critic_small_init``, or when null, with hybrid actions."""
        if self.critic_small_init is not None:
            return bool(self.critic_small_init)
        return continuous_size > 0 and num_branches > 0

    def actor_uses_min_q(self, num_branches: int, continuous_size: int) -> bool:
        """Whether the actor's objective is ``min(Q1, Q2)``: ``actor_min_q``, or when null, with discrete actions
        alone (no continuous action)."""
        if self.actor_min_q is not None:
            return bool(self.actor_min_q)
        return num_branches > 0 and continuous_size == 0

    def critics_layer_normed(self, num_branches: int, hidden_units: int) -> bool:
        """Whether the critics normalize their hidden layers: ``critic_layer_norm``, or when null, without discrete
        branches and at least ``LAYER_NORM_MIN_UNITS`` units a hidden layer (``critic_norm.layer_norm_by_default``)."""
        if self.critic_layer_norm is not None:
            return bool(self.critic_layer_norm)
        from mlagents_plugins.common.critic_norm import layer_norm_by_default

        return layer_norm_by_default(hidden_units, num_branches)

    def entropy_in_targets(self, num_branches: int) -> bool:
        """Whether the TD targets carry the entropy bonus: ``entropy_reward``, or when null, without discrete branches."""
        return bool(self.entropy_reward) if self.entropy_reward is not None else num_branches == 0

