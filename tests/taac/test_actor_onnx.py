"""Two-stage acting with memory, and the exported ONNX policy rolled in onnxruntime against PyTorch."""
import numpy as np
import pytest
from mlagents.torch_utils import torch
from mlagents.trainers.settings import NetworkSettings
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DecisionSteps, DimensionProperty, ObservationSpec, ObservationType

import mlagents_plugins  # noqa: F401  (ONNX export fix)
from mlagents_plugins.taac import trajectories as T
from mlagents_plugins.offpolicy.extras import STEP_EXTRAS_OUTPUT
from mlagents_plugins.taac.policy import REPEATS, SWITCH, TAU, TAU_PREV, TaacPolicy
from mlagents_plugins.taac.trajectories import TrajectoryKind
from mlagents_plugins.testing.onnx_check import export_policy, run_onnx, run_torch_actor

OBS = 5
ACT = 2


def make_policy(
    kind=TrajectoryKind.LINEAR, max_repeat_steps=0, randomize=False, deterministic=False, seed=0, critic_layer_norm=True
):
    torch.manual_seed(seed)
    spec = BehaviorSpec(
        [ObservationSpec((OBS,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "obs")],
        ActionSpec.create_continuous(ACT),
    )
    ns = NetworkSettings(hidden_units=16, num_layers=2, deterministic=deterministic)
    kwargs = dict(
        stream_names=["extrinsic", "curiosity"],
        kind=kind,
        inverse_mode=True,
        num_critic_replicas=2,
        max_repeat_steps=max_repeat_steps,
        advantage_clipping=None,
        init_switch_temperature=0.05,
        critic_layer_norm=critic_layer_norm,
    )
    return TaacPolicy(seed, spec, ns, kwargs, randomize_first_state_tau=randomize)


def decision_steps(obs):
    n = obs.shape[0]
    return DecisionSteps([obs.astype(np.float32)], np.zeros(n, np.float32), np.arange(n), None, np.zeros(n), np.zeros(n))


def test_act_follows_trajectory_rules_and_memory_layout():
    policy = make_policy(kind=TrajectoryKind.QUADRATIC)
    actor = policy.actor
    rng = np.random.default_rng(0)
    obs = [torch.as_tensor(rng.normal(size=(64, OBS)), dtype=torch.float32)]
    mem = torch.zeros(64, actor.memory_size)
    mem[:, : actor.tau_size] = torch.as_tensor(rng.uniform(-0.5, 0.5, size=(64, actor.tau_size)), dtype=torch.float32)
    mem[:, -1] = torch.as_tensor(rng.integers(0, 5, size=64), dtype=torch.float32)
    with torch.no_grad():
        step = actor.act(obs, mem, deterministic=False)
    tau_prev = mem[:, : actor.tau_size]
    keep = T.advance(tau_prev, TrajectoryKind.QUADRATIC, ACT)
    kept = ~step.switch
    assert 0 < kept.sum() < 64, "both switch outcomes should occur on random inputs"
    np.testing.assert_allclose(step.tau[kept].numpy(), keep[kept].numpy(), atol=1e-6)
    # Switched rows pass through their new action with v = (a - a^-)/2 and u = v/2 (inverse mode).
    sw = step.switch
    a_new = step.tau[sw, :ACT]
    np.testing.assert_allclose(step.tau[sw, ACT : 2 * ACT].numpy(), ((a_new - tau_prev[sw, :ACT]) / 2).numpy(), atol=1e-6)
    np.testing.assert_allclose(step.repeats.numpy(), np.where(sw.numpy(), 1.0, mem[:, -1].numpy() + 1), atol=0)
    np.testing.assert_allclose(step.memory_out[:, : actor.tau_size].numpy(), step.tau.numpy())
    np.testing.assert_allclose(step.memory_out[:, actor.tau_size].numpy(), sw.float().numpy())
    np.testing.assert_allclose(step.action.numpy(), step.tau[:, :ACT].numpy())


def test_max_repeat_steps_forces_a_switch():
    policy = make_policy(kind=TrajectoryKind.CONSTANT, max_repeat_steps=3)
    actor = policy.actor
    obs = [torch.zeros(4, OBS)]
    mem = torch.zeros(4, actor.memory_size)
    mem[:, -1] = torch.tensor([0.0, 2.0, 3.0, 7.0])
    with torch.no_grad():
        # Rows 2 and 3 have run tau^- for >= 3 steps: they must switch whatever the critics say.
        actor.log_alpha_switch.fill_(-50.0)
        step = actor.act(obs, mem, deterministic=True)
    assert step.switch[2] and step.switch[3]
    assert step.repeats[2] == 1 and step.repeats[3] == 1


def step_extras(policy, info):
    """The step extras as the trainer will read them (through the transport), checked against the named ones."""
    packed = policy.step_extras.unpack(info.outputs["log_probs"].continuous)
    named = info.outputs[STEP_EXTRAS_OUTPUT]
    assert set(packed) == {TAU_PREV, TAU, SWITCH, REPEATS} == set(named)
    for k in packed:
        np.testing.assert_array_equal(packed[k], named[k])
    assert packed[SWITCH].dtype == bool
    return packed


def test_policy_memory_per_agent_and_step_extras():
    policy = make_policy(kind=TrajectoryKind.LINEAR, randomize=True)
    rng = np.random.default_rng(1)
    ids = ["agent_0-0", "agent_0-1", "agent_0-2"]
    info1 = policy.get_action(decision_steps(rng.normal(size=(3, OBS))))
    rec1 = step_extras(policy, info1)
    # Randomized first tau^- (not zeros), and the memory stored per agent is the executed trajectory.
    assert np.abs(rec1[TAU_PREV]).sum() > 0
    for i, gid in enumerate(ids):
        np.testing.assert_allclose(policy.memory_dict[gid][: policy.actor.tau_size], rec1[TAU][i])
    np.testing.assert_allclose(info1.action.continuous, rec1[TAU][:, :ACT])
    info2 = policy.get_action(decision_steps(rng.normal(size=(3, OBS))))
    rec2 = step_extras(policy, info2)
    np.testing.assert_allclose(rec2[TAU_PREV], rec1[TAU], atol=1e-6)  # tau^- of step 2 = tau of step 1
    policy.remove_memories(["agent_0-1"])  # episode end for agent 1
    info3 = policy.get_action(decision_steps(rng.normal(size=(3, OBS))))
    rec3 = step_extras(policy, info3)
    np.testing.assert_allclose(rec3[TAU_PREV][[0, 2]], rec2[TAU][[0, 2]], atol=1e-6)
    assert not np.allclose(rec3[TAU_PREV][1], rec2[TAU][1])


@pytest.mark.parametrize("kind,max_repeat", [(TrajectoryKind.CONSTANT, 0), (TrajectoryKind.QUADRATIC, 4)])
def test_onnx_rollout_matches_torch_step_by_step(tmp_path, kind, max_repeat):
    pytest.importorskip("onnxruntime")
    policy = make_policy(kind=kind, max_repeat_steps=max_repeat, seed=3)
    actor = policy.actor
    # Make the two stages disagree often: random critic scale so both switch outcomes occur.
    with torch.no_grad():
        actor.log_alpha_switch.fill_(-3.0)
    path = export_policy(policy, str(tmp_path / "taac"))
    rng = np.random.default_rng(7)
    n_agents, steps = 3, 25
    mem_onnx = np.zeros((n_agents, 1, actor.memory_size), np.float32)
    mem_torch = torch.zeros(n_agents, actor.memory_size)
    switches = []
    for t in range(steps):
        obs = rng.normal(size=(n_agents, OBS)).astype(np.float32)
        out = run_onnx(path, [obs], np.ones((n_agents, 0), np.float32), mem_onnx)
        with torch.no_grad():
            step = actor.act([torch.as_tensor(obs)], mem_torch, deterministic=True)
        np.testing.assert_allclose(out["deterministic_continuous_actions"], step.action.numpy(), atol=1e-5)
        np.testing.assert_allclose(out["continuous_actions"], step.action.numpy(), atol=1e-5)
        rec = out["recurrent_out"].reshape(n_agents, -1)
        assert (rec[:, actor.tau_size] > 0.5).tolist() == step.switch.tolist(), f"switch differs at step {t}"
        np.testing.assert_allclose(rec, step.memory_out.numpy(), atol=1e-5)
        switches.append(step.switch.numpy())
        mem_onnx = out["recurrent_out"].reshape(n_agents, 1, -1).astype(np.float32)
        mem_torch = step.memory_out
    switches = np.array(switches)
    assert switches.any() and not switches.all(), "the rollout should both keep and switch"
    if max_repeat:
        assert (mem_torch[:, -1] <= max_repeat).all()
    torch_out = run_torch_actor(policy, [obs], np.ones((n_agents, 0), np.float32), mem_onnx)
    assert int(torch_out["memory_size"][0]) == actor.memory_size


def test_onnx_graph_uses_only_common_ops(tmp_path):
    """Opset 9 as mlagents exports, and no Split/Random ops (the file must be deterministic and portable)."""
    onnx = pytest.importorskip("onnx")
    policy = make_policy(kind=TrajectoryKind.QUADRATIC, max_repeat_steps=2)
    model = onnx.load(export_policy(policy, str(tmp_path / "taac")))
    ops = {n.op_type for n in model.graph.node}
    assert not ops & {"Split", "RandomNormalLike", "RandomUniformLike", "RandomNormal", "RandomUniform"}, ops
    assert model.opset_import[0].version == 9
    assert [o.name for o in model.graph.output][-1] == "recurrent_out"
    # The critics' layer normalization (on by default) is exported as plain arithmetic, and the flag saved beside
    # their weights (extra state) stays out of the file.
    assert policy.actor.critic.layer_norm and {"ReduceMean", "Sqrt", "Div"} <= ops, ops
    assert not [i.name for i in model.graph.initializer if "extra_state" in i.name]
    assert not [i.name for i in model.graph.input if "extra_state" in i.name]
