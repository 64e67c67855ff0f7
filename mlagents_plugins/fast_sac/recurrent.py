"""fast_sac with ``network_settings.memory``: an LSTM policy and LSTM critics trained on sequences from replay.

What a recurrent fast_sac is (docs/fast_sac.md "Recurrent policies"):

* **Policy**: ML-Agents' ``SimpleActor`` with its LSTM (observation encoders, ``num_layers`` x ``hidden_units``,
  an LSTM of ``memory_size / 2`` units, the action heads), acting through ``TorchPolicy`` (one memory per agent,
  zeros at an episode's start) and exported with ML-Agents' recurrent ONNX contract (``recurrent_in``,
  ``recurrent_out``, ``memory_size``).  Each step's memory (the one the policy acted from) is stored in replay
  (``offpolicy/sequences.py``).
* **Critics**: one recurrent body (ML-Agents' ``NetworkBody`` with an LSTM, the same shape as the policy's) shared
  by both Q heads, as DrQ shares its encoder between the two critics, and a Polyak-averaged target copy of it; the
  twin Q heads (``TwinQ``, ``num_layers`` x ``hidden_units`` on the LSTM output and the action) are the SAC head's.
  The critics' memory starts at zero at a window's first row, as built-in sac's critics do.
* **Windows**: ``batch_size / sequence_length`` windows per update (``batch_size`` keeps counting transitions, as
  in built-in sac), each ``burn_in + sequence_length`` rows of one trajectory chunk (``sequences.sequence_windows``);
  the policy starts from the memory stored at the window's first row.  Every network runs once over the window's
  observations followed by the last row's next observation, ``z = [o_0, o'_0, o'_1, ..., o'_{W-1}]``: position
  ``t`` holds the state at row ``t`` and position ``t + 1`` the state after it (``o'_t = o_{t+1}`` inside a chunk,
  the stored final observation at the chunk's end), so a terminal or a time-out inside the window is the exact
  last row of its chunk and nothing after it is trained on.
* **Losses**: ``losses.sac_losses`` unchanged, on the trained rows only (the burn-in rows and the rows after the
  chunk's end are left out, so every mean is over real transitions): each trained row's state is the pair (policy
  LSTM output, critic LSTM output) at its position, its bootstrap state the pair at the position after its n-step
  window (the target critics' output there), its n-step window the rows after it inside the window and chunk.
"""
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, cast

import attr
import numpy as np
from mlagents.torch_utils import default_device, torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.optimizer.torch_optimizer import TorchOptimizer
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.torch_entities.networks import NetworkBody
from mlagents_envs.base_env import BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.common.tensor_utils import check_shape, polyak_update_, target_copy
from mlagents_plugins.common.bf16_matmul import use_bf16_linears_
from mlagents_plugins.common.fast_kernels import fuse_swish_
from mlagents_plugins.common.tensor_utils import stream_discounts
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.offpolicy import sequences
from mlagents_plugins.replay.buffer import ReplayBuffer
from mlagents_plugins.sac import losses
from mlagents_plugins.sac.head import SACHead
from mlagents_plugins.sac.losses import SACBatch, SACLosses
from mlagents_plugins.sac.networks import sample_for_training

#: ``stream_rewards(idx [B, W], window rows) -> [B, W, S]`` float32 rewards per stream, strength applied.
StreamRewards = Callable[[np.ndarray, Dict[str, np.ndarray]], np.ndarray]

STAT_TRAINED_ROWS = "Policy/Trained Rows Per Sequence"  # mean trained rows of a window (<= sequence_length)


def check_memory_settings(behavior_name: str, trainer_settings: TrainerSettings) -> None:
    """Refuse what a recurrent fast_sac cannot honour, naming the field (``TrainerConfigError``); ML-Agents' own
    ``MemorySettings`` already refuses an odd or non-positive ``memory_size``."""
    hp = cast(FastSACSettings, trainer_settings.hyperparameters)
    memory = trainer_settings.network_settings.memory
    where = f"behavior '{behavior_name}'"
    if memory is None:
        if hp.burn_in:
            raise TrainerConfigError(
                f"hyperparameters.burn_in = {hp.burn_in} for {where}, but network_settings.memory is not set: burn-in "
                "only refreshes a recurrent policy's memory; allowed: burn_in: 0 without memory."
            )
        return
    if memory.memory_size % 2 != 0 or memory.memory_size <= 0:  # MemorySettings checks this too
        raise TrainerConfigError(
            f"network_settings.memory.memory_size = {memory.memory_size} for {where}: allowed: a positive even number "
            "(the LSTM's hidden and cell states are half each)."
        )
    if memory.sequence_length < 1:
        raise TrainerConfigError(
            f"network_settings.memory.sequence_length = {memory.sequence_length} for {where}: allowed: an integer >= 1."
        )
    window = memory.sequence_length + hp.burn_in
    if window > hp.buffer_size:
        raise TrainerConfigError(
            f"network_settings.memory.sequence_length = {memory.sequence_length} (plus hyperparameters.burn_in = "
            f"{hp.burn_in}) for {where} is above the replay capacity hyperparameters.buffer_size = {hp.buffer_size}; "
            "allowed: sequence_length + burn_in <= buffer_size."
        )
    if memory.sequence_length > hp.batch_size:
        raise TrainerConfigError(
            f"network_settings.memory.sequence_length = {memory.sequence_length} for {where} is above "
            f"hyperparameters.batch_size = {hp.batch_size} (transitions per update, batch_size / sequence_length "
            "sequences); allowed: sequence_length <= batch_size."
        )
    if hp.prioritized_replay:
        raise TrainerConfigError(
            f"hyperparameters.prioritized_replay = true for {where} with network_settings.memory: prioritized "
            "sampling of sequences is not implemented; allowed: prioritized_replay: false with memory."
        )
    if hp.compile_update:
        raise TrainerConfigError(
            f"hyperparameters.compile_update = true for {where} with network_settings.memory: the recurrent update "
            "trains on a varying number of rows per batch and runs eagerly; allowed: null or false with memory."
        )
    # the recurrent update's SAC head takes none of these (fast_sac/optimizer.py does): refused, not ignored
    # (adam_beta1 and actor_update_every: null resolves to the allowed value without critic_batch_renorm)
    for field, value, allowed in (
        ("critic_batch_renorm", hp.critic_batch_renorm, (False,)),
        ("critic_neutral_init", hp.critic_neutral_init, (False,)),
        ("critic_warmup_updates", hp.critic_warmup_updates, (0,)),
        ("critic_hidden_units", hp.critic_hidden_units, (None,)),
        ("critic_weight_norm", hp.critic_weight_norm, (False,)),
        ("adam_beta1", hp.adam_beta1, (None, 0.9)),
        ("actor_update_every", hp.actor_update_every, (None, 1)),
    ):
        if value is True or value not in allowed:  # (True == 1: actor_update_every true is refused, not read as 1)
            names = " or ".join("null" if a is None else str(a).lower() for a in allowed)
            raise TrainerConfigError(
                f"hyperparameters.{field} = {value} for {where} with network_settings.memory: the recurrent update "
                f"does not implement it; allowed: {names} with memory."
            )


def num_sequences(batch_size: int, sequence_length: int) -> int:
    """Windows per update: ``batch_size`` transitions as sequences of ``sequence_length`` (built-in sac's count)."""
    return max(1, int(batch_size) // int(sequence_length))


class RecurrentBatch(NamedTuple):
    """One minibatch of windows on the training device.  ``B`` windows of ``W`` rows, ``T = W + 1`` positions, ``R``
    trained rows, ``N`` n-step window, ``S`` streams, ``M`` memory size."""

    z: List[torch.Tensor]  # per observation: [B * T, ...] the window's observations then its last next observation
    memory: torch.Tensor  # [1, B, M] the policy's stored memory at each window's first row
    positions: int  # T
    sel_tm1: torch.Tensor  # [R] long: flat position (b * T + t) of each trained row
    sel_t: torch.Tensor  # [R] long: flat position of each trained row's bootstrap state
    a_tm1_cont: Optional[torch.Tensor]  # [R, C]
    a_tm1_disc: Optional[torch.Tensor]  # [R, K]
    mask_tm1: Optional[torch.Tensor]  # [R, A]
    r_t: torch.Tensor  # [R, N, S]
    discount_t: torch.Tensor  # [R, N, S]
    valid_t: torch.Tensor  # [R, N]
    mask_t: Optional[torch.Tensor]  # [R, A]
    trained_per_window: float  # mean trained rows per window (a stat)


def nstep_rows(valid: np.ndarray, train: np.ndarray, n_step: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Index arithmetic of the trained rows' n-step windows inside sampled windows.

    :param valid: [B, W] leading run of rows in the window's chunk; :param train: [B, W] the trained rows.
    :return: (b [R], t [R], steps [R, N] window positions (clipped into the window), steps_valid [R, N]) with
        ``steps_valid`` the leading run of valid positions; the bootstrap position is ``t + steps_valid.sum(1)``.
    """
    b, t = np.nonzero(train)
    w = valid.shape[1]
    k = np.arange(int(n_step), dtype=np.int64)
    steps = t[:, None] + k[None, :]
    inside = steps < w
    steps_c = np.minimum(steps, w - 1)
    steps_valid = np.cumprod(inside & valid[b[:, None], steps_c], axis=1).astype(bool)
    return b, t, steps_c, steps_valid


def sequence_batch(
    replay: ReplayBuffer,
    windows: sequences.SequenceWindows,
    n_step: int,
    spec: BehaviorSpec,
    stream_rewards: StreamRewards,
    gammas: Sequence[float],
    use_done: Sequence[float],
    device: torch.device,
) -> RecurrentBatch:
    """The ``RecurrentBatch`` of sampled windows (see the module docstring for ``z``)."""
    idx, valid, train = windows
    nb, w = idx.shape
    n_obs = len(spec.observation_specs)
    first = replay.gather(idx[:, 0], [offpolicy_rows.obs_field(i) for i in range(n_obs)] + [sequences.MEMORY])
    nexts = replay.gather(idx, [offpolicy_rows.next_obs_field(i) for i in range(n_obs)])
    fields = [offpolicy_rows.REWARD, offpolicy_rows.TERMINAL]
    a = spec.action_spec
    if a.continuous_size > 0:
        fields.append(offpolicy_rows.CONT_ACTION)
    if a.discrete_size > 0:
        fields += [offpolicy_rows.DISC_ACTION, offpolicy_rows.ACTION_MASK, offpolicy_rows.NEXT_ACTION_MASK]
    rows = replay.gather(idx, fields)

    z = []
    for i in range(n_obs):
        seq = np.concatenate([first[offpolicy_rows.obs_field(i)][:, None], nexts[offpolicy_rows.next_obs_field(i)]],
                             axis=1)  # [B, T, ...]
        z.append(offpolicy_rows.obs_to_tensor(seq.reshape((nb * (w + 1),) + seq.shape[2:]), device))

    b, t, steps, steps_valid = nstep_rows(valid, train, n_step)
    rewards = stream_rewards(idx, rows)  # [B, W, S]
    terminal = rows[offpolicy_rows.TERMINAL].astype(np.float32)
    discount = stream_discounts(np.asarray(gammas, np.float32), terminal, np.asarray(use_done, np.float32))
    k = steps_valid.sum(axis=1)  # >= 1: the trained row itself is valid
    last = t + k - 1
    positions = w + 1

    def dev(x: np.ndarray, dtype=None) -> torch.Tensor:
        out = torch.from_numpy(np.ascontiguousarray(x))
        return out.to(device, dtype=dtype) if dtype is not None else out.to(device)

    bb = b[:, None]
    return RecurrentBatch(
        z=z,
        memory=dev(first[sequences.MEMORY][None]),
        positions=positions,
        sel_tm1=dev(b * positions + t),
        sel_t=dev(b * positions + t + k),
        a_tm1_cont=dev(rows[offpolicy_rows.CONT_ACTION][b, t]) if a.continuous_size > 0 else None,
        a_tm1_disc=dev(rows[offpolicy_rows.DISC_ACTION][b, t], torch.int64) if a.discrete_size > 0 else None,
        mask_tm1=dev(rows[offpolicy_rows.ACTION_MASK][b, t], torch.float32) if a.discrete_size > 0 else None,
        r_t=dev(rewards[bb, steps].astype(np.float32)),
        discount_t=dev(discount[bb, steps].astype(np.float32)),
        valid_t=dev(steps_valid),
        mask_t=dev(rows[offpolicy_rows.NEXT_ACTION_MASK][b, last], torch.float32) if a.discrete_size > 0 else None,
        trained_per_window=float(train.sum()) / max(1, nb),
    )


def critic_feature_spec(size: int) -> ObservationSpec:
    """The Q heads' input: the critic LSTM's output as one vector observation."""
    return ObservationSpec((int(size),), (DimensionProperty.NONE,), ObservationType.DEFAULT, "critic_memory")


class RecurrentFastSACOptimizer(TorchOptimizer):
    """The SAC head on LSTM outputs: the policy's for the actor, a recurrent critic body's for the twin Q heads
    (module docstring).  Same update cadence, stats and Adam as fast_sac without memory."""

    def __init__(self, policy: TorchPolicy, trainer_settings: TrainerSettings):
        super().__init__(policy, trainer_settings)
        hp = cast(FastSACSettings, trainer_settings.hyperparameters)
        self.hyperparameters = hp
        self.device = default_device()
        ns = policy.network_settings
        self.action_spec = policy.behavior_spec.action_spec
        self.branches = list(self.action_spec.discrete_branches)
        self.stream_names = list(self.reward_signals.keys())
        self.gammas = [self.reward_signals[n].gamma for n in self.stream_names]
        self.use_done = [0.0 if self.reward_signals[n].ignore_done else 1.0 for n in self.stream_names]
        self.memory_size = ns.memory.memory_size
        self.sequence_length = ns.memory.sequence_length
        # The critics' recurrent body: observation encoders, the MLP and an LSTM of the policy's shape.
        self.critic_body = NetworkBody(policy.behavior_spec.observation_specs, ns).to(self.device)
        hp.network_recipe().apply_(self.critic_body)
        fuse_swish_(self.critic_body)
        if hp.update_bf16(self.device):
            use_bf16_linears_(self.critic_body)  # before the target copy (common/bf16_matmul.py)
        self.target_critic_body = target_copy(self.critic_body).to(self.device)
        head_settings = attr.evolve(ns, memory=None, normalize=False)
        self.head = SACHead(
            hp,
            self.action_spec,
            self.stream_names,
            [critic_feature_spec(self.memory_size // 2)],
            head_settings,
            actor_params=[p for p in policy.actor.parameters() if p.requires_grad],
            loss_fn=self._total_loss,
            compile_update=False,  # varying trained rows per batch (check_memory_settings refuses true)
            name="fast_sac recurrent update",
            max_steps=trainer_settings.max_steps,
            device=self.device,
            extra_params=[p for p in self.critic_body.parameters() if p.requires_grad],
            small_critic_init=hp.critics_start_small(self.action_spec.continuous_size, len(self.branches)),
            recipe=hp.network_recipe(),
            bf16_update=hp.update_bf16(self.device),
            value_bins=hp.critic_value_bins,
        )
        self.body_params = [p for p in self.critic_body.parameters() if p.requires_grad]
        self.target_body_params = [
            p for p, o in zip(self.target_critic_body.parameters(), self.critic_body.parameters()) if o.requires_grad
        ]
        self._normalize = ns.normalize

    @property
    def critic(self):
        return self.head.q_net.q1

    def sac_batch(self, batch: RecurrentBatch) -> Tuple[SACBatch, List[torch.Tensor]]:
        """The trained rows as a ``SACBatch`` whose states are ``[policy LSTM output, critic LSTM output]`` pairs
        (bootstrap: the target critic body's output); the policy's pass keeps its gradient."""
        nb = batch.memory.shape[1]
        check_shape("memory", batch.memory, (1, nb, self.memory_size))
        t = batch.positions
        actor_out, _ = self.policy.actor.network_body(batch.z, memories=batch.memory, sequence_length=t)
        zeros = torch.zeros_like(batch.memory)
        critic_out, _ = self.critic_body(batch.z, memories=zeros, sequence_length=t)
        with torch.no_grad():
            target_out, _ = self.target_critic_body(batch.z, memories=zeros, sequence_length=t)
        check_shape("policy LSTM output", actor_out, (nb * t, self.memory_size // 2))
        sb = SACBatch(
            s_tm1=[actor_out[batch.sel_tm1], critic_out[batch.sel_tm1]],
            a_tm1_cont=batch.a_tm1_cont,
            a_tm1_disc=batch.a_tm1_disc,
            mask_tm1=batch.mask_tm1,
            r_t=batch.r_t,
            discount_t=batch.discount_t,
            valid_t=batch.valid_t,
            s_t=[actor_out[batch.sel_t].detach(), target_out[batch.sel_t]],
            mask_t=batch.mask_t,
        )
        return sb, [actor_out, critic_out]

    def compute_losses(self, batch: RecurrentBatch) -> SACLosses:
        """The four SAC losses of the trained rows (``losses.sac_losses``); no parameter changes."""
        if self._normalize:
            body = self.policy.actor.network_body
            self.critic_body.copy_normalization(body)
            self.target_critic_body.copy_normalization(body)
        sb, _ = self.sac_batch(batch)
        head = self.head
        q_net, q_target = head.q_net, head.q_target
        action_model = self.policy.actor.action_model

        def actor(state, mask):
            return sample_for_training(action_model, state[0], mask)

        def critic(state, cont):
            return q_net([state[1]], cont)

        def frozen_critic(state, cont, first_only):
            return q_net.frozen([state[1].detach()], cont, first_only)

        def target_critic(state, cont):
            return q_target([state[1]], cont)

        nets = losses.SACNetworks(actor, critic, frozen_critic, target_critic,
                                  head.temperatures.log_alpha_cont, head.temperatures.log_alpha_disc)
        return losses.sac_losses(nets, sb, head.loss_settings())  # joint_critic False: batch renorm is refused

    def _total_loss(self, batch: RecurrentBatch) -> Tuple[torch.Tensor, SACLosses]:
        out = self.compute_losses(batch)
        return out.total(), out

    def update(self, batch: RecurrentBatch) -> Tuple[Dict[str, float], torch.Tensor]:
        """One SAC step on the trained rows, then the critic body's Polyak update.  Returns (stats, |TD| [R])."""
        stats, out = self.head.update(batch, self.policy.get_current_step())
        polyak_update_(self.body_params, self.target_body_params, self.hyperparameters.tau)
        stats[STAT_TRAINED_ROWS] = batch.trained_per_window
        return stats, out.td_abs

    def get_modules(self):
        modules = {
            "Optimizer:q_network": self.head.q_net,
            "Optimizer:target_q_network": self.head.q_target,
            "Optimizer:critic_memory_body": self.critic_body,
            "Optimizer:target_critic_memory_body": self.target_critic_body,
            "Optimizer:temperatures": self.head.temperatures,
            "Optimizer:adam": self.head.adam,
        }
        for provider in self.reward_signals.values():
            modules.update(provider.get_modules())
        return modules
