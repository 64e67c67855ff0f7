"""fast_sac / off-policy test wiring: a trainer without an env (specs and trajectories: tests/builders.py)."""
import numpy as np

from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import EncoderType, TrainerSettings
from mlagents_envs.base_env import BehaviorSpec

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import FastSACTrainer
from tests.builders import behavior_spec, trajectory


def make_trainer(
    spec: BehaviorSpec,
    tmp_path,
    load: bool = False,
    seed: int = 0,
    max_steps: int = 10000,
    encoder: str = "simple",
    normalize: bool = False,
    hidden_units: int = 16,
    num_layers: int = 1,
    **hyper,
) -> FastSACTrainer:
    """A fast_sac trainer with ``network_settings`` of ``num_layers`` layers of ``hidden_units``.
    ``compile_update`` is off unless given (as taac's and muzero_repr's test trainers): Inductor's first compile
    costs seconds to a minute a trainer, which the tests of intake, cadence, replay and settings do not need.  The
    compiled path is tested where it is named: ``compile_update=None`` (the default, automatic) or ``True``
    (test_compiled_update.py, test_whole_step.py, test_crossq.py), and through ``mlagents-learn`` in the end-to-end
    tests."""
    hp = dict(batch_size=8, buffer_size=200, buffer_init_steps=0, steps_per_update=1.0, compile_update=False)
    hp.update(hyper)
    settings = TrainerSettings(
        trainer_type="fast_sac", hyperparameters=FastSACSettings(**hp), max_steps=max_steps, summary_freq=10 ** 9
    )
    settings.network_settings.hidden_units = hidden_units
    settings.network_settings.num_layers = num_layers
    settings.network_settings.vis_encode_type = EncoderType(encoder)
    settings.network_settings.normalize = normalize
    trainer = FastSACTrainer("B", 10, settings, True, load, seed, str(tmp_path / "B"))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    policy = trainer.create_policy(behavior_id, spec)
    trainer.add_policy(behavior_id, policy)
    return trainer


def filled_trainer(tmp_path, actor_min_q=False, rng_seed: int = 1, compile_update=False, **spec_kw) -> FastSACTrainer:
    """A trainer (batch 16, never updating on its own) with 4 short trajectories in its replay."""
    spec = behavior_spec(**spec_kw)
    trainer = make_trainer(spec, tmp_path, batch_size=16, buffer_init_steps=10 ** 6, actor_min_q=actor_min_q,
                           compile_update=compile_update)
    rng = np.random.default_rng(rng_seed)
    for i in range(4):
        trainer._process_trajectory(trajectory(spec, 9, rng, done=i % 2 == 0))
    return trainer
