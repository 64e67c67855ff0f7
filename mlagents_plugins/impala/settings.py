"""Hyperparameters of the ``impala`` trainer (the ``hyperparameters:`` block of a trainer config).

Fields keep ML-Agents' meaning where the name is shared: ``batch_size`` is the steps per gradient step and
``buffer_size`` the steps gathered before a round of updates, as for built-in ppo (``update_style: epochs``,
the default; under ``stream`` it is the most steps that may wait in the learner queue, oldest dropped first).
Both count the steps of pieces (unrolls of at most ``unroll_length`` steps that end at episode ends).
"""
from typing import Any, Optional

import attr
from mlagents.trainers.settings import HyperparamSettings, ScheduleType

from mlagents_plugins.common import config_compat as compat
from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.validators import (
    fail,
    non_negative_float,
    one_of,
    optional_open_unit_interval,
    optional_positive_float,
    optional_positive_int,
    positive_float,
    positive_int,
    strict_bool,
    unit_interval,
)

UPDATE_STYLES = ("stream", "epochs")
OPTIMIZERS = ("adam", "rmsprop")  # rmsprop is the paper's choice
#: unroll_length when it is not set and batch_size is at least this
DEFAULT_UNROLL_LENGTH = 32


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class ImpalaSettings(HyperparamSettings):
    # Steps per gradient step: shuffled steps of the round (epochs), or whole pieces, the oldest fresh ones
    # until they hold this many steps (stream).  >= unroll_length.
    batch_size: int = attr.ib(default=512, validator=positive_int)
    # epochs: steps per round of updates (ppo's meaning); stream: most steps waiting for the learner, the
    # oldest pieces dropped beyond it.  >= batch_size.
    buffer_size: int = attr.ib(default=16384, validator=positive_int)
    learning_rate: float = attr.ib(default=3.0e-4, validator=positive_float)
    learning_rate_schedule: ScheduleType = ScheduleType.CONSTANT
    # How the learner consumes pieces (trainer module docstring; docs/impala.md, "Update styles").
    # "epochs": built-in ppo's cadence: once buffer_size fresh steps wait, max_reuse passes over them in
    # shuffled minibatches of batch_size steps, V-trace targets recomputed at the start of each pass.
    # "stream": the paper's queue: every batch_size fresh steps (whole pieces) make one gradient step, and
    # each piece is reused at random up to max_reuse times.  DEVIATION: the default is epochs (evidence:
    # docs/impala.md, "Defaults"); the paper's learner is the stream one.
    update_style: str = attr.ib(default="epochs", validator=one_of(*UPDATE_STYLES))
    # epochs only: a round ends early, its remaining minibatches skipped, once a minibatch's estimate of
    # KL(mu || pi) (the acting policy to the learner's, IMPALA/Approx KL) exceeds this before its step;
    # null = never.  DEVIATION from the paper and from ppo (as SB3's target_kl): a guard against the rare
    # round in which a near-deterministic policy moves far off the acting one (docs/impala.md, "Defaults").
    kl_stop: Optional[float] = attr.ib(default=0.1, validator=optional_positive_float)
    # Steps per piece: trajectories are cut into pieces of this length at episode ends and every
    # unroll_length steps; each piece keeps the observation after its last step for bootstrapping.  At most
    # batch_size.  null (default) = automatic: DEFAULT_UNROLL_LENGTH (32), or batch_size when that is smaller, so
    # a ppo config with a small batch_size runs unchanged (ML-Agents' own small learning-test configs use 16).
    unroll_length: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    # rho-bar: clip of the importance weight scaling each TD error (paper eq. 1).  null = no clip.
    rho_clip: Optional[float] = attr.ib(default=1.0, validator=optional_positive_float)
    # c-bar: clip of the trace-cutting coefficients c_i (paper eq. 1).  null = no clip.
    c_clip: Optional[float] = attr.ib(default=1.0, validator=optional_positive_float)
    # Clip of the importance weight in the policy-gradient advantage (paper sec. 4.2).  null = no clip.
    # Unused when surrogate_clip is set (the surrogate's ratio is then the importance weight).
    pg_rho_clip: Optional[float] = attr.ib(default=1.0, validator=optional_positive_float)
    # epsilon of a PPO-style clipped surrogate on pi/mu with the V-trace advantage r + gamma v_{s+1} - V
    # (a trust region around the acting policy, as IMPACT).  DEVIATION from the paper, on by default: the
    # paper's policy gradient bounds each sample's weight but not how far pi drifts from a stale mu, and
    # under threaded lag (~17-33 updates) it ran away in 4/4 measured runs (docs/impala.md, "Policy lag").
    # null = the paper's policy gradient (weighted by pg_rho_clip).
    surrogate_clip: Optional[float] = attr.ib(default=0.2, validator=optional_open_unit_interval)
    # constant, or linear: surrogate_clip decays to 0.1 at max_steps (as built-in ppo's epsilon_schedule).
    surrogate_clip_schedule: ScheduleType = ScheduleType.CONSTANT
    # lambda multiplying every c_i (paper sec. 4.2 / DI-engine lambda_); 1 = plain V-trace.  DEVIATION: the
    # default 0.95 is built-in ppo's lambd default (the paper's is 1), so a ppo config that leaves lambd unset
    # means the same here; on fresh data the value targets are then ppo's lambda-returns (evidence
    # for the choice: docs/impala.md, "Defaults").
    trace_lambda: float = attr.ib(default=0.95, validator=unit_interval)
    # Weight of the baseline (value) loss.
    value_weight: float = attr.ib(default=0.5, validator=non_negative_float)
    # Weight of the entropy bonus, decayed to 1e-5 over max_steps when its schedule is linear.  The default
    # 0.005 is built-in ppo's beta default (docs/impala.md, "Defaults").
    entropy_weight: float = attr.ib(default=0.005, validator=non_negative_float)
    entropy_weight_schedule: ScheduleType = ScheduleType.CONSTANT
    # Global gradient-norm clip (actor and critic together, the norm of the mean losses' gradient); null = no
    # clipping.  DEVIATION: the paper's 40 is for summed losses and rarely binds on our mean losses; 2.0 binds only
    # where the critic's gradient grows with large returns, and there it stops the fall after the threshold
    # (evidence: docs/impala.md, "Defaults", "grad_clip_norm 2.0").
    grad_clip_norm: Optional[float] = attr.ib(default=2.0, validator=optional_positive_float)
    # "adam" or "rmsprop" (plain string so that a typo gets a TrainerConfigError naming the field).
    optimizer: str = attr.ib(default="adam", validator=one_of(*OPTIMIZERS))
    # RMSProp smoothing constant (ignored by Adam).
    rmsprop_alpha: float = attr.ib(default=0.99, validator=unit_interval)
    # Denominator epsilon of Adam/RMSProp (the paper's RMSProp uses 0.01).
    optimizer_epsilon: float = attr.ib(default=1.0e-5, validator=positive_float)
    # True: value heads on the policy's body (SharedActorCritic); False: a separate ValueNetwork.
    shared_critic: Any = attr.ib(default=False, validator=strict_bool)  # bool; Any so cattrs passes the raw YAML value (see fast_cpu_matmul)
    # Standardise the V-trace advantages over each batch's real steps (epochs: over the round's steps, at the
    # start of each pass).  DEVIATION from the paper, on by
    # default (as PPO does): with max_reuse 3 it took a minimal config to the Balance threshold where the
    # paper's setting did not (docs/impala.md, "Defaults").
    normalize_advantage: Any = attr.ib(default=True, validator=strict_bool)  # bool
    # epochs: passes over each round (ppo's num_epoch); stream: each piece is used in at most this many updates
    # (DI-engine max_use).  DEVIATION: the paper uses every piece once (1); the default uses it 3 times, as
    # ppo's default num_epoch does.
    max_reuse: int = attr.ib(default=3, validator=positive_int)
    # On CPU, run the update's fp32 matmuls with oneDNN's kernel when a start-up probe finds it exact to fp32
    # and faster than the default (MKL) kernel; no effect elsewhere or on CUDA.  Same math, another kernel;
    # false = always the default kernel.  Pays off for wide layers (256: -24% per update) but not narrow ones
    # (64: +2-7%), so the first updates time both kernels and keep the faster (MatmulKernelChooser).  A bool; annotated Any so
    # that cattrs hands the raw YAML value to the validator (as bool it would turn "yes" or null into a bool).
    fast_cpu_matmul: Any = attr.ib(default=True, validator=strict_bool)

    # --- built-in ppo's names (a ppo config loads unchanged; see config_compat and docs/configs.md) ---
    beta: Optional[float] = compat.alias("entropy_weight", "ppo")
    beta_schedule: Optional[ScheduleType] = compat.alias("entropy_weight_schedule", "ppo")
    epsilon: Optional[float] = compat.alias("surrogate_clip", "ppo")
    epsilon_schedule: Optional[ScheduleType] = compat.alias("surrogate_clip_schedule", "ppo")
    lambd: Optional[float] = compat.alias("trace_lambda", "ppo")
    num_epoch: Optional[int] = compat.alias("max_reuse", "ppo")
    # --- built-in sac's settings, which mean nothing to impala ---
    tau: Any = compat.no_equivalent("sac", "impala has no target networks: V-trace bootstraps from the current critic.")
    init_entcoef: Any = compat.no_equivalent("sac", "Use entropy_weight (a fixed entropy bonus, ppo's beta).")
    buffer_init_steps: Any = compat.no_equivalent("sac", "impala learns from fresh pieces as soon as batch_size "
                                                  "of them have arrived.")
    steps_per_update: Any = compat.no_equivalent("sac", "impala updates whenever batch_size fresh pieces wait; "
                                                 "max_reuse sets how often each piece is used.")
    save_replay_buffer: Any = compat.no_equivalent("sac", "impala keeps no replay buffer to save.")
    reward_signal_steps_per_update: Any = compat.no_equivalent("sac", "Reward providers update with every batch.")

    def __attrs_post_init__(self) -> None:
        compat.apply_aliases(self, "impala")
        if self.unroll_length is None:
            self.unroll_length = min(DEFAULT_UNROLL_LENGTH, self.batch_size)
        elif self.batch_size < self.unroll_length:
            fail(
                "batch_size", self.batch_size,
                f"an integer >= unroll_length ({self.unroll_length}): batch_size counts steps, as for ppo (earlier "
                f"versions of mlagents-plugins counted pieces: {self.batch_size} pieces of unroll_length steps are "
                f"{self.batch_size * self.unroll_length} steps)",
            )
        if self.buffer_size < self.batch_size:
            fail("buffer_size", self.buffer_size, f"an integer >= batch_size ({self.batch_size})")
