"""The release checkpoint fixtures (tests/data/release-0.1.0/<trainer>/): each trainer's behavior block, the stand-in
scene it trained on and for how long.  ``scripts/make_release_checkpoints.py`` writes them with the release code;
``tests/test_release_checkpoints.py`` loads them with the current code.  Only what every version has is used here: the
trainers' entry points and constructors, ML-Agents' settings and the in-process harness (``envs.harness``).
"""
import importlib
import os
from typing import Any, Dict

CHECKPOINT = "checkpoint.pt"
FIXTURE_JSON = "fixture.json"
RUN_ID = "fixture"
SEED = 3
STEPS = 400

_NETWORK = {"hidden_units": 16, "num_layers": 1, "normalize": True}
_OFFPOLICY = {"batch_size": 8, "buffer_size": 500, "buffer_init_steps": 100, "steps_per_update": 2.0,
              "compile_update": False}
_RUN = {"summary_freq": 200, "checkpoint_interval": 200, "time_horizon": 16, "keep_checkpoints": 1,
        "reward_signals": {"extrinsic": {"gamma": 0.95, "strength": 1.0}}}

#: trainer type -> its behavior block (as in a YAML config) and the stand-in scene it trains on.
FIXTURES: Dict[str, Dict[str, Any]] = {
    # Hybrid actions: the continuous and the per-branch temperatures, Q heads per discrete action.
    "fast_sac": {
        "scene": "hybrid",
        "settings": dict(_RUN, trainer_type="fast_sac", network_settings=_NETWORK, hyperparameters=dict(_OFFPOLICY)),
    },
    # The first-state RNG goes into the checkpoint (``Optimizer:taac_state``) with randomize_first_state_tau.
    "taac": {
        "scene": "balance",
        "settings": dict(_RUN, trainer_type="taac", network_settings=_NETWORK,
                         hyperparameters=dict(_OFFPOLICY, trajectory="linear", randomize_first_state_tau=True)),
    },
    # Hybrid actions, the model's consistency and game-over heads on, so every optional module is saved.
    "muzero_repr": {
        "scene": "hybrid",
        "settings": dict(_RUN, trainer_type="muzero_repr", network_settings=_NETWORK,
                         hyperparameters=dict(_OFFPOLICY, latent_size=8, model_hidden_units=16, model_num_layers=1,
                                              head_hidden_units=16, head_num_layers=1, num_unroll_steps=2,
                                              td_steps=3, support_size=3, train_game_over=True,
                                              train_repr_prediction=True)),
    },
    "impala": {
        "scene": "balance",
        "settings": dict(_RUN, trainer_type="impala", network_settings=_NETWORK,
                         hyperparameters={"batch_size": 32, "buffer_size": 64, "unroll_length": 8}),
    },
}


def register_plugins() -> None:
    """Our trainers in ML-Agents' plugin tables, as ``mlagents-learn``'s start-up puts them."""
    from mlagents import plugins as mla_plugins

    for name in FIXTURES:
        types, settings = importlib.import_module(f"mlagents_plugins.{name}.plugin").get_type_and_setting()
        mla_plugins.all_trainer_types.update(types)
        mla_plugins.all_trainer_settings.update(settings)


def checkpoint_dir(output_dir: str, behavior_name: str) -> str:
    """Where a run of ``train_in_process`` (run id ``RUN_ID``) keeps the behavior's ``checkpoint.pt``."""
    return os.path.join(output_dir, RUN_ID, behavior_name)


def train(name: str, output_dir: str, max_steps: int = STEPS, resume: bool = False):
    """``name``'s fixture run on its scene through the in-process harness (``mlagents-learn`` without Unity)."""
    from mlagents_plugins.envs.harness import train_in_process

    desc = FIXTURES[name]
    return train_in_process(dict(desc["settings"]), desc["scene"], max_steps=max_steps, seed=SEED,
                            output_dir=output_dir, run_id=RUN_ID, resume=resume)
