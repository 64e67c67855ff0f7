"""Drop-in configs: a config written for built-in sac loads unchanged as fast_sac, taac or muzero_repr, one
written for ppo as impala; built-in names land on our fields, and a setting with no equivalent is refused
with a message saying so (``mlagents_plugins.common.config_compat``)."""
import copy

import cattr
import pytest
from mlagents.plugins.trainer_type import register_trainer_plugins
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.ppo.optimizer_torch import PPOSettings
from mlagents.trainers.sac.optimizer_torch import SACSettings
from mlagents.trainers.settings import RunOptions, ScheduleType, TrainerSettings

from mlagents_plugins.common import config_compat
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.impala.settings import ImpalaSettings
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.taac.settings import TaacSettings

# Written the way ML-Agents' example configs are (config/sac/*.yaml and config/ppo/*.yaml of the
# ml-agents repository: every hyperparameter of the built-in trainer spelled out).
SAC_EXAMPLE = {
    "trainer_type": "sac",
    "hyperparameters": {
        "learning_rate": 0.0003, "learning_rate_schedule": "constant", "batch_size": 64, "buffer_size": 200000,
        "buffer_init_steps": 0, "tau": 0.01, "steps_per_update": 10.0, "save_replay_buffer": False,
        "init_entcoef": 0.5, "reward_signal_steps_per_update": 10.0,
    },
    "network_settings": {"normalize": True, "hidden_units": 64, "num_layers": 2, "vis_encode_type": "simple"},
    "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
    "keep_checkpoints": 5, "max_steps": 200000, "time_horizon": 1000, "summary_freq": 12000,
}
PPO_EXAMPLE = {
    "trainer_type": "ppo",
    "hyperparameters": {
        "batch_size": 64, "buffer_size": 12000, "learning_rate": 0.0003, "beta": 0.001, "epsilon": 0.25,
        "lambd": 0.93, "num_epoch": 4, "learning_rate_schedule": "linear", "beta_schedule": "constant",
        "epsilon_schedule": "linear",
    },
    "network_settings": {"normalize": True, "hidden_units": 128, "num_layers": 2, "vis_encode_type": "simple"},
    "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
    "keep_checkpoints": 5, "max_steps": 500000, "time_horizon": 1000, "summary_freq": 12000,
}


def _builtin_defaults(trainer_type, hyperparameters):
    """ML-Agents' own complete config for a built-in trainer at its defaults (what it writes to configuration.yaml)."""
    return cattr.unstructure(TrainerSettings(trainer_type=trainer_type, hyperparameters=hyperparameters))


def _load_as(behavior, trainer_type):
    register_trainer_plugins()
    behavior = copy.deepcopy(behavior)
    behavior["trainer_type"] = trainer_type
    try:
        return RunOptions.from_dict({"behaviors": {"B": behavior}}).behaviors["B"]
    finally:
        TrainerSettings.default_override = None


@pytest.mark.parametrize("ours", ["fast_sac", "taac", "muzero_repr"])
@pytest.mark.parametrize("source", ["example", "defaults"])
def test_a_sac_config_loads_unchanged_with_our_off_policy_trainers(ours, source):
    behavior = SAC_EXAMPLE if source == "example" else _builtin_defaults("sac", SACSettings())
    hp = _load_as(behavior, ours).hyperparameters
    given = behavior["hyperparameters"]
    assert (hp.batch_size, hp.buffer_size, hp.buffer_init_steps) == (
        given["batch_size"], given["buffer_size"], given["buffer_init_steps"])
    assert hp.steps_per_update == given["steps_per_update"] and hp.learning_rate == given["learning_rate"]
    if ours == "taac":
        assert isinstance(hp, TaacSettings)
        assert hp.target_update_tau == given["tau"] and hp.init_action_temperature == given["init_entcoef"]
        assert hp.tau is None and hp.init_entcoef is None  # moved onto taac's own fields
    else:
        assert isinstance(hp, (FastSACSettings, MuZeroReprSettings))
        assert hp.tau == given["tau"] and hp.init_entcoef == given["init_entcoef"]


@pytest.mark.parametrize("source", ["example", "defaults"])
def test_a_ppo_config_loads_unchanged_as_impala_with_each_name_mapped(source):
    behavior = PPO_EXAMPLE if source == "example" else _builtin_defaults("ppo", PPOSettings())
    hp = _load_as(behavior, "impala").hyperparameters
    given = behavior["hyperparameters"]
    assert isinstance(hp, ImpalaSettings)
    assert hp.entropy_weight == given["beta"] and hp.surrogate_clip == given["epsilon"]
    assert hp.trace_lambda == given["lambd"] and hp.max_reuse == given["num_epoch"]
    assert hp.entropy_weight_schedule == ScheduleType(given["beta_schedule"])
    assert hp.surrogate_clip_schedule == ScheduleType(given["epsilon_schedule"])
    assert hp.learning_rate_schedule == ScheduleType(given["learning_rate_schedule"])
    assert all(getattr(hp, name) is None for name in config_compat.aliases(ImpalaSettings))


@pytest.mark.parametrize("ours, source, field", [
    ("fast_sac", PPO_EXAMPLE, "beta"), ("taac", PPO_EXAMPLE, "beta"), ("muzero_repr", PPO_EXAMPLE, "beta"),
    ("impala", SAC_EXAMPLE, "tau"),
])
def test_a_builtin_setting_with_no_equivalent_is_refused_by_name(ours, source, field):
    with pytest.raises(TrainerConfigError) as err:
        _load_as(source, ours)
    message = str(err.value)
    assert f"hyperparameters.{field} = " in message and f"no equivalent in {ours}" in message


def test_every_alias_names_a_real_field_and_every_builtin_name_is_covered():
    for cls, builtin in [(FastSACSettings, SACSettings), (TaacSettings, SACSettings), (MuZeroReprSettings, SACSettings),
                         (ImpalaSettings, PPOSettings)]:
        fields = cattr.unstructure(builtin()).keys()
        ours = {f.name for f in __import__("attr").fields(cls)}
        assert set(fields) <= ours, (cls.__name__, set(fields) - ours)
        for alias, target in config_compat.aliases(cls).items():
            assert target in ours and target not in config_compat.aliases(cls)


def test_alias_and_our_name_both_set_differently_is_an_error_naming_both():
    with pytest.raises(TrainerConfigError, match="'tau'.*'target_update_tau'|target_update_tau.*tau"):
        TaacSettings(tau=0.01, target_update_tau=0.02)
    with pytest.raises(TrainerConfigError, match="given as 'epsilon'"):
        ImpalaSettings(epsilon=1.5)
    assert ImpalaSettings(epsilon=0.3, surrogate_clip=0.3).surrogate_clip == 0.3


def test_impala_linear_surrogate_clip_schedule_decays_like_ppo_epsilon():
    from mlagents.trainers.torch_entities.networks import SimpleActor

    from mlagents_plugins.impala.optimizer import TorchImpalaOptimizer
    from mlagents_plugins.impala.policy import ImpalaPolicy
    from tests.impala.helpers import impala_spec, trainer_settings

    settings = trainer_settings(surrogate_clip=0.3, surrogate_clip_schedule=ScheduleType.LINEAR)
    policy = ImpalaPolicy(0, impala_spec(2), settings.network_settings, SimpleActor, {})
    opt = TorchImpalaOptimizer(policy, settings)
    clips = []
    for step in (0, settings.max_steps // 4, settings.max_steps):
        policy.set_step(step)
        clips.append(opt.surrogate_clip_now())
    # linear from 0.3 to 0.1 over max_steps, as ML-Agents decays ppo's epsilon
    assert clips == pytest.approx([0.3, 0.25, 0.1], abs=1e-6)
    constant = TorchImpalaOptimizer(policy, trainer_settings(surrogate_clip=0.3))
    assert constant.surrogate_clip_now() == pytest.approx(0.3)


def test_docs_table_lists_every_alias_and_every_refused_setting():
    import os

    text = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "configs.md")).read()
    for cls in (TaacSettings, ImpalaSettings):
        for alias, ours in config_compat.aliases(cls).items():
            assert f"| `{alias}` (" in text and f"| `{ours}` |" in text, (alias, ours)
    for cls in (FastSACSettings, ImpalaSettings):
        for name in config_compat.no_equivalents(cls):
            assert f"`{name}`" in text, name
