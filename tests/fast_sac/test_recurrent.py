"""fast_sac with network_settings.memory (mlagents_plugins/fast_sac/recurrent.py): settings refused by field, the
memories stored in replay are the policy's own, the networks' sequence passes equal a step-by-step walk, n-step
windows and chunk ends inside a window, an update moves every part, the replay keeps its memories through a
save and load, and the policy's ONNX matches PyTorch step by step over 50 steps."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.agent_processor import AgentManagerQueue, AgentProcessor
from mlagents.trainers.action_info import ActionInfo
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import NetworkSettings, TrainerSettings
from mlagents.trainers.stats import StatsReporter

from mlagents_plugins.envs import tiny
from mlagents_plugins.envs.inprocess import SceneEnv
from mlagents_plugins.fast_sac import recurrent
from mlagents_plugins.fast_sac.settings import FastSACSettings
from mlagents_plugins.fast_sac.trainer import FastSACTrainer
from mlagents_plugins.offpolicy import rows as offpolicy_rows
from mlagents_plugins.offpolicy import sequences
from mlagents_plugins.testing.onnx_check import check_recurrent_onnx_over_sequence, export_policy

MEMORY = 16


def _settings(memory_size=MEMORY, sequence_length=4, time_horizon=8, **hyper):
    hp = dict(batch_size=16, buffer_size=2000, buffer_init_steps=10 ** 6, steps_per_update=1.0)
    hp.update(hyper)
    settings = TrainerSettings(trainer_type="fast_sac", hyperparameters=FastSACSettings(**hp), max_steps=10 ** 6,
                               summary_freq=10 ** 9, time_horizon=time_horizon)
    settings.network_settings.hidden_units = 16
    settings.network_settings.num_layers = 1
    if memory_size is not None:
        settings.network_settings.memory = NetworkSettings.MemorySettings(sequence_length=sequence_length,
                                                                          memory_size=memory_size)
    return settings


def _trainer(spec, tmp_path, settings, load=False):
    trainer = FastSACTrainer("Tiny", 10, settings, True, load, 0, str(tmp_path / "Tiny"))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("Tiny?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    return trainer


def _collect(trainer, task, steps, areas=3, seed=0):
    """Act ``steps`` decisions in the tiny ``task`` with the trainer's policy through ML-Agents' AgentProcessor (as
    mlagents-learn does) and give the trainer every trajectory chunk."""
    env = SceneEnv(tiny.tiny_scene(task), num_areas=areas, seed=seed)
    env.reset()
    name = "Tiny?team=0"
    processor = AgentProcessor(trainer.policy, name, StatsReporter("recurrent-test"),
                               trainer.trainer_settings.time_horizon)
    queue = AgentManagerQueue(name)
    processor.publish_trajectory_queue(queue)
    info = ActionInfo.empty()
    for _ in range(steps):
        decision, terminal = env.get_steps(name)
        processor.add_experiences(decision, terminal, 0, info)
        info = trainer.policy.get_action(decision, 0)
        env.set_actions(name, info.env_action)
        env.step()
        while not queue.empty():
            trainer._process_trajectory(queue.get_nowait())
    env.close()


MEMORY_TASK = tiny.TinyTask(1, 1, 0.2, cue_steps=2)


def _spec(task=MEMORY_TASK):
    env = SceneEnv(tiny.tiny_scene(task))
    spec = env.behavior_specs["Tiny?team=0"]
    env.close()
    return spec


# ---------------------------------------------------------------------------------------------- settings
@pytest.mark.parametrize("change,field", [
    (dict(sequence_length=60, buffer_size=50, batch_size=64), "sequence_length"),
    (dict(sequence_length=40, burn_in=20, buffer_size=50, batch_size=64), "sequence_length"),
    (dict(sequence_length=32, batch_size=16), "sequence_length"),
    (dict(prioritized_replay=True), "prioritized_replay"),
    (dict(compile_update=True), "compile_update"),
    (dict(critic_batch_renorm=True), "critic_batch_renorm"),
    (dict(critic_neutral_init=True), "critic_neutral_init"),
    (dict(critic_warmup_updates=5), "critic_warmup_updates"),
    (dict(critic_hidden_units=32), "critic_hidden_units"),
    (dict(critic_weight_norm=True), "critic_weight_norm"),
    (dict(adam_beta1=0.5), "adam_beta1"),
    (dict(actor_update_every=3), "actor_update_every"),
])
def test_settings_a_recurrent_fast_sac_cannot_honour_are_refused_by_field(change, field, tmp_path):
    sequence_length = change.pop("sequence_length", 4)
    settings = _settings(sequence_length=sequence_length, **change)
    with pytest.raises(TrainerConfigError, match=field):
        FastSACTrainer("Tiny", 10, settings, True, False, 0, str(tmp_path))


def test_odd_memory_size_and_burn_in_without_memory_are_refused(tmp_path):
    # ML-Agents refuses it when the YAML is read, before any trainer sees it, for every trainer type
    with pytest.raises(TrainerConfigError, match="memory size must be divisible by 2"):
        NetworkSettings.MemorySettings(sequence_length=4, memory_size=15)
    with pytest.raises(TrainerConfigError, match="burn_in"):
        FastSACTrainer("Tiny", 10, _settings(memory_size=None, burn_in=3), True, False, 0, str(tmp_path))


def test_taac_and_muzero_repr_keep_refusing_memory(tmp_path):
    from mlagents_plugins.muzero_repr.settings import MuZeroReprSettings
    from mlagents_plugins.muzero_repr.trainer import MuZeroReprTrainer
    from mlagents_plugins.taac.settings import TaacSettings
    from mlagents_plugins.taac.trainer import TaacTrainer

    for cls, hp in ((TaacTrainer, TaacSettings()), (MuZeroReprTrainer, MuZeroReprSettings())):
        settings = TrainerSettings(trainer_type="x", hyperparameters=hp)
        settings.network_settings.memory = NetworkSettings.MemorySettings(sequence_length=4, memory_size=16)
        with pytest.raises(TrainerConfigError, match="does not support recurrent policies"):
            cls("B", 10, settings, True, False, 0, str(tmp_path))


# ---------------------------------------------------------------------------------------------- stored memories
def test_stored_memories_are_the_memories_the_policy_acted_from(tmp_path):
    """No update runs, so the policy is fixed: inside every stored chunk, the LSTM stepped from the chunk's first
    stored memory over the chunk's observations gives every later stored memory; a chunk that starts an episode
    starts from zeros.  time_horizon 5 cuts episodes into several chunks."""
    trainer = _trainer(_spec(), tmp_path, _settings(time_horizon=5))
    _collect(trainer, MEMORY_TASK, 120)
    replay = trainer.replay
    rows = replay.gather(np.arange(replay.size))
    seg = replay.segment_ids(np.arange(replay.size))
    body = trainer.policy.actor.network_body
    chunks = starts_zero = 0
    for s in np.unique(seg):
        r = np.flatnonzero(seg == s)
        mem = rows[sequences.MEMORY][r]
        assert rows[sequences.SEQUENCE_POS][r].tolist() == list(range(len(r)))
        m = torch.as_tensor(mem[0]).reshape(1, 1, -1)
        with torch.no_grad():
            for k in range(len(r) - 1):
                _, m = body([torch.as_tensor(rows[offpolicy_rows.obs_field(0)][r[k:k + 1]])], memories=m,
                            sequence_length=1)
                np.testing.assert_allclose(m.reshape(-1).cpu().numpy(), mem[k + 1], atol=1e-6)
        chunks += 1
        starts_zero += int(not mem[0].any())
    assert chunks > 10 and 0 < starts_zero < chunks  # episode starts and continued chunks both seen
    assert np.abs(rows[sequences.MEMORY]).max() > 0


# ---------------------------------------------------------------------------------------------- windows and losses
def test_nstep_rows_against_a_loop():
    rng = np.random.default_rng(0)
    valid = np.cumprod(rng.random((6, 7)) < 0.9, axis=1).astype(bool)
    valid[:, 0] = True
    train = valid & (rng.random((6, 7)) < 0.6)
    b, t, steps, steps_valid = recurrent.nstep_rows(valid, train, 3)
    assert len(b) == train.sum()
    for i in range(len(b)):
        for k in range(3):
            ok = all(t[i] + j < 7 and valid[b[i], t[i] + j] for j in range(k + 1))
            assert steps_valid[i, k] == ok
            if ok:
                assert steps[i, k] == t[i] + k


@pytest.mark.parametrize("burn_in,n_step", [(0, 1), (3, 3)])
def test_sequence_passes_equal_a_step_by_step_walk(burn_in, n_step, tmp_path):
    """Every trained row's state is the policy's LSTM output after stepping from the window's stored memory and the
    critic body's after stepping from zeros; its bootstrap state the one n steps on (or at the chunk's end); the
    n-step rewards and discounts are the window's rows, and nothing after a chunk's end is trained."""
    settings = _settings(sequence_length=4, batch_size=32, burn_in=burn_in, n_step=n_step, time_horizon=7)
    trainer = _trainer(_spec(), tmp_path, settings)
    _collect(trainer, MEMORY_TASK, 80)
    opt = trainer.optimizer
    batch = trainer.sample_sequences()
    sb, (actor_out, critic_out) = opt.sac_batch(batch)
    nb, t_pos = batch.memory.shape[1], batch.positions
    assert t_pos == 4 + burn_in + 1 and nb == 8
    z = [o.reshape((nb, t_pos) + o.shape[1:]) for o in batch.z]
    walk_a = np.zeros((nb, t_pos, MEMORY // 2), np.float32)
    walk_c = np.zeros_like(walk_a)
    with torch.no_grad():
        for b in range(nb):
            ma = batch.memory[:, b:b + 1]
            mc = torch.zeros_like(ma)
            for p in range(t_pos):
                ea, ma = trainer.policy.actor.network_body([o[b, p:p + 1] for o in z], memories=ma, sequence_length=1)
                ec, mc = opt.critic_body([o[b, p:p + 1] for o in z], memories=mc, sequence_length=1)
                walk_a[b, p], walk_c[b, p] = ea[0].cpu().numpy(), ec[0].cpu().numpy()
    np.testing.assert_allclose(actor_out.detach().reshape(nb, t_pos, -1).cpu().numpy(), walk_a, atol=1e-5)
    np.testing.assert_allclose(critic_out.detach().reshape(nb, t_pos, -1).cpu().numpy(), walk_c, atol=1e-5)
    sel_tm1, sel_t = batch.sel_tm1.cpu().numpy(), batch.sel_t.cpu().numpy()
    np.testing.assert_allclose(sb.s_tm1[0].detach().cpu().numpy(), walk_a.reshape(nb * t_pos, -1)[sel_tm1], atol=1e-5)
    np.testing.assert_allclose(sb.s_t[0].cpu().numpy(), walk_a.reshape(nb * t_pos, -1)[sel_t], atol=1e-5)
    # bootstrap position = trained position + the leading valid n-step rows, never beyond the window
    k = batch.valid_t.cpu().numpy().sum(axis=1)
    assert np.all(sel_t - sel_tm1 == k) and np.all((k >= 1) & (k <= n_step))
    assert np.all(sel_t % t_pos >= 1)
    # the terminal rows that are trained bootstrap nowhere: their own discount is 0 and their window ends there
    terminal_rows = batch.discount_t.cpu().numpy()[:, 0, 0] == 0
    assert np.all(k[terminal_rows] == 1)
    assert 0 < batch.trained_per_window <= 4


def test_windows_see_the_cue_only_through_memory(tmp_path):
    """The z sequence is the window's observations in order: at a chunk's first row (sequence_pos 0 of an episode's
    first chunk) the cue is there, and after cue_steps it is 0 in every later position."""
    trainer = _trainer(_spec(), tmp_path, _settings(sequence_length=8, batch_size=64, time_horizon=64))
    # past the task's time limit (tiny.TIME_LIMIT decisions), so every agent has sent at least one chunk whatever
    # the policy's draws (60 decisions left the replay empty when no episode ended by chance)
    _collect(trainer, MEMORY_TASK, tiny.TIME_LIMIT + 20)
    batch = trainer.sample_sequences()
    z = batch.z[0].reshape(batch.memory.shape[1], batch.positions).cpu().numpy()
    starts = ~batch.memory[0].cpu().numpy().any(axis=1)  # windows starting an episode (zero memory)
    assert starts.any()
    assert np.all(np.abs(z[starts, 0]) == 1.0) and np.all(z[starts, 2:] == 0.0)


def test_update_moves_policy_lstm_critic_body_heads_and_target(tmp_path):
    # the goal seen at every step: with the memory task's zeros (and zero-initialized biases) an LSTM's memory can
    # stay exactly 0 over a window, and so the gradient of its recurrent weights
    task = tiny.TinyTask(1, 1, 0.2)
    trainer = _trainer(_spec(task), tmp_path, _settings())
    _collect(trainer, task, 40)
    opt = trainer.optimizer
    before = {name: p.detach().clone() for name, p in [
        ("policy lstm", trainer.policy.actor.network_body.lstm.lstm.weight_hh_l0),
        ("critic lstm", opt.critic_body.lstm.lstm.weight_hh_l0),
        ("target critic lstm", opt.target_critic_body.lstm.lstm.weight_hh_l0),
        ("q head", next(opt.head.q_net.parameters())),
    ]}
    stats = trainer.update_once()
    after = {
        "policy lstm": trainer.policy.actor.network_body.lstm.lstm.weight_hh_l0,
        "critic lstm": opt.critic_body.lstm.lstm.weight_hh_l0,
        "target critic lstm": opt.target_critic_body.lstm.lstm.weight_hh_l0,
        "q head": next(opt.head.q_net.parameters()),
    }
    for name, p in after.items():
        assert not torch.equal(before[name], p.detach()), name
    # the target moved by tau of the way only
    moved = (after["target critic lstm"] - before["target critic lstm"]).abs().max()
    assert moved < (after["critic lstm"] - before["target critic lstm"]).abs().max()
    assert np.isfinite(stats["Losses/Q1 Loss"]) and recurrent.STAT_TRAINED_ROWS in stats
    assert "Optimizer:critic_memory_body" in opt.get_modules()


def test_replay_save_and_resume_keep_memories(tmp_path):
    settings = _settings(save_replay_buffer=True)
    trainer = _trainer(_spec(), tmp_path, settings)
    _collect(trainer, MEMORY_TASK, 30)
    trainer._checkpoint()
    saved = trainer.replay.gather(np.arange(trainer.replay.size))
    resumed = _trainer(_spec(), tmp_path, _settings(save_replay_buffer=True), load=True)
    assert resumed.replay.size == trainer.replay.size > 0
    got = resumed.replay.gather(np.arange(resumed.replay.size))
    for name in (sequences.MEMORY, sequences.SEQUENCE_POS, offpolicy_rows.obs_field(0)):
        np.testing.assert_array_equal(got[name], saved[name])
    # the critic body and its target come back from the checkpoint
    for a, b in zip(resumed.optimizer.critic_body.parameters(), trainer.optimizer.critic_body.parameters()):
        assert torch.equal(a, b)


# ---------------------------------------------------------------------------------------------- ONNX
@pytest.mark.parametrize("task", [MEMORY_TASK, tiny.TinyTask(2, 0, 0.2, cue_steps=2)], ids=["hybrid", "continuous"])
def test_onnx_matches_pytorch_step_by_step_over_50_steps(task, tmp_path):
    """The exported file with ML-Agents' recurrent contract (recurrent_in / recurrent_out / memory_size), its memory
    fed back step by step, against the policy's LSTM run over the whole 50-step sequence in PyTorch."""
    trainer = _trainer(_spec(task), tmp_path, _settings())
    _collect(trainer, task, 20)
    trainer.update_once()  # weights away from their initial values
    policy = trainer.policy
    path = export_policy(policy, str(tmp_path / "recurrent"))
    rng = np.random.default_rng(5)
    obs = rng.uniform(-1, 1, size=(50, 1)).astype(np.float32)
    mask_width = int(sum(task.branches * (2,)))
    masks = np.ones((1, max(mask_width, 1)), np.float32)
    # the deterministic continuous action of the squashed Gaussian: tanh(mean) (host/deterministic_tanh.py)
    walk = check_recurrent_onnx_over_sequence(policy, path, [obs], masks,
                                              mean_to_action=torch.tanh if task.continuous else None)
    assert np.abs(walk.memories).max() > 0


def test_camera_observations_train_with_memory_and_drq_shifts(tmp_path):
    """Camera frames through the sequence path: stored as uint8, the window's frames shifted by DrQ (automatic pad
    at 20x20: 1 pixel), one update with finite losses."""
    task = tiny.TinyTask(1, 0, 0.2, vector=False, cameras=1)
    trainer = _trainer(_spec(task), tmp_path, _settings())
    assert trainer.shift_pad == 1
    _collect(trainer, task, 30)
    batch = trainer.sample_sequences()
    assert batch.z[0].shape[1:] == (3, 20, 20) and batch.z[0].dtype == torch.float32
    stats = trainer.update_once()
    assert np.isfinite(stats["Losses/Q1 Loss"]) and stats["Policy/Random Shift Pad"] == 1.0
