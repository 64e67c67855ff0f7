"""``fast_sac`` hyperparameters (the ``hyperparameters:`` block of a ``trainer_type: fast_sac`` behavior): the SAC
head's (``mlagents_plugins/sac/settings.py``) and the image augmentation of camera observations."""
from typing import Any, ClassVar, Optional, Sequence, Tuple

import attr

from mlagents_plugins.common import settings_conversion
from mlagents_plugins.common.bf16_matmul import auto_bf16
from mlagents_plugins.common.image_augment import automatic_shift_pad
from mlagents_plugins.common.network_recipe import MLAGENTS, SWISH, NetworkRecipe
from mlagents_plugins.common.validators import (
    fail,
    non_negative_int,
    one_of,
    optional_non_negative_int,
    optional_positive_int,
    positive_int,
    strict_bool,
)
from mlagents_plugins.sac.settings import SACHeadSettings

#: ``update_precision``'s values (null: auto).
UPDATE_PRECISIONS = ("fp32", "bf16", "auto")


@attr.s(auto_attribs=True, field_transformer=settings_conversion.typed_fields)
class FastSACSettings(SACHeadSettings):
    TRAINER_TYPE: ClassVar[str] = "fast_sac"

    # DrQ random shifts (Kostrikov et al. 2020) of the camera frames in every sampled batch: each frame moved by a
    # whole number of pixels up to this many in each direction, edges repeated; observation and next observation
    # shifted independently, the actor and the critics seeing the same shifted frames.  0 = off; null =
    # automatic: DrQ's 4 pixels at 84x84 scaled to the frame size (at least 1) with camera observations, off
    # without (docs/fast_sac.md "Image augmentation").
    random_shift_pad: Optional[int] = attr.ib(default=None, validator=optional_non_negative_int)
    # The first this many gradient updates train the critics alone: the actor and the temperatures stay as
    # initialized, so the policy keeps acting broadly while the critics learn from what it does, instead of
    # following the fresh critics' random slopes into a saturated action before any reward has shaped them
    # (TD3's and CrossQ's policy delay, applied to the first updates only).  0 = off.
    # (bench/results/tiny-defaults-2026-11-28, docs/fast_sac.md "Critic warm-up").
    critic_warmup_updates: int = attr.ib(default=0, validator=non_negative_int)
    # Both critics start indifferent between actions: the first layer's weights on the continuous action inputs are 0
    # and every discrete branch's output rows start equal, so a fresh critic has no random slope or preference in the
    # actions, while its output scale and observation features keep ML-Agents' initialization (unlike
    # critic_small_init).  (bench/results/tiny-defaults-2026-11-28).
    critic_neutral_init: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # --- CrossQ's recipe (issue #56; docs/fast_sac_crossq.md; off by default) ---
    # CrossQ's critics (Bhatt, Palenicek et al. 2024): batch renormalization (Ioffe 2017) before every linear layer
    # of both critics and before their value heads, no target critics (no Polyak update; ``tau`` unused), and the
    # taken and the bootstrap state-actions in one critic pass so the normalization sees both.  The actor stays a
    # plain MLP (the ONNX export is unchanged).  Replaces critic_layer_norm (null resolves to off; true is refused).
    # With it, adam_beta1, actor_update_every and n_step default to CrossQ's values (their null), so this one
    # setting turns on CrossQ's recipe.  Not the default: on the validation scenes' drop-in config it ended lower
    # than SAC's critics on 3 of the 4 continuous scenes (bench/results/fast-sac-crossq-default-2026-11-30).
    critic_batch_renorm: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # Rate of the batch renormalization's running averages (CrossQ: 0.01); only with critic_batch_renorm.
    batch_renorm_momentum: float = attr.ib(default=0.01)
    # Critic updates of plain batch normalization before the running averages correct the batch statistics
    # (CrossQ: 100000); only with critic_batch_renorm.
    batch_renorm_warmup: int = attr.ib(default=100000, validator=positive_int)
    # Hidden units of each critic layer; null = network_settings.hidden_units (the actor's).  CrossQ: 2048 (its
    # sb3-contrib port: 1024) with a 256-unit actor; the critic's CPU cost grows with the square of the width.
    critic_hidden_units: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    # Adam's beta1 for actor, critics and temperatures (PyTorch's 0.9; CrossQ: 0.5).  null = 0.5 with
    # critic_batch_renorm, 0.9 without.
    adam_beta1: Optional[float] = attr.ib(default=None)
    # The actor and the temperatures step on every k-th update, the critics on every update (TD3's policy delay;
    # CrossQ: 3).  The updates in between skip the actor's pass at s (cheaper).  1 = every update.  null = 3 with
    # critic_batch_renorm, 1 without.
    actor_update_every: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    # Steps in the TD target (the SAC head's n_step, its meaning there).  null = 1 with critic_batch_renorm
    # (CrossQ's one-step targets: HalfCheetah-v5 at 100k 7000 / 8048 / 7244 on seeds 0-2 against 6008 / 4421 / 5363
    # with 2; bench/results/fast-sac-crossq-100k-2026-11-28), 2 without (issue #14, docs/fast_sac.md).
    n_step: Optional[int] = attr.ib(default=None, validator=optional_positive_int)
    # With network_settings.memory: rows before each sampled sequence (same trajectory chunk) run through the
    # policy's and the critics' LSTMs only to bring their memories up to date, without a loss (R2D2's burn-in,
    # Kapturowski et al. 2019).  0 = none, as built-in sac: the policy starts from the memory stored when the
    # sequence's first step was acted, the critics from zeros.  Raise it (e.g. to sequence_length / 2) when the
    # sequences start deep into long episodes and the stored memories grow stale as the policy changes; each step
    # costs as much compute as a trained one.  Refused without memory.  (docs/fast_sac.md "Recurrent policies")
    burn_in: int = attr.ib(default=0, validator=non_negative_int)
    # Binned critics (issue #56; docs/fast_sac_critic_bins.md): each critic outputs this many logits of a
    # categorical distribution over values equally spaced in symlog space (sign(x) log(1 + |x|)) from -10 to 10
    # (|Q| up to about 22,000 in the rewards' units), its Q the distribution's mean mapped back, and learns by
    # cross-entropy against a normal of 0.75 bins' width around the TD target (HL-Gauss, Farebrother et al. 2024;
    # XQC's loss, Palenicek et al. 2025) instead of the squared residual.  The loss's scale no longer grows with the
    # rewards'.  Continuous-only actions.  0 = off (scalar critics, SAC's); e.g. 101.
    critic_value_bins: int = attr.ib(default=0, validator=non_negative_int)
    # After every Adam step, each layer-normalized critic hidden layer's weights and bias are rescaled together to
    # the norm sqrt(out_features), their expected norm under ML-Agents' initialization (NaP: Lyle et al. 2024; XQC's
    # weight normalization, Palenicek et al. 2025).  The layer normalization after the layer makes its output blind
    # to that scale, so the critics compute the same function; what changes is that the weights' norm no longer
    # grows, so Adam's steps keep their relative size (the effective learning rate) all run long.  Only where the
    # critics are layer-normalized (critic_layer_norm resolved on); true is refused otherwise.
    critic_weight_norm: Any = attr.ib(default=False, validator=strict_bool)  # bool
    # --- the network (issue #56; docs/fast_sac_network.md) ---
    # The activation after each hidden layer of the actor and both critics (every ML-Agents Swish in them): "swish"
    # (ML-Agents' x * sigmoid(x)) or "relu" (the SAC paper's and Stable-Baselines3's).  null = swish.
    network_activation: Optional[str] = attr.ib(
        default=None, validator=attr.validators.optional(one_of(*NetworkRecipe.ACTIVATIONS)))
    # The initialization of every linear layer of the actor and both critics: "mlagents" (ML-Agents': weights normal
    # of std 1/sqrt(fan_in), biases 0, the action heads scaled by 0.2) or "torch" (PyTorch's default of nn.Linear,
    # as in Stable-Baselines3's SAC).  null = mlagents.
    network_init: Optional[str] = attr.ib(default=None, validator=attr.validators.optional(one_of(*NetworkRecipe.INITS)))
    # --- the update's arithmetic (issue #55; docs/fast_sac_precision.md) ---
    # The products of the hidden layers (256+ inputs and outputs) of the actor and both critics during a gradient
    # update: "fp32", or "bf16" (operands and each product rounded to bf16, accumulated in fp32; biases, parameters,
    # Adam, acting and the ONNX export stay fp32), or "auto" (bf16 where the CPU multiplies bf16 in hardware:
    # AVX-512 BF16 or AMX, and a 256x256 layer's products timed at start-up take at most 0.75x fp32's CPU in bf16; fp32
    # elsewhere, where oneDNN would emulate it at about 5x fp32's time, and with critic_batch_renorm, whose
    # critics bf16 hurt).  null = auto.
    update_precision: Optional[str] = attr.ib(
        default=None, validator=attr.validators.optional(one_of(*UPDATE_PRECISIONS)))

    @batch_renorm_momentum.validator
    def _check_momentum(self, attribute: "attr.Attribute", value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
            fail(attribute.name, value, "a number in (0, 1], e.g. 0.01")

    @adam_beta1.validator
    def _check_beta1(self, attribute: "attr.Attribute", value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
            fail(attribute.name, value, "a number in [0, 1), e.g. 0.9 (PyTorch) or 0.5 (CrossQ)")

    @critic_value_bins.validator
    def _check_value_bins(self, attribute: "attr.Attribute", value: Any) -> None:
        if value == 1:
            fail(attribute.name, value, "0 (scalar critics) or at least 2 bins, e.g. 101")

    @critic_weight_norm.validator
    def _check_weight_norm(self, attribute: "attr.Attribute", value: Any) -> None:
        if value and (self.critic_layer_norm is False or self.critic_batch_renorm):
            fail(attribute.name, value, "false unless the critics are layer-normalized (critic_layer_norm null or "
                 "true, critic_batch_renorm false): the projection keeps the critics' function only where a layer "
                 "normalization follows each hidden layer")

    @critic_batch_renorm.validator
    def _check_batch_renorm(self, attribute: "attr.Attribute", value: Any) -> None:
        if value and self.critic_layer_norm is True:
            fail(attribute.name, value, "false while critic_layer_norm is true (batch renormalization replaces the "
                 "critics' layer normalization: set critic_layer_norm to null or false)")

    def batch_renorm_spec(self) -> Optional[Tuple[float, int]]:
        """(momentum, warm-up steps) of the critics' batch renormalization, or None without ``critic_batch_renorm``."""
        if not self.critic_batch_renorm:
            return None
        return float(self.batch_renorm_momentum), int(self.batch_renorm_warmup)

    def _crossq_or_sac(self, value: Any, crossq: Any, sac: Any) -> Any:
        """``value`` when set, else CrossQ's ``crossq`` with ``critic_batch_renorm`` and SAC's ``sac`` without."""
        if value is not None:
            return value
        return crossq if self.critic_batch_renorm else sac

    def resolved_adam_beta1(self) -> float:
        """``adam_beta1``, or when null, CrossQ's 0.5 with ``critic_batch_renorm`` and PyTorch's 0.9 without."""
        return float(self._crossq_or_sac(self.adam_beta1, 0.5, 0.9))

    def resolved_actor_update_every(self) -> int:
        """``actor_update_every``, or when null, CrossQ's 3 with ``critic_batch_renorm`` and 1 without."""
        return int(self._crossq_or_sac(self.actor_update_every, 3, 1))

    def resolved_n_step(self) -> int:
        """``n_step``, or when null, CrossQ's 1 with ``critic_batch_renorm`` and 2 without."""
        return int(self._crossq_or_sac(self.n_step, 1, 2))

    def update_bf16(self, device: Any) -> bool:
        """Whether the update's hidden-layer products run in bf16 on ``device`` (``update_precision`` resolved)."""
        precision = self.update_precision or "auto"
        if precision == "auto":
            # validated with SAC's critics only; with CrossQ's batch-renormalized critics a HalfCheetah-v5 run fell
            # from fp32's 7000 to 2141 at 100k (seed 0, bench/results/mujoco-table-2026-11-30/CONTINUE.md)
            return not self.critic_batch_renorm and auto_bf16(device)
        return precision == "bf16"

    def network_recipe(self) -> NetworkRecipe:
        """The actor's and the critics' activation and initialization (nulls resolved)."""
        return NetworkRecipe(self.network_activation or SWISH, self.network_init or MLAGENTS)

    def shift_pad(self, observation_specs: Sequence[Any]) -> int:
        """``random_shift_pad``, or when null, ``image_augment.automatic_shift_pad`` of the observations."""
        if self.random_shift_pad is not None:
            return int(self.random_shift_pad)
        return automatic_shift_pad(observation_specs)
