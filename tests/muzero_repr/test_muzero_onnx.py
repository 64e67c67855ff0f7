"""The exported policy is representation + actor in one graph with ML-Agents' contract; onnxruntime == PyTorch."""
import numpy as np
import onnx
import pytest

from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch, export_policy

from .muzero_helpers import fill, make_trainer
from tests.builders import behavior_spec


@pytest.mark.parametrize("obs_shapes,cont,branches", [(((5,),), 2, ()), (((3, 20, 20), (2,)), 1, (3, 2))])
def test_onnx_matches_torch(tmp_path, obs_shapes, cont, branches):
    spec = behavior_spec(obs_shapes, cont, branches)
    # the head on h's copy in the vector case, on h in the pixel + hybrid one: both graphs
    trainer = make_trainer(spec, tmp_path, head_reads_target_repr=len(obs_shapes) == 1)
    rng = np.random.default_rng(0)
    fill(trainer, spec, rng)
    for _ in range(3):  # move the weights away from their initialisation, representation included
        trainer.update_once()
    path = export_policy(trainer.policy, str(tmp_path / "policy"))
    graph = onnx.load(path).graph
    inputs = [i.name for i in graph.input]
    assert inputs[: len(obs_shapes)] == [f"obs_{i}" for i in range(len(obs_shapes))]
    outputs = {o.name for o in graph.output}
    assert {"version_number", "memory_size"} <= outputs
    assert ("continuous_actions" in outputs) == (cont > 0)
    assert ("discrete_actions" in outputs) == bool(branches)
    # The weights of the representation the head reads are part of the graph (it is not a separate model): the
    # target copy of h where the head reads it, else h itself.
    body = trainer.policy.actor.network_body
    assert body.read_target == (len(obs_shapes) == 1)
    read = body.target_representation if body.read_target else body.representation
    rep_w = read.out.weight.detach().numpy()
    inits = [onnx.numpy_helper.to_array(t) for t in graph.initializer]
    assert any(a.shape == rep_w.shape and np.allclose(a, rep_w) for a in inits)
    if body.read_target:  # h moved in the updates, its copy did not (no refresh yet): h is not what acts
        online_w = body.representation.out.weight.detach().numpy()
        assert not np.allclose(online_w, rep_w)
        assert not any(a.shape == online_w.shape and np.allclose(a, online_w) for a in inits)
    batch = 5
    obs = [rng.random((batch,) + tuple(s)).astype(np.float32) for s in obs_shapes]
    masks = np.ones((batch, sum(branches)), np.float32)
    if branches:
        masks[:, 0] = 0.0  # forbid action 0 of branch 0
    got = compare_onnx_with_torch(trainer.policy, path, obs, masks, np.zeros((batch, 1, 0), np.float32))
    if branches:
        assert (got["deterministic_discrete_actions"][:, 0] != 0).all()
