"""Every trainer of the package shares one ``RLTrainer`` skeleton (``trainer_base.PluginTrainerBase``)."""
import pytest
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import (
    BehavioralCloningSettings,
    NetworkSettings,
    TrainerSettings,
)

from mlagents_plugins.common.trainer_base import PluginTrainerBase
from mlagents_plugins.fast_sac.trainer import FastSACTrainer
from mlagents_plugins.impala.settings import ImpalaSettings
from mlagents_plugins.impala.trainer import ImpalaTrainer
from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer
from mlagents_plugins.taac.settings import TaacSettings
from mlagents_plugins.taac.trainer import TaacTrainer

TRAINERS = [FastSACTrainer, TaacTrainer, ImpalaTrainer, MuZeroReprTrainer]


@pytest.mark.parametrize("cls", TRAINERS, ids=lambda c: c.__name__)
def test_every_trainer_extends_the_one_skeleton(cls):
    assert issubclass(cls, PluginTrainerBase)
    for name in ("add_policy", "get_policy"):
        assert getattr(cls, name) is getattr(PluginTrainerBase, name), f"{cls.__name__} overrides {name}"


@pytest.mark.parametrize(
    "cls, hyperparameters",
    [(TaacTrainer, TaacSettings), (MuZeroReprTrainer, MuZeroReprSettings)],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_recurrent_policies_are_refused_at_construction(cls, hyperparameters, tmp_path):
    settings = TrainerSettings(
        trainer_type=cls.get_trainer_name(),
        hyperparameters=hyperparameters(),
        network_settings=NetworkSettings(memory=NetworkSettings.MemorySettings()),
    )
    with pytest.raises(TrainerConfigError, match="does not support recurrent policies"):
        cls("Walker", 1, settings, True, False, 0, str(tmp_path))


def test_taac_refuses_behavioral_cloning_before_anything_else(tmp_path):
    settings = TrainerSettings(
        trainer_type="taac",
        hyperparameters=TaacSettings(),
        behavioral_cloning=BehavioralCloningSettings(demo_path="x.demo"),
        network_settings=NetworkSettings(memory=NetworkSettings.MemorySettings()),
    )
    with pytest.raises(TrainerConfigError, match="behavioral_cloning is set for behavior 'Walker'"):
        TaacTrainer("Walker", 1, settings, True, False, 0, str(tmp_path))


def test_hyperparameters_seed_and_empty_policy_are_set(tmp_path):
    settings = TrainerSettings(trainer_type="impala", hyperparameters=ImpalaSettings())
    trainer = ImpalaTrainer("Walker", 1, settings, True, False, 7, str(tmp_path))
    assert trainer.hyperparameters is settings.hyperparameters and trainer.seed == 7
    assert trainer.get_policy("Walker") is None and trainer.optimizer is None
