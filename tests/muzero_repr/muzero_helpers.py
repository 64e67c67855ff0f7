"""muzero_repr test wiring: a trainer without an environment, filled replay (specs, trajectories: tests/builders.py)."""
import numpy as np
import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import TrainerSettings
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer
from tests.builders import trajectory


def muzero_reward(t: int) -> float:
    """Rewards of both signs (-1, -0.5, 0, 0.5, ...), so value and reward supports are used on both sides."""
    return 0.5 * t - 1.0


def make_trainer(spec: BehaviorSpec, tmp_path, load: bool = False, seed: int = 0, normalize: bool = False,
                 network_hidden_units: int = 16, network_num_layers: int = 1, **hyper) -> MuZeroReprTrainer:
    hp = dict(batch_size=8, buffer_size=300, buffer_init_steps=0, steps_per_update=1.0, latent_size=8,
              model_hidden_units=16, model_num_layers=1, head_hidden_units=16, head_num_layers=1,
              num_unroll_steps=3, td_steps=4, support_size=3,
              compile_update=False)  # compiling (seconds per trainer) is tested in test_muzero_compiled_update.py
    hp.update(hyper)
    settings = TrainerSettings(trainer_type="muzero_repr", hyperparameters=MuZeroReprSettings(**hp),
                               max_steps=10000, summary_freq=10**9)
    settings.network_settings.hidden_units = network_hidden_units
    settings.network_settings.num_layers = network_num_layers
    settings.network_settings.normalize = normalize
    trainer = MuZeroReprTrainer("B", 10, settings, True, load, seed, str(tmp_path / "B"))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    policy = trainer.create_policy(bid, spec)
    trainer.add_policy(bid, policy)
    return trainer


def fill(trainer: MuZeroReprTrainer, spec: BehaviorSpec, rng: np.random.Generator, n_traj: int = 6) -> None:
    for i in range(n_traj):
        trainer._process_trajectory(trajectory(spec, 5 + i, rng, done=(i % 2 == 0), interrupted=(i % 3 == 1),
                                               agent_id=f"a{i % 2}", reward=muzero_reward))


def save_checkpoint_at(trainer: MuZeroReprTrainer, step: int = 40) -> None:
    """Write the trainer's checkpoint as ``mlagents-learn`` does at ``step`` (the step the loaded run resumes at)."""
    trainer._step = step
    trainer.policy.set_step(step)
    trainer.save_model()


def drop_from_checkpoint(path, key: str, module: str = "Policy") -> None:
    """Remove ``key`` from ``module``'s saved state in the checkpoint at ``path``, as a checkpoint written before
    that state existed lacks it."""
    state = torch.load(path)
    del state[module][key]
    torch.save(state, path)
