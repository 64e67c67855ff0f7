"""impala with network_settings.memory (mlagents_plugins/impala/recurrent.py): the actor's memory at each unroll's
start travels with the piece, the separate critic's memory is carried across an agent's chunks and reset at an
episode's end, the learner's sequence pass equals stepping each network from the stored memories, both update
styles train, and the ONNX matches PyTorch step by step over 50 steps."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.settings import NetworkSettings

from mlagents_plugins.impala.pieces import make_batch
from mlagents_plugins.impala.trainer import ImpalaTrainer
from mlagents_plugins.testing.onnx_check import check_recurrent_onnx_over_sequence, export_policy
from tests.impala.helpers import OBS_SIZE, impala_spec, make_trajectory, trainer_settings

MEMORY = 8


def _trainer(tmp_path, shared_critic=False, branches=(3,), **hyper):
    hp = dict(batch_size=16, buffer_size=10 ** 6, unroll_length=4, shared_critic=shared_critic)
    hp.update(hyper)
    settings = trainer_settings(**hp)
    settings.network_settings.memory = NetworkSettings.MemorySettings(sequence_length=4, memory_size=MEMORY)
    spec = impala_spec(2, branches)
    trainer = ImpalaTrainer("B", 10, settings, True, False, 0, str(tmp_path))
    behavior_id = BehaviorIdentifiers.from_name_behavior_id("B?team=0")
    trainer.add_policy(behavior_id, trainer.create_policy(behavior_id, spec))
    return trainer, spec


def _with_memories(traj, rng):
    """The trajectory with a distinct memory at every step (what the acting LSTM would have stored)."""
    steps = [s._replace(memory=rng.normal(size=MEMORY).astype(np.float32)) for s in traj.steps]
    return traj._replace(steps=steps)


def test_memory_at_each_unroll_start_travels_with_the_piece(tmp_path):
    trainer, spec = _trainer(tmp_path)
    rng = np.random.default_rng(0)
    traj = _with_memories(make_trajectory(10, spec, False, False, rng), rng)
    trainer._process_trajectory(traj)
    pieces = list(trainer.piece_queue._fresh)
    assert [p.length for p in pieces] == [4, 4, 2]
    for k, p in enumerate(pieces):
        np.testing.assert_array_equal(p.memory, traj.steps[4 * k].memory)


def test_critic_memory_carries_over_chunks_and_resets_at_episode_end(tmp_path):
    """The separate critic stepped over the agent's chunks from zeros: each piece keeps the critic's memory at its
    first step, the next chunk continues from the last one, and the chunk after an episode end starts at zeros."""
    trainer, spec = _trainer(tmp_path)
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
                    expected.append(m.reshape(-1).cpu().numpy().copy())
                _, m = critic.critic_pass([torch.as_tensor(step.obs[0][None])], memories=m, sequence_length=1)
    for p, want in zip(pieces, expected):
        np.testing.assert_allclose(p.critic_memory, want, atol=1e-6)
    assert np.abs(pieces[2].critic_memory).max() > 0 and not pieces[4].critic_memory.any()


@pytest.mark.parametrize("shared_critic", [False, True])
def test_learner_replays_each_piece_from_its_stored_memories(tmp_path, shared_critic):
    """log pi, entropy and V at every real step, and V at each piece's bootstrap observation, equal stepping the
    policy (and critic) one step at a time from the piece's stored memories."""
    trainer, spec = _trainer(tmp_path, shared_critic=shared_critic)
    rng = np.random.default_rng(2)
    for length, done in ((7, True), (3, False), (5, True)):
        trainer._process_trajectory(_with_memories(make_trajectory(length, spec, done, False, rng), rng))
    pieces = list(trainer.piece_queue._fresh)
    batch = make_batch(pieces, 4)
    opt = trainer.optimizer
    with torch.no_grad():
        log_probs, entropy, values, bootstrap = opt._forward(batch)
    actor, critic = trainer.policy.actor, opt.critic
    want_lp, want_v = {}, {}
    with torch.no_grad():
        for b, p in enumerate(pieces):
            ma = torch.as_tensor(p.memory).reshape(1, 1, -1)
            mc = ma if shared_critic else torch.as_tensor(p.critic_memory).reshape(1, 1, -1)
            for t in range(p.length):
                obs = [torch.as_tensor(p.obs[0][t:t + 1])]
                from mlagents.trainers.torch_entities.agent_action import AgentAction
                action = AgentAction(torch.as_tensor(p.continuous_action[t:t + 1]),
                                     [torch.as_tensor(p.discrete_action[t:t + 1, 0])])
                out = actor.get_stats(obs, action, masks=torch.as_tensor(p.action_mask[t:t + 1]), memories=ma,
                                      sequence_length=1)
                _, ma = actor.network_body(obs, memories=ma, sequence_length=1)
                v, mc = critic.critic_pass(obs, memories=mc, sequence_length=1)
                want_lp[(b, t)] = (out["log_probs"].flatten()[0].cpu().numpy(), float(out["entropy"].reshape(-1)[0]),
                                   float(v["extrinsic"].reshape(-1)[0]))
            v, _ = critic.critic_pass([torch.as_tensor(p.bootstrap_obs[0][None])], memories=mc, sequence_length=1)
            want_v[b] = float(v["extrinsic"].reshape(-1)[0])
    rows = batch.real_rows.cpu().numpy()
    b_count = len(pieces)
    for i, row in enumerate(rows):
        t, b = divmod(int(row), b_count)
        lp, ent, v = want_lp[(b, t)]
        np.testing.assert_allclose(log_probs[i].cpu().numpy(), lp, atol=1e-5)
        assert entropy[i].item() == pytest.approx(ent, abs=1e-5)
        assert values["extrinsic"][i].item() == pytest.approx(v, abs=1e-5)
    np.testing.assert_allclose(bootstrap["extrinsic"].cpu().numpy(), [want_v[b] for b in range(b_count)], atol=1e-5)


@pytest.mark.parametrize("style", ["stream", "epochs"])
def test_both_update_styles_train_the_lstms(tmp_path, style):
    trainer, spec = _trainer(tmp_path, update_style=style, batch_size=8, buffer_size=24, max_reuse=2,
                             kl_stop=None)
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


def test_epochs_minibatches_take_their_pieces_targets(tmp_path):
    """A minibatch of whole pieces gets the pass targets of exactly its own steps: with every piece in one
    minibatch, the piece losses equal the round's losses against the same targets."""
    trainer, spec = _trainer(tmp_path)
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
