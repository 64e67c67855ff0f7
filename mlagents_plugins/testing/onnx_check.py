"""Run an exported policy in onnxruntime next to its PyTorch actor.

Why: the contract with Unity is the ONNX file, not our Python code.  Every trainer's test exports its policy
through mlagents' own ``ModelSerializer`` (the path mlagents-learn uses at checkpoints) and checks that the
file's deterministic actions, constants and memory outputs equal what the PyTorch actor computes.
"""
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

import numpy as np
from mlagents.torch_utils import torch
from mlagents.trainers.torch_entities.model_serialization import (
    ModelSerializer,
    TensorNames,
    exporting_to_onnx,
)


def export_policy(policy, path_without_suffix: str) -> str:
    """Export ``policy`` exactly as mlagents-learn does (with its start-up hook's ``onnx_export`` patch) and
    return the ``.onnx`` path."""
    from mlagents_plugins.host import patches

    patches.install("onnx_export")
    ModelSerializer(policy).export_policy_model(path_without_suffix)
    return f"{path_without_suffix}.onnx"


def onnx_inputs(
    num_obs: int,
    obs: Sequence[np.ndarray],
    masks: Optional[np.ndarray],
    memories: np.ndarray,
) -> Dict[str, np.ndarray]:
    feed = {TensorNames.get_observation_name(i): np.asarray(obs[i], np.float32) for i in range(num_obs)}
    feed[TensorNames.action_mask_placeholder] = np.asarray(masks, np.float32)
    feed[TensorNames.recurrent_in_placeholder] = np.asarray(memories, np.float32)
    return feed


def run_onnx(
    onnx_path: str, obs: Sequence[np.ndarray], masks: np.ndarray, memories: np.ndarray
) -> Dict[str, np.ndarray]:
    """Evaluate the file in onnxruntime; returns output name -> array."""
    import onnxruntime as ort

    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    input_names = {i.name for i in sess.get_inputs()}
    feed = onnx_inputs(len(obs), obs, masks, memories)
    feed = {k: v for k, v in feed.items() if k in input_names}
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feed)))


def run_torch_actor(
    policy, obs: Sequence[np.ndarray], masks: np.ndarray, memories: np.ndarray
) -> Dict[str, np.ndarray]:
    """Call the actor's export ``forward`` (the graph that is traced) and name its outputs.

    Runs inside ``exporting_to_onnx`` because mlagents' layers switch to the exported memory layout
    (batch, 1, memory) there, which is what Unity feeds.
    """
    serializer = ModelSerializer(policy)
    device = next(policy.actor.parameters()).device
    with torch.no_grad(), exporting_to_onnx():
        outs = policy.actor(
            [torch.as_tensor(np.asarray(o, np.float32), device=device) for o in obs],
            torch.as_tensor(np.asarray(masks, np.float32), device=device),
            torch.as_tensor(np.asarray(memories, np.float32), device=device),
        )
    return {
        name: (out.detach().cpu().numpy() if isinstance(out, torch.Tensor) else np.asarray(out))
        for name, out in zip(serializer.output_names, outs)
    }


DETERMINISTIC_OUTPUTS: List[str] = [
    TensorNames.version_number,
    TensorNames.memory_size,
    TensorNames.continuous_action_output_shape,
    TensorNames.deterministic_continuous_action_output,
    TensorNames.discrete_action_output_shape,
    TensorNames.deterministic_discrete_action_output,
    TensorNames.recurrent_output,
]


def compare_onnx_with_torch(
    policy,
    onnx_path: str,
    obs: Sequence[np.ndarray],
    masks: np.ndarray,
    memories: np.ndarray,
    atol: float = 1e-5,
) -> Dict[str, np.ndarray]:
    """Assert every deterministic output of the file equals PyTorch's; returns the ONNX outputs."""
    got = run_onnx(onnx_path, obs, masks, memories)
    want = run_torch_actor(policy, obs, masks, memories)
    assert set(got) == set(want), f"output names differ: onnx {sorted(got)} vs torch {sorted(want)}"
    for name in DETERMINISTIC_OUTPUTS:
        if name in want:
            np.testing.assert_allclose(
                np.asarray(got[name], np.float64).reshape(np.shape(want[name])),
                np.asarray(want[name], np.float64),
                atol=atol,
                rtol=1e-5,
                err_msg=f"ONNX output {name!r} differs from PyTorch",
            )
    return got


class RecurrentWalk(NamedTuple):
    """The exported file's outputs over a sequence walked step by step (``T`` steps)."""

    memories: np.ndarray  # [T, M] recurrent_out after each step (hidden state, then cell state)
    continuous_actions: Optional[np.ndarray]  # [T, C] deterministic continuous actions; None without them


def check_recurrent_onnx_over_sequence(
    policy,
    onnx_path: str,
    obs: Sequence[np.ndarray],
    masks: np.ndarray,
    mean_to_action: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    atol: float = 1e-5,
) -> RecurrentWalk:
    """ML-Agents' recurrent contract over a sequence: the file run in onnxruntime one step at a time from zero
    memory, each step's ``recurrent_out`` fed back as the next step's ``recurrent_in``, against the policy's LSTM
    in PyTorch, both stepped one observation at a time (every step's hidden and cell state) and run over the whole
    sequence in one pass (its outputs are the first half of each step's memory, its last memory the file's last).

    :param obs: per observation spec ``[T, ...]``, one agent's sequence.
    :param masks: ``[1, A]`` the action mask fed at every step.
    :param mean_to_action: the deterministic continuous action the file exports, from the Gaussian's mean (an
        unsquashed ML-Agents Gaussian exports ``clamp(mu, -3, 3) / 3``, a squashed one ``mu``); None: the
        continuous actions are not compared.
    :return: the file's memories and deterministic continuous actions per step.
    """
    memory_size = policy.m_size
    steps = int(np.shape(obs[0])[0])
    memory = np.zeros((1, 1, memory_size), np.float32)
    got_memories, got_actions = [], []
    for step in range(steps):
        out = run_onnx(onnx_path, [o[step:step + 1] for o in obs], masks, memory)
        assert int(np.asarray(out[TensorNames.memory_size]).reshape(-1)[0]) == memory_size
        memory = np.asarray(out[TensorNames.recurrent_output], np.float32).reshape(1, 1, memory_size)
        got_memories.append(memory.reshape(-1).copy())
        if TensorNames.deterministic_continuous_action_output in out:
            got_actions.append(np.asarray(out[TensorNames.deterministic_continuous_action_output]).reshape(-1))
    got_memories = np.stack(got_memories)
    body = policy.actor.network_body
    with torch.no_grad():
        whole = [torch.as_tensor(np.asarray(o, np.float32)) for o in obs]
        encoding, last = body(whole, memories=torch.zeros(1, 1, memory_size), sequence_length=steps)
        stepped, m = [], torch.zeros(1, 1, memory_size)
        for step in range(steps):
            _, m = body([o[step:step + 1] for o in whole], memories=m, sequence_length=1)
            stepped.append(m.reshape(-1).cpu().numpy().copy())
    np.testing.assert_allclose(got_memories, np.stack(stepped), atol=atol, err_msg="memories differ step by step")
    np.testing.assert_allclose(got_memories[:, : memory_size // 2], encoding.cpu().numpy(), atol=atol,
                               err_msg="the sequence pass's outputs are not the first half of each memory")
    np.testing.assert_allclose(got_memories[-1], last.reshape(-1).cpu().numpy(), atol=atol)
    actions = np.stack(got_actions) if got_actions else None
    if mean_to_action is not None:
        assert actions is not None, "the file has no deterministic continuous action"
        with torch.no_grad():
            mu = policy.actor.action_model._continuous_distribution.mu(encoding)
            np.testing.assert_allclose(actions, mean_to_action(mu).cpu().numpy(), atol=atol)
    return RecurrentWalk(got_memories, actions)
