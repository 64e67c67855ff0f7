"""The ONNX export fix: files come out of mlagents' own ModelSerializer, load in onnxruntime, keep
mlagents' contract (opset, names, constants) and reproduce PyTorch's deterministic actions."""
import importlib.metadata as importlib_metadata

import numpy as np
import onnx
import pytest
from mlagents.plugins import ML_AGENTS_STATS_WRITER
from mlagents.torch_utils import torch
from mlagents.trainers.policy.torch_policy import TorchPolicy
from mlagents.trainers.settings import NetworkSettings, SerializationSettings
from mlagents.trainers.torch_entities.model_serialization import ModelSerializer, TensorNames
from mlagents.trainers.torch_entities.networks import SimpleActor
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from mlagents_plugins.testing.onnx_check import compare_onnx_with_torch, export_policy


def _vec(n):
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, f"vec{n}")


def _vis(c, h, w):
    return ObservationSpec(
        (c, h, w),
        (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE),
        ObservationType.DEFAULT,
        "camera",
    )


CASES = {
    "continuous": BehaviorSpec([_vec(8)], ActionSpec(2, ())),
    "discrete_branches": BehaviorSpec([_vec(6)], ActionSpec(0, (3, 2, 4))),
    "hybrid": BehaviorSpec([_vec(5)], ActionSpec(3, (2,))),
    "visual_plus_vector": BehaviorSpec([_vis(3, 20, 20), _vec(3)], ActionSpec(2, ())),
}


def _policy(spec, tanh_squash=True, memory=None):
    torch.manual_seed(3)
    settings = NetworkSettings(hidden_units=32, num_layers=2, memory=memory)
    return TorchPolicy(1, spec, settings, SimpleActor, {"conditional_sigma": False, "tanh_squash": tanh_squash})


def _random_inputs(spec, rng, batch):
    obs = [rng.uniform(-2.0, 3.0, size=(batch,) + o.shape).astype(np.float32) for o in spec.observation_specs]
    branches = spec.action_spec.discrete_branches
    masks = np.ones((batch, sum(branches)), np.float32)
    if branches:
        # Forbid the first choice of every branch for half of the batch: masked deterministic actions must agree.
        start = 0
        for b in branches:
            masks[: batch // 2, start] = 0.0
            start += b
    return obs, masks


def test_plugin_hook_is_registered_for_every_mlagents_learn_run():
    names = [ep.name for ep in importlib_metadata.entry_points().select(group=ML_AGENTS_STATS_WRITER)]
    assert "mlagents_plugins" in names
    ep = next(ep for ep in importlib_metadata.entry_points().select(group=ML_AGENTS_STATS_WRITER) if ep.name == "mlagents_plugins")
    assert ep.load()(None) == []  # adds no writer: ML-Agents' own summaries stay as they are


@pytest.mark.parametrize("case", sorted(CASES))
def test_export_matches_torch_and_mlagents_contract(case, tmp_path):
    spec = CASES[case]
    policy = _policy(spec)
    path = export_policy(policy, str(tmp_path / case))
    model = onnx.load(path)
    onnx.checker.check_model(model)
    # Same contract as mlagents' ModelSerializer: opset, input and output names.
    serializer = ModelSerializer(policy)
    assert model.opset_import[0].version == SerializationSettings.onnx_opset
    # The traced graph keeps the inputs it uses, in mlagents' order: every observation, the action masks
    # when there are discrete branches, recurrent_in only with memory (unused inputs are pruned by tracing).
    graph_inputs = [i.name for i in model.graph.input]
    expected_inputs = [TensorNames.get_observation_name(i) for i in range(len(spec.observation_specs))]
    if spec.action_spec.discrete_size:
        expected_inputs.append(TensorNames.action_mask_placeholder)
    assert graph_inputs == expected_inputs
    assert all(name in serializer.input_names for name in graph_inputs)
    assert [o.name for o in model.graph.output] == serializer.output_names
    # The legacy (TorchScript) exporter writes no ONNX functions; the dynamo exporter does.
    assert len(model.functions) == 0
    rng = np.random.default_rng(11)
    obs, masks = _random_inputs(spec, rng, batch=6)
    memories = np.zeros((6, 1, policy.export_memory_size), np.float32)
    got = compare_onnx_with_torch(policy, path, obs, masks, memories)
    assert got[TensorNames.version_number][0] == SimpleActor.MODEL_EXPORT_VERSION
    if spec.action_spec.discrete_size:
        det = got[TensorNames.deterministic_discrete_action_output]
        assert det.shape == (6, spec.action_spec.discrete_size)
        # masked choices (index 0 of each branch for the first half) are never taken
        assert np.all(det[:3] != 0)
    if spec.action_spec.continuous_size:
        det = got[TensorNames.deterministic_continuous_action_output]
        assert det.shape == (6, spec.action_spec.continuous_size)
        assert np.all(np.abs(det) <= 1.0 + 1e-6)


def test_recurrent_policy_exports_memory_in_and_out(tmp_path):
    spec = CASES["hybrid"]
    policy = _policy(spec, memory=NetworkSettings.MemorySettings(sequence_length=4, memory_size=16))
    path = export_policy(policy, str(tmp_path / "rnn"))
    model = onnx.load(path)
    assert TensorNames.recurrent_in_placeholder in [i.name for i in model.graph.input]
    assert [o.name for o in model.graph.output][-1] == TensorNames.recurrent_output
    rng = np.random.default_rng(5)
    obs, masks = _random_inputs(spec, rng, batch=4)
    memories = rng.normal(size=(4, 1, policy.export_memory_size)).astype(np.float32)
    got = compare_onnx_with_torch(policy, path, obs, masks, memories)
    assert got[TensorNames.memory_size][0] == 16
    assert np.abs(got[TensorNames.recurrent_output]).sum() > 0


def test_export_is_atomic_and_leaves_no_temporary_file(tmp_path):
    policy = _policy(CASES["continuous"])
    export_policy(policy, str(tmp_path / "p"))
    export_policy(policy, str(tmp_path / "p"))  # overwrite in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.onnx"]
