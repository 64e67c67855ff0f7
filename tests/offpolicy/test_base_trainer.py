"""OffPolicyTrainerBase: intake rows, update cadence, reward-signal cadence, replay save/resume (fast_sac as subclass)."""
import logging

import numpy as np
import pytest

from mlagents.trainers.agent_processor import AgentManagerQueue
from mlagents.trainers.settings import CuriositySettings, RewardSignalType

from helpers import make_trainer
from tests.builders import behavior_spec, trajectory
from mlagents_plugins.offpolicy import rows as R
from mlagents_plugins.replay.errors import ReplayFileError


def _feed(trainer, trajectories):
    q = AgentManagerQueue("B?team=0")
    trainer.subscribe_trajectory_queue(q)
    for t in trajectories:
        q.put(t)
        trainer.advance()
    trainer.trajectory_queues.remove(q)


def test_rows_of_a_timeout_chunk_bootstrap_and_terminal_only_on_true_end(tmp_path):
    spec = behavior_spec(cont=1, branches=(3,))
    rng = np.random.default_rng(0)
    masks = [[np.array([False, True, False])], [np.array([True, False, False])], [np.array([False, False, True])]]
    traj = trajectory(spec, 3, rng, done=True, interrupted=True, masks=masks)
    rows = R.trajectory_to_rows(spec, traj)
    assert not rows[R.TERMINAL].any()  # time-out: bootstrap
    np.testing.assert_array_equal(rows[R.next_obs_field(0)][-1], traj.next_obs[0])
    np.testing.assert_array_equal(rows[R.next_obs_field(0)][0], traj.steps[1].obs[0])
    np.testing.assert_array_equal(rows[R.ACTION_MASK][0], [True, False, True])  # 1 = allowed
    np.testing.assert_array_equal(rows[R.NEXT_ACTION_MASK][0], [False, True, True])
    np.testing.assert_array_equal(rows[R.NEXT_ACTION_MASK][-1], [True, True, True])
    np.testing.assert_array_equal(rows[R.REWARD], [1.0, 2.0, 3.0])
    done = trajectory(spec, 2, rng, done=True)
    assert R.trajectory_to_rows(spec, done)[R.TERMINAL].tolist() == [False, True]


def test_visual_rows_are_uint8_and_round_trip():
    spec = behavior_spec(obs_shapes=((3, 20, 20), (2,)))
    rng = np.random.default_rng(0)
    traj = trajectory(spec, 2, rng)
    rows = R.trajectory_to_rows(spec, traj)
    assert rows[R.obs_field(0)].dtype == np.uint8 and rows[R.obs_field(1)].dtype == np.float32
    import torch

    back = R.obs_to_tensor(rows[R.obs_field(0)], torch.device("cpu")).numpy()
    np.testing.assert_allclose(back[1], traj.steps[1].obs[0], atol=1e-6)


def test_update_cadence_follows_steps_per_update_after_init_steps(tmp_path):
    spec = behavior_spec()
    trainer = make_trainer(spec, tmp_path, batch_size=8, buffer_init_steps=12, steps_per_update=2.0)
    rng = np.random.default_rng(0)
    seen = []
    for i in range(12):
        _feed(trainer, [trajectory(spec, 5, rng, done=i % 3 == 2)])
        seen.append(trainer.num_updates)
        assert trainer.num_updates == max(0, (trainer.get_step - 12) // 2)
    assert seen[-1] == (60 - 12) // 2


def test_no_burst_when_buffer_fills_after_init_steps(tmp_path):
    spec = behavior_spec()
    trainer = make_trainer(spec, tmp_path, batch_size=30, buffer_init_steps=0, steps_per_update=1.0)
    rng = np.random.default_rng(0)
    for _ in range(5):  # 25 rows < batch: no updates owed for these steps
        _feed(trainer, [trajectory(spec, 5, rng)])
    assert trainer.num_updates == 25
    calls = []
    orig = trainer.update_once
    trainer.update_once = lambda: calls.append(1) or orig()
    _feed(trainer, [trajectory(spec, 5, rng)])
    assert len(calls) == 5 and trainer.num_updates == 30


def test_only_extrinsic_draws_one_minibatch_per_update(tmp_path):
    spec = behavior_spec()
    trainer = make_trainer(spec, tmp_path, batch_size=8, reward_signal_steps_per_update=1.0)
    draws = []
    orig = trainer.replay.sample_indices
    trainer.replay.sample_indices = lambda *a, **k: draws.append(1) or orig(*a, **k)
    _feed(trainer, [trajectory(spec, 10, np.random.default_rng(0)) for _ in range(3)])
    assert len(draws) == trainer.num_updates == 30


def test_curiosity_is_evaluated_on_minibatch_and_updated_on_its_own_cadence(tmp_path):
    spec = behavior_spec()
    trainer = make_trainer(spec, tmp_path, batch_size=8, reward_signal_steps_per_update=5.0)
    # rebuild with curiosity as a second stream
    from mlagents_plugins.fast_sac.trainer import FastSACTrainer
    from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers

    settings = trainer.trainer_settings
    settings.reward_signals[RewardSignalType.CURIOSITY] = CuriositySettings(gamma=0.9, strength=0.1, encoding_size=8)
    trainer = FastSACTrainer("B", 10, settings, True, False, 0, str(tmp_path / "C"))
    bid = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(bid, trainer.create_policy(bid, spec))
    assert trainer.optimizer.stream_names == ["extrinsic", "curiosity"]
    assert trainer.optimizer.gammas == [0.99, 0.9]
    updates = []
    cur = trainer.optimizer.reward_signals["curiosity"]
    orig = cur.update
    cur.update = lambda b: updates.append(b.num_experiences) or orig(b)
    _feed(trainer, [trajectory(spec, 10, np.random.default_rng(0)) for _ in range(3)])
    assert trainer.num_updates == 30
    assert len(updates) == trainer.num_reward_signal_updates == 6  # 30 steps / 5
    assert set(updates) == {8}
    batch = trainer.sample_batch()
    assert batch.r_t.shape == (8, settings.hyperparameters.resolved_n_step(), 2)  # [B, n-step window, streams]
    assert batch.r_t[:, 0, 1].abs().sum() > 0  # curiosity reward present on the sampled rows


def _run(trainer, spec, rng, n):
    _feed(trainer, [trajectory(spec, 7, rng, done=i % 2 == 0, agent_id=f"a{i % 2}") for i in range(n)])


def test_resume_restores_replay_contents_and_counters_exactly(tmp_path, caplog):
    spec = behavior_spec(cont=1, branches=(2,))
    kw = dict(batch_size=8, buffer_size=30, steps_per_update=3.0, save_replay_buffer=True, prioritized_replay=True)
    rng = np.random.default_rng(0)
    first = make_trainer(spec, tmp_path, **kw)
    _run(first, spec, rng, 7)  # 49 rows into a 30-row ring: wrapped
    first.save_model()
    saved = first.replay.state()
    step, updates = first.get_step, first.num_updates
    assert step == 49 and updates == 49 // 3 and first.replay.write_pos == 49 % 30

    # mlagents_envs.logging_util.set_log_level (called by other tests) may have raised this logger's level
    with caplog.at_level(logging.INFO, logger="mlagents_plugins.offpolicy.trainer"):
        second = make_trainer(spec, tmp_path, load=True, **kw)
    assert "Loaded replay buffer" in caplog.text
    assert second.get_step == step and second.num_updates == updates
    st = second.replay.state()
    assert (st["write_pos"], st["size"], st["total_added"]) == (saved["write_pos"], saved["size"], saved["total_added"])
    for name, arr in saved["arrays"].items():
        np.testing.assert_array_equal(st["arrays"][name], arr)
    np.testing.assert_array_equal(st["priorities"], saved["priorities"])
    # the update ratio carries on: 7 more steps -> exactly floor(56/3) - floor(49/3) updates, no burst
    _run(second, spec, np.random.default_rng(1), 1)
    assert second.num_updates == 56 // 3


def test_resume_without_replay_file_warns_with_path(tmp_path, caplog):
    spec = behavior_spec()
    first = make_trainer(spec, tmp_path, save_replay_buffer=False)
    _run(first, spec, np.random.default_rng(0), 3)
    first.save_model()
    with caplog.at_level(logging.WARNING):
        second = make_trainer(spec, tmp_path, load=True, save_replay_buffer=True)
    assert second.replay_path in caplog.text and "does not exist" in caplog.text
    assert second.replay.size == 0 and second.num_updates == 21 - 0


def test_resume_with_corrupt_replay_file_stops(tmp_path):
    spec = behavior_spec()
    first = make_trainer(spec, tmp_path, save_replay_buffer=True)
    _run(first, spec, np.random.default_rng(0), 3)
    first.save_model()
    with open(first.replay_path, "r+b") as f:
        f.seek(-40, 2)
        f.write(b"\x00garbage\x00" * 4)
    with pytest.raises(ReplayFileError):
        make_trainer(spec, tmp_path, load=True, save_replay_buffer=True)


def test_resume_with_mismatched_spec_stops(tmp_path):
    first = make_trainer(behavior_spec(obs_shapes=((3,),)), tmp_path, save_replay_buffer=True)
    _run(first, behavior_spec(obs_shapes=((3,),)), np.random.default_rng(0), 2)
    first.save_model()
    from mlagents_plugins.replay.errors import ReplaySpecMismatchError

    with pytest.raises(ReplaySpecMismatchError, match="(?s)obs_0.*--resume stopped.*move the file aside"):
        make_trainer(behavior_spec(obs_shapes=((4,),)), tmp_path, load=True, save_replay_buffer=True)


def test_init_replay_from_other_run_id(tmp_path):
    spec = behavior_spec()
    first = make_trainer(spec, tmp_path / "runA", save_replay_buffer=True)
    _run(first, spec, np.random.default_rng(0), 3)
    first.save_model()
    second = make_trainer(spec, tmp_path / "runB", init_replay_from="runA")
    assert second.replay.size == 21 and second.get_step == 0
    np.testing.assert_array_equal(second.replay.gather(np.arange(21))[R.REWARD], first.replay.gather(np.arange(21))[R.REWARD])


def test_steps_after_max_steps_owe_no_updates_on_resume(tmp_path):
    spec = behavior_spec()
    kw = dict(batch_size=8, steps_per_update=2.0, save_replay_buffer=True)
    first = make_trainer(spec, tmp_path, max_steps=30, **kw)
    _run(first, spec, np.random.default_rng(0), 6)  # 42 steps; training stops after the chunk crossing 30
    assert not first.should_still_train and first.num_updates < first.get_step // 2
    first.save_model()
    second = make_trainer(spec, tmp_path, load=True, max_steps=100, **kw)
    assert second.num_updates == second.get_step // 2  # no burst owed for the steps past max_steps
    calls = []
    orig = second.update_once
    second.update_once = lambda: calls.append(1) or orig()
    _run(second, spec, np.random.default_rng(1), 1)
    assert len(calls) == (second.get_step // 2) - (42 // 2) == 3
