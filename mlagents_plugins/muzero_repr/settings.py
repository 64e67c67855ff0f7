"""``muzero_repr`` hyperparameters: the learned model's fields on top of the SAC head's (``sac/settings.py``, the RL
head; fast_sac's fields).

The RL head is the SAC head fast_sac runs, on the latent (the same code), so every fast_sac field keeps its meaning
and has its effect: ``tau``, ``init_entcoef``, the target entropy scales, ``actor_min_q``, ``entropy_reward``, ``n_step``,
``prioritized_replay`` and ``per_*`` (the priorities are the model's value errors, see docs/muzero_repr.md),
``fast_cpu_matmul`` and ``compile_update`` (both updates); ``learning_rate`` is the RL head's step size,
``model_learning_rate`` the learned model's, and ``learning_rate_schedule`` anneals both.  One inherited field is
refused unless left at what muzero_repr can do: ``reward_signal_steps_per_update`` (there are no intrinsic reward
providers to update).  Validators raise
``TrainerConfigError`` naming the field, the value and what is allowed.
"""
from typing import Any, ClassVar, Optional, Sequence, Tuple

import attr

from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.validators import (
    fail,
    non_negative_float,
    non_negative_int,
    one_of,
    optional_bool,
    optional_one_of,
    optional_non_negative_int,
    optional_positive_int,
    positive_float,
    positive_int,
    strict_bool,
    unit_interval,
)
from mlagents_plugins.muzero_repr.losses import LATENT_SCALING_MIN_MAX, LATENT_SCALING_TANH, LATENT_SCALINGS
from mlagents_plugins.muzero_repr.targets import ACTIONS_AFTER_END_CHOICES
from mlagents_plugins.offpolicy.rows import has_visual
from mlagents_plugins.sac.settings import SACHeadSettings

#: ``model_update_interval`` resolved for vector observations only (issue #52's cost; docs/muzero_repr.md).
VECTOR_MODEL_UPDATE_INTERVAL = 6

#: ``random_shift_pad`` resolved for visual observations (DrQ's 4 pixels on 84x84 images, scaled to 27-36 pixels).
VISUAL_SHIFT_PAD = 2


#: ``repr_gets_rl_gradient``'s ``saved`` for a run that starts from no checkpoint.
NO_CHECKPOINT = object()


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class MuZeroReprSettings(SACHeadSettings):
    TRAINER_TYPE: ClassVar[str] = "muzero_repr"
    # --- learned model (MuZero h, g, f) ---
    # Size of the latent state s = h(o). The RL head sees it.
    latent_size: int = attr.ib(default=64, validator=positive_int)
    # How h's output and every dynamics output are bounded: "min_max" scales each sample's latent to [0, 1] (MuZero
    # App. G; the sample's scale and offset are lost), "tanh" squashes each value to (-1, 1) (sign and magnitude kept).
    # null = automatic: "tanh" with vector observations only, where min_max failed tiny vector cases that tanh passes
    # (bench/results/muzero-latent-scaling-2026-11-29), "min_max" with images (the camera scenes were tuned with it).
    # A run resumed from a checkpoint keeps the scaling it trained with (written in the checkpoint; one from before
    # 0.3.0 has none and trained with min_max).
    latent_scaling: Optional[str] = attr.ib(default=None, validator=optional_one_of(*LATENT_SCALINGS))
    # Hidden units / hidden layers of the dynamics and prediction networks.
    model_hidden_units: int = attr.ib(default=128, validator=positive_int)
    model_num_layers: int = attr.ib(default=2, validator=positive_int)
    # K: dynamics steps unrolled with the actions actually taken (MuZero: 5).
    num_unroll_steps: int = attr.ib(default=5, validator=non_negative_int)
    # n: rewards summed before bootstrapping the value target from the target model (MuZero: 10).
    td_steps: int = attr.ib(default=10, validator=positive_int)
    # Gradient entering the dynamics at each unroll step is multiplied by this (MuZero App. G: 0.5).
    recurrent_gradient_scaling_factor: float = attr.ib(default=0.5, validator=unit_interval)
    # 0: value/reward are one scalar (in h-space); S >= 1: categorical over the 2S+1 integer atoms -S..S.
    support_size: int = attr.ib(default=10, validator=non_negative_int)
    # Predict h(x) = sign(x)(sqrt(|x|+1)-1) + eps x instead of x (MuZero App. F); eps below.
    value_transform: Any = attr.ib(default=True, validator=strict_bool)  # bool (Any: see strict_bool)
    value_transform_eps: float = attr.ib(default=0.001, validator=non_negative_float)
    # Loss weights (MuZero Reanalyse uses 0.25 for the value).
    value_loss_weight: float = attr.ib(default=0.25, validator=non_negative_float)
    reward_loss_weight: float = attr.ib(default=1.0, validator=non_negative_float)
    # Policy target = the action taken at that step (no MCTS here); 0 turns the policy loss off.
    policy_loss_weight: float = attr.ib(default=0.0, validator=non_negative_float)
    # Train a head predicting "after a terminal" (absorbing) from the latent; its loss weight.
    train_game_over: Any = attr.ib(default=False, validator=strict_bool)  # bool (Any: see strict_bool)
    game_over_loss_weight: float = attr.ib(default=1.0, validator=non_negative_float)
    # EfficientZero temporal consistency: predict h(o_{t+k}) from the unrolled latent s_k; its loss weight.
    train_repr_prediction: Any = attr.ib(default=False, validator=strict_bool)  # bool (Any: see strict_bool)
    repr_prediction_loss_weight: float = attr.ib(default=2.0, validator=non_negative_float)
    # Actions fed to the dynamics after an episode end: "repeat" the last one, or uniformly "random".
    actions_after_end: str = attr.ib(default="repeat")
    # Target model for the value bootstrap: target <- (1 - tau) target + tau online every period updates.
    model_target_update_tau: float = attr.ib(default=1.0, validator=unit_interval)
    model_target_update_period: int = attr.ib(default=100, validator=positive_int)
    # Adam step size of the learned model.
    model_learning_rate: float = attr.ib(default=1.0e-3, validator=positive_float)
    # Model updates are made every ``model_update_interval`` RL updates, ``model_updates_per_interval`` at a time;
    # null = automatic: VECTOR_MODEL_UPDATE_INTERVAL (6) with vector observations only, where it brought the CPU per
    # env step under 2x fast_sac's while reach_continuous and the tiny vector cases learned as at 2 (3 seeds,
    # bench/results/muzero-model-interval-2026-11-29), 1 with images (not measured there).
    model_update_interval: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    model_updates_per_interval: int = attr.ib(default=1, validator=positive_int)
    # Clip the model's gradient norm (0 = no clipping).
    model_grad_clip: float = attr.ib(default=10.0, validator=non_negative_float)
    # DrQ random-shift augmentation of visual observations by up to this many pixels (0 = off); null = automatic:
    # VISUAL_SHIFT_PAD with visual observations, where the tuning scene "camera" learned only with it and
    # rl_gradient_to_repr (docs/muzero_repr.md "Automatic pixel defaults").
    random_shift_pad: Optional[int] = attr.ib(default=None, validator=optional_non_negative_int)
    # --- RL head ---
    # Let the critic's TD loss backpropagate into the representation (ALF default: off); null = automatic: on
    # whenever the head reads h (off when it reads h's target copy, which passes no gradient).  The model's losses
    # alone left "camera" at random play and were slower on "reach" and "reach_continuous"
    # (docs/muzero_repr_defaults.md "rl_gradient_to_repr: the critic's gradient in h").  A run resumed from a
    # checkpoint keeps the value it trained with (written in the checkpoint); a checkpoint from before 0.3.0 has none
    # and resolves by those versions' rule: on with visual observations or discrete actions only.
    rl_gradient_to_repr: Any = attr.ib(default=None, validator=optional_bool)  # Optional[bool]
    # Hidden units / layers of the actor and critics on top of the latent; null = automatic: network_settings'
    # hidden_units / num_layers, the size a user's sac config gives its actor and critics (a fixed 2x128 head at
    # a tiny config's learning rate 5e-3 collapsed the discrete actor: bench/results/muzero-tiny-2026-11-29).
    head_hidden_units: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    head_num_layers: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    # --- what the SAC head reads (issue #52; docs/muzero_repr.md, Algorithm, "What the head reads") ---
    # The SAC head (critic, actor loss, acting policy and the exported actor) reads a target copy of h that holds
    # still between refreshes, instead of h itself (MR.Q; SPR's EMA target); the critic's gradient then cannot reach
    # h (rl_gradient_to_repr: true is refused with it, and its automatic value becomes false).  Default false (h, as
    # before): in the one-seed screen of bench/results/muzero-target-encoder-2026-11-28 no refresh scheme learned
    # faster than the moving h.
    head_reads_target_repr: Any = attr.ib(default=False, validator=strict_bool)  # bool (Any: see strict_bool)
    # The head's target copy: copy <- (1 - tau) copy + tau h every period model updates (tau 1: a hard copy
    # every period updates, MR.Q; tau < 1 with period 1: an EMA, SPR).
    head_repr_update_tau: float = attr.ib(default=1.0, validator=unit_interval)
    head_repr_update_period: int = attr.ib(default=250, validator=positive_int)
    # Latent self-prediction (train_repr_prediction) against h(o_{t+k}) of "online" h (EfficientZero) or of the
    # head's "target" copy (SPR, MR.Q); its per-sample loss "cosine" (negative cosine similarity) or "mse".
    repr_prediction_target: str = attr.ib(default="online", validator=one_of("online", "target"))
    repr_prediction_loss: str = attr.ib(default="cosine", validator=one_of("cosine", "mse"))

    def repr_gets_rl_gradient(self, observation_specs: Sequence[Any], action_spec: Any, saved: Any = NO_CHECKPOINT
                              ) -> bool:
        """``rl_gradient_to_repr``, or when null: off when the head reads h's target copy, else what a resumed
        checkpoint trained with (``saved``: True / False from its ``critic_gradient`` buffer, None for a checkpoint
        written before that buffer existed (before 0.3.0), which resolves by those versions' rule), else on."""
        if self.rl_gradient_to_repr is not None:
            return bool(self.rl_gradient_to_repr)
        if self.head_reads_target_repr:  # the head reads the target copy: no gradient path into h
            return False
        if saved is None:  # a checkpoint from before the buffer: its version's rule, so its optimizer state loads
            return has_visual(observation_specs) or action_spec.continuous_size == 0
        if saved is NO_CHECKPOINT:
            return True
        return bool(saved)

    def latent_scaling_for(self, observation_specs: Sequence[Any], saved: Any = NO_CHECKPOINT) -> str:
        """``latent_scaling``, or when null: what a resumed checkpoint trained with (``saved``: its recorded scaling,
        None for a checkpoint written before the record existed, which trained with min_max), else tanh with vector
        observations only and min_max with images."""
        if self.latent_scaling is not None:
            return str(self.latent_scaling)
        if saved is None:
            return LATENT_SCALING_MIN_MAX
        if saved is not NO_CHECKPOINT:
            return str(saved)
        return LATENT_SCALING_MIN_MAX if has_visual(observation_specs) else LATENT_SCALING_TANH

    def head_reads_target(self, observation_specs: Sequence[Any], action_spec: Any) -> bool:
        """Whether the SAC head reads h's target copy (``head_reads_target_repr``; the same for every behavior)."""
        return bool(self.head_reads_target_repr)

    def needs_target_repr(self, observation_specs: Sequence[Any], action_spec: Any) -> bool:
        """Whether a target copy of h is kept: the head reads it, or the self-prediction targets come from it."""
        return self.head_reads_target(observation_specs, action_spec) or (
            bool(self.train_repr_prediction) and self.repr_prediction_target == "target"
        )

    def head_size(self, network_settings: Any) -> Tuple[int, int]:
        """(hidden units, hidden layers) of the SAC head's actor and critics: ``head_hidden_units`` and
        ``head_num_layers``, each when null taken from ``network_settings`` (``hidden_units``, ``num_layers``)."""
        units = network_settings.hidden_units if self.head_hidden_units is None else self.head_hidden_units
        layers = network_settings.num_layers if self.head_num_layers is None else self.head_num_layers
        return int(units), int(layers)

    def shift_pad(self, observation_specs: Sequence[Any]) -> int:
        """``random_shift_pad``, or when null, ``VISUAL_SHIFT_PAD`` with visual observations and 0 without."""
        if self.random_shift_pad is not None:
            return int(self.random_shift_pad)
        return VISUAL_SHIFT_PAD if has_visual(observation_specs) else 0

    def model_interval(self, observation_specs: Sequence[Any]) -> int:
        """``model_update_interval``, or when null, 1 with visual observations and ``VECTOR_MODEL_UPDATE_INTERVAL``
        without."""
        if self.model_update_interval is not None:
            return int(self.model_update_interval)
        return 1 if has_visual(observation_specs) else VECTOR_MODEL_UPDATE_INTERVAL

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        # Only the extrinsic reward signal is supported, so there is no reward provider this cadence could
        # update.  Equal to steps_per_update is what it defaults to (and what built-in sac configs write).
        if self.reward_signal_steps_per_update != self.steps_per_update:
            fail(
                "reward_signal_steps_per_update",
                self.reward_signal_steps_per_update,
                f"left unset or equal to steps_per_update ({self.steps_per_update!r}): muzero_repr supports only "
                "the extrinsic reward signal, so there are no reward providers to update",
            )

        if self.head_reads_target_repr is True and self.rl_gradient_to_repr is True:
            fail(
                "head_reads_target_repr",
                self.head_reads_target_repr,
                "false while rl_gradient_to_repr is true: a head reading the target copy of h sends no "
                "gradient into h, so the critic's gradient could not reach it",
            )

    @actions_after_end.validator
    def _check_actions_after_end(self, attribute: "attr.Attribute", value: Any) -> None:
        if value not in ACTIONS_AFTER_END_CHOICES:
            fail(attribute.name, value, f"one of {list(ACTIONS_AFTER_END_CHOICES)}")

    @support_size.validator
    def _check_support(self, attribute: "attr.Attribute", value: Any) -> None:
        if not isinstance(value, bool) and isinstance(value, int) and value > 1000:
            fail(attribute.name, value, "an integer in [0, 1000]")
