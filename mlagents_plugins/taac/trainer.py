"""``TaacTrainer``: TAAC on the shared off-policy base (intake, cadence, replay persistence).

TAAC-specific parts: the continuous-only check at start-up, the step extras (the rollout's ``tau^-``,
``tau``, switch and repeat count, stored by the base as replay columns next to the standard transition
row), and ``update_once``, which samples windows of ``mini_batch_length`` rows for the compare-through
return.
"""
import math
from typing import Dict, cast

import numpy as np

from mlagents.torch_utils import torch, default_device
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import TrainerSettings
from mlagents.trainers.trajectory import Trajectory
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.offpolicy.extras import StepExtras
from mlagents_plugins.offpolicy.trainer import OffPolicyTrainerBase
from mlagents_plugins.taac import stats
from mlagents_plugins.taac.optimizer import TaacBatch, TaacOptimizer
from mlagents_plugins.taac.policy import REPEATS, SWITCH, TAU, TAU_PREV, TaacPolicy, taac_step_extras
from mlagents_plugins.taac.settings import TaacSettings
from mlagents_plugins.taac.trajectories import trajectory_size

TRAINER_NAME = "taac"
__all__ = ["TaacTrainer", "TRAINER_NAME", "TAU_PREV", "TAU", "SWITCH", "REPEATS"]
# Settings passed to ``TaacActor`` under their own names.
ACTOR_SETTINGS = (
    "inverse_mode", "num_critic_replicas", "max_repeat_steps", "advantage_clipping", "init_action_temperature",
    "init_switch_temperature", "critic_layer_norm", "critic_small_init", "critic_neutral_init",
)


class TaacTrainer(OffPolicyTrainerBase):
    hyperparameters: TaacSettings
    optimizer: TaacOptimizer

    @classmethod
    def check_settings(cls, behavior_name: str, trainer_settings: TrainerSettings) -> None:
        if trainer_settings.behavioral_cloning is not None:
            # ML-Agents' BCModule calls Actor.get_action_and_stats / get_stats, which the two-stage actor
            # (proposal + switch) does not have in that form.
            raise TrainerConfigError(
                f"behavioral_cloning is set for behavior '{behavior_name}', but trainer_type 'taac' does not "
                "support it; remove the behavioral_cloning section (GAIL as a reward signal is supported)."
            )
        super().check_settings(behavior_name, trainer_settings)

    @staticmethod
    def get_trainer_name() -> str:
        return TRAINER_NAME

    # ------------------------------------------------------------------ policy / optimizer
    def _check_action_spec(self, behavior_spec: BehaviorSpec) -> None:
        a = behavior_spec.action_spec
        if a.discrete_size > 0 or a.continuous_size == 0:
            raise TrainerConfigError(
                f"trainer_type 'taac' supports continuous actions only, but behavior '{self.brain_name}' has "
                f"{a.continuous_size} continuous action(s) and discrete branches {tuple(a.discrete_branches)}; "
                "use fast_sac or sac for discrete or hybrid action spaces."
            )

    def create_policy(self, parsed_behavior_id: BehaviorIdentifiers, behavior_spec: BehaviorSpec) -> TaacPolicy:
        self._check_action_spec(behavior_spec)
        hp = self.hyperparameters
        actor_kwargs = {name: getattr(hp, name) for name in ACTOR_SETTINGS}
        actor_kwargs["critic_layer_norm"] = hp.critics_layer_normed(self.trainer_settings.network_settings.hidden_units)
        actor_kwargs.update(
            stream_names=[s.value for s in self.trainer_settings.reward_signals.keys()], kind=hp.trajectory_kind
        )
        return TaacPolicy(
            self.seed,
            behavior_spec,
            self.trainer_settings.network_settings,
            actor_kwargs,
            randomize_first_state_tau=hp.randomize_first_state_tau,
        )

    def create_optimizer(self) -> TaacOptimizer:
        return TaacOptimizer(cast(TaacPolicy, self.policy), self.trainer_settings)

    # ------------------------------------------------------------------ replay layout / intake
    def _tau_size(self, spec: BehaviorSpec) -> int:
        return trajectory_size(self.hyperparameters.trajectory_kind, spec.action_spec.continuous_size)

    def step_extras(self, spec: BehaviorSpec) -> StepExtras:
        """``tau_prev``, ``tau``, ``switch``, ``repeats`` of every rollout step (see ``taac.policy``)."""
        if getattr(self, "_extras_for", None) is not spec:
            self._extras, self._extras_for = taac_step_extras(self._tau_size(spec)), spec
        return self._extras

    def observe_rows(self, rows: Dict[str, np.ndarray], trajectory: Trajectory) -> None:
        """Rollout stats: a run of one trajectory ends where the next step switched, and at the episode's end."""
        repeats, switch = rows[REPEATS], rows[SWITCH]
        ends = list(repeats[:-1][switch[1:]])
        if trajectory.done_reached:
            ends.append(repeats[-1])
        if ends:
            self._stats_reporter.add_stat(stats.MEAN_REPEAT_LENGTH, float(np.mean(ends)))
        self._stats_reporter.add_stat(stats.ROLLOUT_KEEP_FRACTION, float(np.mean(~switch)))

    # ------------------------------------------------------------------ update
    def sample_batch(self) -> TaacBatch:
        hp = self.hyperparameters
        length = hp.window_length
        n_seq = int(math.ceil(hp.batch_size / length))
        # Uniform starts over all rows (windows may be cut short by a segment end; ``valid`` masks them).
        # Drawing only full windows would weight a segment's last rows, its terminal among them, by 1/length.
        starts = self.replay.sample_indices(n_seq, self.rng)
        idx, valid = self.replay.sequence_indices(starts, length)
        rows = self.replay.gather(idx)
        flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in rows.items()}
        rewards = self.stream_rewards(flat[offpolicy_rows.REWARD], lambda: flat).reshape(n_seq, length, -1)
        device = default_device()
        n_obs = len(self.policy.behavior_spec.observation_specs)
        return TaacBatch(
            obs=offpolicy_rows.gather_obs(rows, n_obs, False, device),
            next_obs=offpolicy_rows.gather_obs(rows, n_obs, True, device),
            tau_prev=torch.as_tensor(rows[TAU_PREV], device=device),
            tau=torch.as_tensor(rows[TAU], device=device),
            switch=torch.as_tensor(rows[SWITCH], device=device),
            rewards=torch.as_tensor(rewards, device=device),
            terminal=torch.as_tensor(rows[offpolicy_rows.TERMINAL], device=device),
            valid=torch.as_tensor(valid, device=device),
        )

    def update_once(self) -> Dict[str, float]:
        return self.optimizer.update(self.sample_batch())
