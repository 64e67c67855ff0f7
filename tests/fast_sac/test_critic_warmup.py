"""``critic_warmup_updates``: the first updates train the critics alone (the actor and the temperatures, and their
Adam moments, stay as they were), then every update trains all three; the count lives in the critics' Adam state,
so a resumed run continues it (bench/results/tiny-defaults-2026-11-28)."""
import pytest
import torch
from mlagents.trainers.exception import TrainerConfigError

from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.sac.head import STAT_CRITIC_WARMUP
from tests.fast_sac.helpers import filled_trainer


def _snapshot(params):
    return [p.detach().clone() for p in params]


def _moved(before, params):
    return [not torch.equal(b, p.detach()) for b, p in zip(before, params)]


@pytest.mark.parametrize("spec_kw", [dict(cont=2), dict(cont=1, branches=(2, 3)), dict(cont=0, branches=(3,))])
def test_warmup_updates_move_the_critics_only_then_everything(tmp_path, spec_kw):
    trainer = filled_trainer(tmp_path, **spec_kw)
    head = trainer.optimizer.head
    head.critic_warmup_updates, head._warming_up = 3, True  # as critic_warmup_updates: 3 sets them
    actor = [p for p in trainer.policy.actor.parameters() if p.requires_grad]
    temps = [p for p in head.temperatures.parameters() if p.numel()]
    actor0, temps0, critics0 = _snapshot(actor), _snapshot(temps), _snapshot(head.q_params)
    for k in range(3):
        stats, _ = trainer.optimizer.update(trainer.sample_batch())
        assert stats[STAT_CRITIC_WARMUP] == 1.0, k
        assert head.critic_updates_taken() == k + 1
    assert not any(_moved(actor0, actor)) and not any(_moved(temps0, temps))
    assert all(head.adam.state.get(p, {}) == {} for p in actor + temps)  # no Adam step, no moments
    assert any(_moved(critics0, head.q_params))
    stats, _ = trainer.optimizer.update(trainer.sample_batch())
    assert stats[STAT_CRITIC_WARMUP] == 0.0
    assert any(_moved(actor0, actor)) and any(_moved(temps0, temps))
    # the actor's first Adam step is a first step (bias-corrected from zero moments), not the 4th
    assert int(head.adam.state[actor[0]]["step"]) == 1 and head.critic_updates_taken() == 4


def test_the_count_continues_from_the_critics_adam_state(tmp_path):
    """A resumed run loads Adam's state with the checkpoint: the warm-up is over when the critics had their steps."""
    trainer = filled_trainer(tmp_path, cont=2)
    head = trainer.optimizer.head
    head.critic_warmup_updates, head._warming_up = 2, True
    for _ in range(2):
        trainer.optimizer.update(trainer.sample_batch())
    saved = head.adam.state_dict()
    resumed = filled_trainer(tmp_path / "r", cont=2)
    resumed.optimizer.head.critic_warmup_updates, resumed.optimizer.head._warming_up = 2, True
    assert resumed.optimizer.head.warming_up()
    resumed.optimizer.head.adam.load_state_dict(saved)
    assert not resumed.optimizer.head.warming_up()


def test_setting_default_reaches_the_head_and_bad_values_are_refused(tmp_path):
    assert FastSACSettings().critic_warmup_updates == 0  # off by default (no candidate passed, the study)
    head = filled_trainer(tmp_path, cont=2).optimizer.head
    assert head.critic_warmup_updates == 0 and not head.warming_up()
    for bad in (-1, 2.5, True, "ten"):
        with pytest.raises(TrainerConfigError, match=f"critic_warmup_updates = {bad!r} is invalid.*integer >= 0"):
            FastSACSettings(critic_warmup_updates=bad)
