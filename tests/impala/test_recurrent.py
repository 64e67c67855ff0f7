"""impala with network_settings.memory (mlagents_plugins/impala/recurrent.py): the actor's memory at each sequence
start of an unroll travels with the piece, the separate critic's memory is carried across an agent's chunks and reset
at an episode's end, the learner's sequence pass equals stepping each network from the stored memories with cuts every
sequence_length steps of a piece (and, at sequence_length >= unroll_length, equals the one-sequence-per-piece pass),
a sequence_length below 1 is refused, both update styles train, and the ONNX matches PyTorch step by step over 50
steps."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.exception import TrainerConfigError
from mlagents.trainers.settings import NetworkSettings
from mlagents.trainers.torch_entities.agent_action import AgentAction

from mlagents_plugins.impala.pieces import make_batch
from mlagents_plugins.impala.trainer import ImpalaTrainer
from mlagents_plugins.testing.onnx_check import check_recurrent_onnx_over_sequence, export_policy
from tests.impala.helpers import OBS_SIZE, impala_spec, make_trajectory, trainer_settings

MEMORY = 8


def _trainer(tmp_path, shared_critic=False, branches=(3,), sequence_length=4, **hyper):
    hp = dict(batch_size=16, buffer_size=10 ** 6, unroll_length=4, shared_critic=shared_critic)
    hp.update(hyper)
    settings = trainer_settings(**hp)
    settings.network_settings.memory = NetworkSettings.MemorySettings(sequence_length=sequence_length,
                                                                      memory_size=MEMORY)
    spec = impala_spec(2, branches)
    trainer = ImpalaTrainer("B", 10, settings, True, False, 0, str(tmp_path))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    return trainer, spec


def _with_memories(traj, rng):
    """The trajectory with a distinct memory at every step (what the acting LSTM would have stored)."""
    steps = [s._replace(memory=rng.normal(size=MEMORY).astype(np.float32)) for s in traj.steps]
    return traj._replace(steps=steps)


@pytest.mark.parametrize("unroll,sequence,starts", [
    (4, 4, [[0], [4], [8]]),
    (4, 9, [[0], [4], [8]]),  # above unroll_length: one sequence per piece
    (5, 2, [[0, 2, 4], [5, 7, 9]]),
])
def test_memory_at_each_sequence_start_travels_with_the_piece(tmp_path, unroll, sequence, starts):
    trainer, spec = _trainer(tmp_path, unroll_length=unroll, sequence_length=sequence)
    rng = np.random.default_rng(0)
    traj = _with_memories(make_trajectory(10, spec, False, False, rng), rng)
    trainer._process_trajectory(traj)
    pieces = list(trainer.piece_queue._fresh)
    assert [[p.length, p.sequence_length] for p in pieces] == [[min(unroll, 10 - k[0]), min(unroll, sequence)]
                                                                for k in starts]
    for p, steps in zip(pieces, starts):
        np.testing.assert_array_equal(p.memory, np.stack([traj.steps[t].memory for t in steps]))
        assert p.critic_memory.shape == (len(steps), MEMORY)


@pytest.mark.parametrize("sequence_length", [0, -3])
def test_sequence_length_below_one_is_refused_by_field(tmp_path, sequence_length):
    with pytest.raises(TrainerConfigError, match="network_settings.memory.sequence_length = " + str(sequence_length)):
        _trainer(tmp_path, sequence_length=sequence_length)


def test_critic_memory_carries_over_chunks_and_resets_at_episode_end(tmp_path):
    """The separate critic stepped over the agent's chunks from zeros: each piece keeps the critic's memory at each of
    its sequence starts (its steps 0 and 3 with unroll_length 4 and sequence_length 3), the next chunk continues from
    the last one, and the chunk after an episode end starts at zeros."""
    trainer, spec = _trainer(tmp_path, sequence_length=3)
    rng = np.random.default_rng(1)
    chunks = [_with_memories(make_trajectory(6, spec, done, False, rng, obs_offset=10.0 * i), rng)
              for i, done in enumerate((False, True, False))]
    for chunk in chunks:
        trainer._process_trajectory(chunk)
    pieces = list(trainer.piece_queue._fresh)
    assert [p.length for p in pieces] == [4, 2] * 3
    critic = trainer.optimizer.critic
    m = torch.zeros(1, 1, MEMORY)
    expected = []
    with torch.no_grad():
        for i, chunk in enumerate(chunks):
            if i == 2:
                m = torch.zeros(1, 1, MEMORY)  # the episode ended with chunk 1
            for t, step in enumerate(chunk.steps):
                if t % 4 == 0:
                    expected.append([])
                if t % 4 % 3 == 0:
                    expected[-1].append(m.reshape(-1).cpu().numpy().copy())
                _, m = critic.critic_pass([torch.as_tensor(step.obs[0][None])], memories=m, sequence_length=1)
    assert [len(p.critic_memory) for p in pieces] == [2, 1] * 3
    for p, want in zip(pieces, expected):
        np.testing.assert_allclose(p.critic_memory, np.stack(want), atol=1e-6)
    assert np.abs(pieces[2].critic_memory).max() > 0 and not pieces[4].critic_memory[0].any()
    assert np.abs(pieces[4].critic_memory[1]).max() > 0


# chunks of one agent (length, episode ends): 26 steps and a 10-step end of one episode, a 5-step chunk and a
# 12-step end of the next, a 1-step episode.  With unroll 13 and sequences of 5 the pieces are 13 (5 + 5 + 3), 13, 10
# (5 + 5, bootstrap at the last position of its second sequence), 5 (bootstrap after one full sequence), 12 and 1.
CHUNKS = ((26, False), (10, True), (5, False), (12, True), (1, True))


def _walk(trainer, chunks, unroll, sequence, shared_critic, cut=True):
    """Independent reference: each network stepped one step at a time along each chunk.  At a step that starts a
    sequence (offset 0, s, 2s, ... in its piece) the policy's memory is set to the trajectory step's stored memory and
    the critic's to the critic's own memory there (stepped from zeros over the agent's chunks, carried across chunks
    until an episode ends; the policy's with a shared critic).  ``cut=False``: memories set at piece starts only.
    Returns per piece ``[(log pi [K], entropy, V) per step]`` and its bootstrap value."""
    actor, critic = trainer.policy.actor, trainer.optimizer.critic
    steps, bootstrap = [], []
    running = torch.zeros(1, 1, MEMORY)  # the critic's memory along the agent's chunks
    with torch.no_grad():
        for traj in chunks:
            n = len(traj.steps)
            for t, step in enumerate(traj.steps):
                offset = t % unroll
                if offset == 0:
                    steps.append([])
                if offset % sequence == 0 and (cut or offset == 0):
                    ma = torch.as_tensor(step.memory).reshape(1, 1, -1)
                    mc = ma if shared_critic else running
                obs = [torch.as_tensor(step.obs[0][None])]
                action = AgentAction(torch.as_tensor(step.action.continuous[None]),
                                     [torch.as_tensor(step.action.discrete[None, 0])])
                out = actor.get_stats(obs, action, masks=torch.ones(1, 3), memories=ma, sequence_length=1)
                _, ma = actor.network_body(obs, memories=ma, sequence_length=1)
                v, mc = critic.critic_pass(obs, memories=mc, sequence_length=1)
                _, running = critic.critic_pass(obs, memories=running, sequence_length=1)
                steps[-1].append((out["log_probs"].flatten()[0].cpu().numpy(), float(out["entropy"].reshape(-1)[0]),
                                  float(v["extrinsic"].reshape(-1)[0])))
                if offset == unroll - 1 or t == n - 1:  # the piece's last step: V at the observation after it
                    after = traj.next_obs[0] if t == n - 1 else traj.steps[t + 1].obs[0]
                    v, _ = critic.critic_pass([torch.as_tensor(after[None])], memories=mc, sequence_length=1)
                    bootstrap.append(float(v["extrinsic"].reshape(-1)[0]))
            if traj.done_reached:
                running = torch.zeros(1, 1, MEMORY)
    return steps, bootstrap


@pytest.mark.parametrize("unroll,sequence", [(4, 4), (13, 5), (13, 40)])
@pytest.mark.parametrize("shared_critic", [False, True])
def test_learner_replays_each_sequence_from_its_stored_memories(tmp_path, shared_critic, unroll, sequence):
    """log pi, entropy and V at every real step, and V at each piece's bootstrap observation, equal stepping the
    policy (and critic) one step at a time, restarting from the stored memories every sequence_length steps of a
    piece (unroll 13 and sequence 5: at offsets 0, 5 and 10)."""
    trainer, spec = _trainer(tmp_path, shared_critic=shared_critic, unroll_length=unroll, sequence_length=sequence)
    rng = np.random.default_rng(2)
    chunks = [_with_memories(make_trajectory(length, spec, done, False, rng, obs_offset=0.1 * i), rng)
              for i, (length, done) in enumerate(CHUNKS)]
    for chunk in chunks:
        trainer._process_trajectory(chunk)
    pieces = list(trainer.piece_queue._fresh)
    batch = make_batch(pieces, unroll)
    with torch.no_grad():
        log_probs, entropy, values, bootstrap = trainer.optimizer._forward(batch)
    want, want_bootstrap = _walk(trainer, chunks, unroll, sequence, shared_critic)
    assert [len(w) for w in want] == [p.length for p in pieces]
    rows = batch.real_rows.cpu().numpy()
    for i, row in enumerate(rows):
        t, b = divmod(int(row), len(pieces))
        lp, ent, v = want[b][t]
        np.testing.assert_allclose(log_probs[i].cpu().numpy(), lp, atol=1e-5)
        assert entropy[i].item() == pytest.approx(ent, abs=1e-5)
        assert values["extrinsic"][i].item() == pytest.approx(v, abs=1e-5)
    np.testing.assert_allclose(bootstrap["extrinsic"].cpu().numpy(), want_bootstrap, atol=1e-5)
    if sequence < unroll:  # the cuts matter: a walk from the piece starts only gives other values
        uncut, _ = _walk(trainer, chunks, unroll, sequence, shared_critic, cut=False)
        gap = max(abs(a[2] - b[2]) + float(np.abs(a[0] - b[0]).max()) for w, u in zip(want, uncut)
                  for a, b in zip(w, u))
        assert gap > 1e-3


def _one_sequence_per_piece(trainer, pieces, unroll):
    """The learner's pass before sequence_length was honoured (every piece one sequence of unroll_length steps from
    its first step's memories), written out: (log pi [N, K], entropy [N], V [N], bootstrap V [B]) in the batch's
    real-row order."""
    actor, critic = trainer.policy.actor, trainer.optimizer.critic
    b_len, t_len = len(pieces), unroll
    obs = np.zeros((b_len, t_len + 1, pieces[0].obs[0].shape[1]), np.float32)
    cont = np.zeros((b_len, t_len, pieces[0].continuous_action.shape[1]), np.float32)
    disc = np.zeros((b_len, t_len, pieces[0].discrete_action.shape[1]), np.int64)
    mask = np.ones((b_len, t_len, pieces[0].action_mask.shape[1]), np.float32)
    for b, p in enumerate(pieces):
        obs[b, :p.length], obs[b, p.length] = p.obs[0], p.bootstrap_obs[0]
        cont[b, :p.length], disc[b, :p.length], mask[b, :p.length] = (p.continuous_action, p.discrete_action,
                                                                      p.action_mask)
    memory = torch.as_tensor(np.stack([p.memory[0] for p in pieces]))[None]
    critic_memory = memory if pieces[0].critic_memory is None else torch.as_tensor(
        np.stack([p.critic_memory[0] for p in pieces]))[None]
    flat = torch.as_tensor(obs.reshape(b_len * (t_len + 1), -1))
    actor_obs = torch.as_tensor(obs[:, :t_len].reshape(b_len * t_len, -1))
    action = AgentAction(torch.as_tensor(cont.reshape(b_len * t_len, -1)),
                         [torch.as_tensor(disc.reshape(b_len * t_len, -1)[:, 0])])
    with torch.no_grad():
        out = actor.get_stats([actor_obs], action, masks=torch.as_tensor(mask.reshape(b_len * t_len, -1)),
                              memories=memory, sequence_length=t_len)
        values, _ = critic.critic_pass([flat], memories=critic_memory, sequence_length=t_len + 1)
    batch = make_batch(pieces, unroll)
    t_of, b_of = np.divmod(batch.real_rows.cpu().numpy(), b_len)
    rows = torch.as_tensor(b_of * t_len + t_of)
    value_rows = torch.as_tensor(b_of * (t_len + 1) + t_of)
    boot_rows = torch.as_tensor(np.arange(b_len) * (t_len + 1) + np.asarray([p.length for p in pieces]))
    v = values["extrinsic"].reshape(-1)
    return out["log_probs"].flatten()[rows], out["entropy"].reshape(-1)[rows], v[value_rows], v[boot_rows]


@pytest.mark.parametrize("sequence", [13, 40])
@pytest.mark.parametrize("shared_critic", [False, True])
def test_sequence_length_at_or_above_unroll_length_is_one_sequence_per_piece(tmp_path, shared_critic, sequence):
    """At sequence_length >= unroll_length each piece keeps one memory (its first step's) and the learner's pass
    equals, to the bit, the one-sequence-per-piece pass impala made before sequence_length was honoured."""
    trainer, spec = _trainer(tmp_path, shared_critic=shared_critic, unroll_length=13, sequence_length=sequence)
    rng = np.random.default_rng(6)
    for i, (length, done) in enumerate(CHUNKS):
        trainer._process_trajectory(_with_memories(make_trajectory(length, spec, done, False, rng,
                                                                   obs_offset=0.1 * i), rng))
    pieces = list(trainer.piece_queue._fresh)
    assert all(p.memory.shape == (1, MEMORY) and p.sequence_length == 13 for p in pieces)
    with torch.no_grad():
        log_probs, entropy, values, bootstrap = trainer.optimizer._forward(make_batch(pieces, 13))
    want = _one_sequence_per_piece(trainer, pieces, 13)
    assert torch.equal(log_probs, want[0]) and torch.equal(entropy, want[1])
    assert torch.equal(values["extrinsic"], want[2]) and torch.equal(bootstrap["extrinsic"], want[3])


@pytest.mark.parametrize("sequence_length", [4, 3])
@pytest.mark.parametrize("style", ["stream", "epochs"])
def test_both_update_styles_train_the_lstms(tmp_path, style, sequence_length):
    trainer, spec = _trainer(tmp_path, update_style=style, batch_size=8, buffer_size=24, max_reuse=2,
                             kl_stop=None, sequence_length=sequence_length)
    before_actor = trainer.policy.actor.network_body.lstm.lstm.weight_ih_l0.detach().clone()
    before_critic = trainer.optimizer.critic.network_body.lstm.lstm.weight_ih_l0.detach().clone()
    rng = np.random.default_rng(3)
    for _ in range(4):
        trainer._process_trajectory(_with_memories(make_trajectory(7, spec, True, False, rng), rng))
    assert trainer._is_ready_update()
    trainer._update_policy()
    assert trainer.policy.version > 0
    assert not torch.equal(before_actor, trainer.policy.actor.network_body.lstm.lstm.weight_ih_l0)
    assert not torch.equal(before_critic, trainer.optimizer.critic.network_body.lstm.lstm.weight_ih_l0)


@pytest.mark.parametrize("sequence_length", [4, 3])
def test_epochs_minibatches_take_their_pieces_targets(tmp_path, sequence_length):
    """A minibatch of whole pieces gets the pass targets of exactly its own steps: with every piece in one
    minibatch, the piece losses equal the round's losses against the same targets."""
    trainer, spec = _trainer(tmp_path, sequence_length=sequence_length)
    rng = np.random.default_rng(4)
    for length in (6, 5):
        trainer._process_trajectory(_with_memories(make_trajectory(length, spec, True, False, rng), rng))
    pieces = list(trainer.piece_queue._fresh)
    batch = make_batch(pieces, 4)
    opt = trainer.optimizer
    targets = opt.pass_targets(batch)
    order = [2, 0, 3, 1]
    sub = make_batch([pieces[k] for k in order], 4)
    position_of = np.zeros(len(pieces) * 4, dtype=np.int64)
    position_of[batch.sequences.rows.cpu().numpy()] = np.arange(int(batch.real_rows.shape[0]))
    local = sub.sequences.rows.cpu().numpy()
    index = torch.as_tensor(position_of[np.asarray(order)[local // 4] * 4 + local % 4])
    from mlagents_plugins.impala.optimizer import PassTargets

    sub_terms = opt.compute_piece_losses(sub, PassTargets({k: v[index] for k, v in targets.vs.items()},
                                                          targets.advantage[index]))
    whole_terms = opt.compute_piece_losses(batch, targets)
    for name in ("policy_loss", "value_loss", "entropy_loss"):
        assert getattr(sub_terms, name).item() == pytest.approx(getattr(whole_terms, name).item(), rel=1e-5), name


def test_onnx_matches_pytorch_step_by_step_over_50_steps(tmp_path):
    trainer, spec = _trainer(tmp_path, branches=())
    rng = np.random.default_rng(5)
    for _ in range(3):
        trainer._process_trajectory(_with_memories(make_trajectory(8, spec, True, False, rng), rng))
    trainer._update_policy()
    policy = trainer.policy
    path = export_policy(policy, str(tmp_path / "impala_recurrent"))
    obs = rng.uniform(-1, 1, size=(50, OBS_SIZE)).astype(np.float32)
    # impala's Gaussian is not squashed: ML-Agents exports the mean clipped to [-3, 3] / 3
    walk = check_recurrent_onnx_over_sequence(policy, path, [obs], np.ones((1, 1), np.float32),
                                              mean_to_action=lambda mu: torch.clamp(mu, -3, 3) / 3)
    assert np.abs(walk.memories).max() > 0
