"""fast_sac settings: structuring from YAML dicts, defaults, validation messages, recurrent policies."""
import numpy as np
import pytest
import torch

from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions, TrainerSettings

from helpers import make_trainer
from tests.builders import behavior_spec, trajectory
from mlagents_plugins.fast_sac.settings import FastSACSettings


def _structure(hyper: dict, **extra) -> TrainerSettings:
    cfg = {"behaviors": {"B": dict(trainer_type="fast_sac", hyperparameters=hyper, **extra)}}
    return RunOptions.from_dict(cfg).behaviors["B"]


def test_yaml_dict_structures_to_fast_sac_settings():
    s = _structure({"batch_size": 64, "n_step": 3, "prioritized_replay": True, "steps_per_update": 2})
    hp = s.hyperparameters
    assert isinstance(hp, FastSACSettings)
    assert (hp.batch_size, hp.n_step, hp.prioritized_replay) == (64, 3, True)
    assert hp.reward_signal_steps_per_update == 2.0  # defaults to steps_per_update
    assert FastSACSettings().tau == 0.005


@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("batch_size", 0, "an integer >= 1"),
        ("buffer_size", -5, "an integer >= 1"),
        ("buffer_init_steps", -1, "an integer >= 0"),
        ("steps_per_update", 0.0, "a finite number > 0"),
        ("reward_signal_steps_per_update", -2.0, "a finite number > 0"),
        ("tau", 1.5, "a number in [0, 1]"),
        ("learning_rate", 0.0, "a finite number > 0"),
        ("init_entcoef", -0.1, "a finite number > 0"),
        ("n_step", 0, "an integer >= 1"),
        ("per_alpha", 2.0, "a number in [0, 1]"),
        ("per_beta", -0.5, "a number in [0, 1]"),
        ("discrete_target_entropy_scale", 3.0, "a number in [0, 1]"),
        ("continuous_target_entropy_scale", 50.0, "a number in [-10, 10]"),
        ("init_replay_from", "  ", "a replay file path or a run id"),
    ],
)
def test_bad_values_name_field_value_and_allowed_range(field, value, allowed):
    with pytest.raises(TrainerConfigError) as e:
        _structure({field: value})
    msg = str(e.value)
    assert f"hyperparameters.{field}" in msg and repr(value) in msg and allowed in msg


def test_recurrent_policy_from_yaml_builds_a_recurrent_fast_sac(tmp_path):
    """``network_settings.memory`` from a YAML: an LSTM policy and the recurrent optimizer (tests/fast_sac/
    test_recurrent.py has the rest)."""
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
    from mlagents.trainers.settings import NetworkSettings
    from mlagents_plugins.fast_sac.recurrent import RecurrentFastSACOptimizer
    from mlagents_plugins.fast_sac.trainer import FastSACTrainer

    s = _structure({"batch_size": 64, "burn_in": 2}, network_settings={"memory": {"memory_size": 16, "sequence_length": 4}})
    assert isinstance(s.network_settings.memory, NetworkSettings.MemorySettings) and s.hyperparameters.burn_in == 2
    trainer = FastSACTrainer("B", 10, s, True, False, 0, str(tmp_path / "B"))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, behavior_spec()))
    assert trainer.policy.use_recurrent and trainer.policy.m_size == 16
    assert isinstance(trainer.optimizer, RecurrentFastSACOptimizer)


def test_init_replay_from_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(TrainerConfigError, match="init_replay_from.*does not exist"):
        make_trainer(behavior_spec(), tmp_path, init_replay_from="no_such_run")


def test_non_bool_flags_rejected_when_built_directly():
    # (from YAML, cattr has already turned the value into a bool before validation)
    for field in ("actor_min_q", "compile_update", "prioritized_replay", "save_replay_buffer", "entropy_reward",
                  "critic_small_init", "critic_neutral_init"):
        with pytest.raises(TrainerConfigError, match=f"hyperparameters.{field} = 'yes' is invalid: it must be true"):
            FastSACSettings(**{field: "yes"})


def test_actor_min_q_automatic_default_follows_action_kind(tmp_path):
    assert not make_trainer(behavior_spec(cont=2), tmp_path / "c").optimizer.head.actor_min_q
    assert make_trainer(behavior_spec(cont=0, branches=(2,)), tmp_path / "d").optimizer.head.actor_min_q
    # hybrid: Q1, as with continuous actions alone (built-in sac's objective)
    assert not make_trainer(behavior_spec(cont=2, branches=(2, 2)), tmp_path / "h").optimizer.head.actor_min_q
    assert make_trainer(behavior_spec(cont=2, branches=(2,)), tmp_path / "hm", actor_min_q=True).optimizer.head.actor_min_q
    assert make_trainer(behavior_spec(cont=2), tmp_path / "m", actor_min_q=True).optimizer.head.actor_min_q


def test_entropy_reward_automatic_default_follows_action_kind(tmp_path):
    def in_targets(name, **kw):
        return make_trainer(behavior_spec(**kw["spec"]), tmp_path / name, **kw.get("hp", {})).optimizer.head.entropy_reward

    assert in_targets("c", spec=dict(cont=2)) is True
    assert in_targets("d", spec=dict(cont=0, branches=(3, 3))) is False
    assert in_targets("h", spec=dict(cont=2, branches=(2,))) is False
    assert in_targets("ct", spec=dict(cont=2), hp=dict(entropy_reward=False)) is False
    assert in_targets("dt", spec=dict(cont=0, branches=(3,)), hp=dict(entropy_reward=True)) is True


def test_entropy_reward_changes_the_critic_update(tmp_path):
    """The same update from the same replay and seeds moves the critics differently with and without the entropy
    terms in the targets (and identically when the value repeats, so the comparison itself is sound)."""
    spec = behavior_spec(cont=2)
    critics = []
    for name, value in (("a", True), ("b", True), ("c", False)):
        torch.manual_seed(0)
        trainer = make_trainer(spec, tmp_path / name, batch_size=16, buffer_init_steps=10 ** 6, entropy_reward=value,
                               compile_update=False, fast_cpu_matmul=False)
        rng = np.random.default_rng(1)
        for i in range(4):
            trainer._process_trajectory(trajectory(spec, 9, rng, done=i % 2 == 0))
        torch.manual_seed(1)
        trainer.update_once()
        critics.append([p.detach().clone() for p in trainer.optimizer.head.q_net.parameters()])
    assert all(torch.equal(x, y) for x, y in zip(critics[0], critics[1]))
    assert not all(torch.equal(x, y) for x, y in zip(critics[0], critics[2]))
