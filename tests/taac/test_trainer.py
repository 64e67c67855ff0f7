"""Settings, start-up checks, one optimizer update, and replay rows recorded by a real in-process run."""
import os

import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import RunOptions, TrainerSettings
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from mlagents_plugins.offpolicy import rows as R
from mlagents_plugins.taac import stats
from mlagents_plugins.taac.optimizer import TaacBatch
from mlagents_plugins.taac.settings import TaacSettings
from mlagents_plugins.taac.trainer import REPEATS, SWITCH, TAU, TAU_PREV, TaacTrainer
from mlagents_plugins.taac.trajectories import TrajectoryKind, advance


def run_options(hyper):
    return RunOptions.from_dict(
        {"behaviors": {"Ball": {"trainer_type": "taac", "hyperparameters": hyper, "network_settings": {"hidden_units": 16}}}}
    )


def test_yaml_settings_structure_and_errors():
    opts = run_options({"trajectory": "quadratic", "inverse_mode": False, "mini_batch_length": 3, "max_repeat_steps": 5,
                        "b1_advantage_clipping": [-0.5, 2.0], "batch_size": 64})
    h = opts.behaviors["Ball"].hyperparameters
    assert isinstance(h, TaacSettings)
    assert h.trajectory_kind == TrajectoryKind.QUADRATIC and h.inverse_mode is False
    assert (h.mini_batch_length, h.max_repeat_steps, h.batch_size, h.advantage_clipping) == (3, 5, 64, (-0.5, 2.0))
    for bad, field in [({"mini_batch_length": 1}, "mini_batch_length"), ({"trajectory": "cubic"}, "trajectory"),
                       ({"num_critic_replicas": 0}, "num_critic_replicas"), ({"target_update_tau": 1.5}, "target_update_tau"),
                       ({"b1_advantage_clipping": [1.0]}, "b1_advantage_clipping")]:
        with pytest.raises(TrainerConfigError, match=field):
            run_options(bad)


def obs_spec(n):
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs")


@pytest.mark.parametrize("batch_size, length", [(8, 2), (16, 2), (24, 3), (32, 4), (50, 6), (64, 8), (256, 8)])
def test_automatic_window_length_leaves_a_batch_eight_windows(batch_size, length):
    """null: the longest window of at most 8 rows that leaves at least 8 windows a batch, never under 2; a set
    value is kept whatever the batch."""
    h = run_options({"batch_size": batch_size}).behaviors["Ball"].hyperparameters
    assert h.mini_batch_length is None and h.window_length == length
    assert run_options({"batch_size": batch_size, "mini_batch_length": 5}).behaviors["Ball"].hyperparameters.window_length == 5
    with pytest.raises(TrainerConfigError, match="mini_batch_length.*null"):
        run_options({"mini_batch_length": 1.5})


def make_trainer(tmp_path, hidden_units: int = 16, **hyper):
    """A taac trainer with 16 hidden units (unless given); ``compile_update`` off unless given (compiling is tested
    in test_compiled_update.py and costs seconds per trainer)."""
    hyper.setdefault("compile_update", False)
    settings = TrainerSettings(
        trainer_type="taac", hyperparameters=TaacSettings(**hyper), max_steps=1000
    )
    settings.network_settings.hidden_units = hidden_units
    return TaacTrainer("Ball?team=0", 1, settings, True, False, 0, str(tmp_path))


@pytest.mark.parametrize("action_spec", [ActionSpec(0, (3,)), ActionSpec(2, (2,))])
def test_discrete_or_hybrid_behavior_is_refused_at_start_up(tmp_path, action_spec):
    trainer = make_trainer(tmp_path)
    with pytest.raises(TrainerConfigError, match=r"Ball\?team=0.*discrete branches \((3|2),\)"):
        trainer.create_policy(None, BehaviorSpec([obs_spec(4)], action_spec))


def test_behavioral_cloning_is_refused(tmp_path):
    from mlagents.trainers.settings import BehavioralCloningSettings

    settings = TrainerSettings(trainer_type="taac", hyperparameters=TaacSettings())
    settings.behavioral_cloning = BehavioralCloningSettings(demo_path="x.demo")
    with pytest.raises(TrainerConfigError, match="behavioral_cloning.*'Ball'"):
        TaacTrainer("Ball", 1, settings, True, False, 0, str(tmp_path))


def synthetic_batch(trainer, B=6, L=4, seed=0):
    rng = np.random.default_rng(seed)
    d = trainer.policy.actor.tau_size
    f = lambda *s: torch.as_tensor(rng.uniform(-1, 1, size=s), dtype=torch.float32)
    valid = torch.ones(B, L, dtype=torch.bool)
    valid[0, 2:] = False
    return TaacBatch(
        obs=[f(B, L, 4)], next_obs=[f(B, L, 4)], tau_prev=f(B, L, d), tau=f(B, L, d),
        switch=torch.as_tensor(rng.random((B, L)) < 0.4), rewards=f(B, L, 1),
        terminal=torch.as_tensor(rng.random((B, L)) < 0.1), valid=valid,
    )


def test_optimizer_update_moves_every_part_and_polyak_target(tmp_path):
    torch.manual_seed(0)
    trainer = make_trainer(tmp_path, trajectory="linear", target_update_tau=0.25, learning_rate=1e-2)
    spec = BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2))
    trainer.policy = trainer.create_policy(None, spec)
    opt = trainer.create_optimizer()
    actor = trainer.policy.actor
    before = {k: v.clone() for k, v in actor.state_dict().items()}
    target_before = [p.clone() for p in opt.q_target.parameters()]
    out = opt.update(synthetic_batch(trainer))
    for key in (stats.CRITIC_LOSS, stats.ACTOR_LOSS, stats.KEEP_PROBABILITY, stats.SWITCH_TEMPERATURE):
        assert np.isfinite(out[key])
    after = actor.state_dict()
    changed = lambda prefix: any(not torch.equal(before[k], after[k]) for k in before if k.startswith(prefix))
    assert changed("network_body") and changed("distribution") and changed("critic.replicas.0") and changed("critic.replicas.1")
    assert not torch.equal(before["log_alpha_action"], after["log_alpha_action"])
    assert not torch.equal(before["log_alpha_switch"], after["log_alpha_switch"])
    for p_old, p_t, p_on in zip(target_before, opt.q_target.parameters(), opt.critic.parameters()):
        torch.testing.assert_close(p_t, 0.75 * p_old + 0.25 * p_on)


def test_actor_min_q_null_reads_the_first_replica_with_an_image_the_minimum_without():
    image = ObservationSpec((3, 20, 20), (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,),
                            ObservationType.DEFAULT, "camera")
    entities = ObservationSpec((4, 4), (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE),
                               ObservationType.DEFAULT, "entities")
    auto = TaacSettings()
    assert auto.actor_reads_min([obs_spec(4)]) and auto.actor_reads_min([obs_spec(4), entities])
    assert not auto.actor_reads_min([image]) and not auto.actor_reads_min([obs_spec(4), image])
    for setting in (True, False):
        assert TaacSettings(actor_min_q=setting).actor_reads_min([image]) is setting
        assert TaacSettings(actor_min_q=setting).actor_reads_min([obs_spec(4)]) is setting


@pytest.mark.parametrize("setting,reads", [(None, "min"), (False, "first"), (True, "min")])
def test_actor_objective_reads_the_first_replica_or_the_minimum(tmp_path, setting, reads):
    """actor_min_q: the proposal's loss reads the first critic replica's Q (false: built-in sac's and fast_sac's
    actor) or the replicas' minimum (true: the TAAC paper; null with vector observations, as here); the switch uses the
    minimum either way.  The reference is computed here from the critics' raw [R, N, K] outputs with the same noise
    draw."""
    from mlagents_plugins.taac import losses as L
    from mlagents_plugins.taac.optimizer import _flat

    torch.manual_seed(2)
    hyper = {} if setting is None else {"actor_min_q": setting}
    trainer = make_trainer(tmp_path, **hyper)
    trainer.policy = trainer.create_policy(None, BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2)))
    opt = trainer.create_optimizer()
    assert opt.actor_min_q is (reads == "min")
    batch = synthetic_batch(trainer, seed=4)
    n = batch.valid.numel()
    obs, tau_prev = [_flat(o, n) for o in batch.obs], _flat(batch.tau_prev, n)
    valid = batch.valid.reshape(n)
    actor = opt.actor
    with torch.no_grad():
        torch.manual_seed(7)
        prop = actor.propose(obs, tau_prev, deterministic=False)
        keep, new = actor.switch_candidates(prop.x, tau_prev)
        q_new = opt.critic(obs, new)  # [R, N, K]
        q_first, q_min = q_new[0].sum(-1), q_new.min(dim=0)[0].sum(-1)
        assert (q_first - q_min).abs().max() > 1e-3  # the replicas differ: the two objectives are told apart
        p_switch = L.switch_distribution(opt.critic.total(obs, keep), q_min, actor.switch_temperature(),
                                         actor.advantage_clipping).p_switch
        alpha = actor.log_alpha_action.exp()
        expected = {q: L.masked_mean(alpha * prop.log_pi - p_switch * v, valid) for q, v in (("first", q_first), ("min", q_min))}
        torch.manual_seed(7)
        got = opt.compute_losses(batch).actor_loss
    torch.testing.assert_close(got, expected[reads], rtol=1e-5, atol=1e-6)
    other = "min" if reads == "first" else "first"
    assert (got - expected[other]).abs() > 1e-4


def test_critic_loss_falls_on_a_fixed_batch(tmp_path):
    torch.manual_seed(1)
    trainer = make_trainer(tmp_path, learning_rate=3e-3)
    trainer.policy = trainer.create_policy(None, BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2)))
    opt = trainer.create_optimizer()
    batch = synthetic_batch(trainer, seed=3)
    losses = [opt.update(batch)[stats.CRITIC_LOSS] for _ in range(60)]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_replay_rows_are_what_acting_saw(tmp_path):
    """Short real run (in-process balance scene); the saved replay must follow the rollout rules."""
    from mlagents_plugins.envs.harness import train_in_process
    from mlagents_plugins.replay.persistence import load_replay

    torch.set_num_threads(1)
    cfg = {
        "trainer_type": "taac",
        "hyperparameters": {"batch_size": 32, "buffer_size": 5000, "buffer_init_steps": 600, "steps_per_update": 8.0,
                            "trajectory": "linear", "max_repeat_steps": 3, "mini_batch_length": 3,
                            "save_replay_buffer": True, "init_switch_temperature": 1.0, "compile_update": False},
        "network_settings": {"hidden_units": 16, "num_layers": 1},
        "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
        "time_horizon": 16, "summary_freq": 400, "checkpoint_interval": 100000,
    }
    res = train_in_process(cfg, "balance", max_steps=800, seed=0, output_dir=str(tmp_path))
    assert res.steps >= 800
    assert stats.MEAN_REPEAT_LENGTH in res.stats and stats.CRITIC_LOSS in res.stats
    replay, _ = load_replay(os.path.join(res.results_path, res.behavior_name, "replay_buffer.mlreplay"))
    order = replay.chronological_indices()
    rows = replay.gather(order)
    seg = replay.segment_ids(order)
    a = rows[R.CONT_ACTION]
    np.testing.assert_allclose(rows[TAU][:, :2], a, atol=1e-6)  # the action is the trajectory's a
    kept = ~rows[SWITCH]
    assert 0.05 < kept.mean() < 0.95
    np.testing.assert_allclose(
        rows[TAU][kept], advance(torch.as_tensor(rows[TAU_PREV][kept]), TrajectoryKind.LINEAR, 2).numpy(), atol=1e-6
    )
    same = seg[1:] == seg[:-1]
    np.testing.assert_allclose(rows[TAU_PREV][1:][same], rows[TAU][:-1][same], atol=1e-6)
    rep = rows[REPEATS]
    np.testing.assert_array_equal(rep[1:][same], np.where(rows[SWITCH][1:][same], 1.0, rep[:-1][same] + 1))
    assert rep.max() <= 3  # max_repeat_steps enforced during rollout


def test_sample_batch_with_two_reward_streams(tmp_path):
    """Windows from the replay, per-stream rewards (extrinsic scaled by strength, curiosity evaluated)."""
    from mlagents.trainers.settings import CuriositySettings, RewardSignalSettings, RewardSignalType
    from mlagents_plugins.replay.buffer import ReplayBuffer

    torch.manual_seed(0)
    settings = TrainerSettings(
        trainer_type="taac", hyperparameters=TaacSettings(batch_size=12, mini_batch_length=3, compile_update=False),
        max_steps=1000,
    )
    settings.network_settings.hidden_units = 16
    settings.reward_signals = {
        RewardSignalType.EXTRINSIC: RewardSignalSettings(gamma=0.9, strength=2.0),
        RewardSignalType.CURIOSITY: CuriositySettings(gamma=0.5, strength=0.1, encoding_size=8),
    }
    trainer = TaacTrainer("Ball", 1, settings, True, False, 0, str(tmp_path))
    spec = BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2))
    trainer.policy = trainer.create_policy(None, spec)
    trainer.optimizer = trainer.create_optimizer()
    trainer.replay = ReplayBuffer(100, trainer.replay_layout(spec))
    rng = np.random.default_rng(0)
    for n in (5, 7, 4):
        rows = {name: rng.uniform(-1, 1, size=(n,) + f.shape).astype(f.dtype) for name, f in trainer.replay.fields.items()}
        rows[R.REWARD] = np.arange(n, dtype=np.float32) + 1
        for name, source in trainer.replay.successors.items():  # a row's next observation is the next row's
            rows[name][:-1] = rows[source][1:]
        trainer.replay.add(rows)
    trainer.update_reward_signals_once()  # curiosity pays 0 until its first update
    batch = trainer.sample_batch()
    assert batch.rewards.shape == (4, 3, 2) and batch.tau.shape == (4, 3, 2)
    # Windows start anywhere; rows past a segment's end are invalid, and valid rows form a prefix.
    v = batch.valid.numpy()
    assert v[:, 0].all() and (np.diff(v.astype(int), axis=1) <= 0).all()
    ext = batch.rewards[..., 0][batch.valid]
    assert torch.all(ext == 2.0 * torch.round(ext / 2.0)) and ext.min() >= 2.0  # 2 x (1..n)
    cur = batch.rewards[..., 1][batch.valid]
    assert torch.isfinite(cur).all() and cur.abs().sum() > 0
    out = trainer.update_once()
    assert np.isfinite(out[stats.CRITIC_LOSS]) and np.isfinite(out[stats.ACTOR_LOSS])
    torch.testing.assert_close(trainer.optimizer.gammas, torch.tensor([0.9, 0.5]))
    torch.testing.assert_close(trainer.optimizer.use_done, torch.tensor([1.0, 0.0]))  # curiosity ignores done

    # Targets per stream: a terminal at row 1 cuts the extrinsic return but not curiosity's (ignore_done).
    b1 = TaacBatch(
        obs=batch.obs, next_obs=batch.next_obs, tau_prev=batch.tau_prev, tau=batch.tau,
        switch=torch.tensor([[False, False, False]]), rewards=torch.tensor([[[1.0, 10.0], [2.0, 20.0], [0.0, 0.0]]]),
        terminal=torch.tensor([[False, True, False]]), valid=torch.tensor([[True, True, False]]),
    )
    v = torch.tensor([[[5.0, 50.0], [7.0, 70.0], [0.0, 0.0]]])
    g = trainer.optimizer.stream_targets(b1, v, torch.zeros(1, 3, dtype=torch.bool))
    torch.testing.assert_close(g[0, 1], torch.tensor([2.0, 20.0 + 0.5 * 70.0]))
    torch.testing.assert_close(g[0, 0], torch.tensor([1.0 + 0.9 * 2.0, 10.0 + 0.5 * (20.0 + 0.5 * 70.0)]))
    # A fresh switch at row 1 makes row 0 bootstrap from its own v_tp1.
    g = trainer.optimizer.stream_targets(b1, v, torch.tensor([[False, True, False]]))
    torch.testing.assert_close(g[0, 0], torch.tensor([1.0 + 0.9 * 5.0, 10.0 + 0.5 * 50.0]))


def test_sample_batch_draws_automatic_windows(tmp_path):
    """batch_size 16 with the automatic mini_batch_length: 8 windows of 2 rows."""
    from mlagents_plugins.replay.buffer import ReplayBuffer

    trainer = make_trainer(tmp_path, batch_size=16)
    spec = BehaviorSpec([obs_spec(4)], ActionSpec.create_continuous(2))
    trainer.policy = trainer.create_policy(None, spec)
    trainer.optimizer = trainer.create_optimizer()
    trainer.replay = ReplayBuffer(100, trainer.replay_layout(spec))
    rng = np.random.default_rng(0)
    rows = {name: rng.uniform(-1, 1, size=(30,) + f.shape).astype(f.dtype) for name, f in trainer.replay.fields.items()}
    for name, source in trainer.replay.successors.items():  # a row's next observation is the next row's
        rows[name][:-1] = rows[source][1:]
    trainer.replay.add(rows)
    batch = trainer.sample_batch()
    assert batch.tau.shape == (8, 2, 2) and batch.valid.shape == (8, 2)
