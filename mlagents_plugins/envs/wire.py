"""Conversions between the academy's arrays and ML-Agents' protobuf messages (Unity's side of them).

Vector observations travel as float lists; visual ones (rank 3, CHW) as PNG, like a Unity camera
sensor with PNG compression: one RGB PNG per 3 channels (zero-padded), concatenated, with
``compressed_channel_mapping`` when the channel count is not 3 - what ``rpc_utils.process_pixels``
decodes.  Values must be multiples of 1/255 to survive the round trip bit-exactly (the camera scene
renders that way).
"""
import io
from typing import List

import numpy as np
from PIL import Image

from mlagents_envs.base_env import ActionSpec, ActionTuple, BehaviorSpec, ObservationSpec
from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.brain_parameters_pb2 import BrainParametersProto
from mlagents_envs.communicator_objects.observation_pb2 import PNG, ObservationProto
from mlagents_envs.communicator_objects.space_type_pb2 import continuous as SPACE_CONTINUOUS
from mlagents_envs.communicator_objects.space_type_pb2 import discrete as SPACE_DISCRETE

from mlagents_plugins.envs.academy import AgentInfos


def brain_parameters_proto(behavior_name: str, action_spec: ActionSpec) -> BrainParametersProto:
    bp = BrainParametersProto(brain_name=behavior_name, is_training=True)
    bp.action_spec.num_continuous_actions = action_spec.continuous_size
    bp.action_spec.num_discrete_actions = action_spec.discrete_size
    bp.action_spec.discrete_branch_sizes.extend(action_spec.discrete_branches)
    # Deprecated fields, filled as Unity does for single-kind action spaces (read by old trainers).
    if action_spec.discrete_size == 0:
        bp.vector_action_space_type_deprecated = SPACE_CONTINUOUS
        bp.vector_action_size_deprecated.append(action_spec.continuous_size)
    elif action_spec.continuous_size == 0:
        bp.vector_action_space_type_deprecated = SPACE_DISCRETE
        bp.vector_action_size_deprecated.extend(action_spec.discrete_branches)
    return bp


def png_bytes(chw: np.ndarray) -> bytes:
    """Encode a CHW float image in [0, 1] as concatenated RGB PNGs (3 channels each)."""
    channels, height, width = chw.shape
    u8 = np.clip(np.round(chw * 255.0), 0, 255).astype(np.uint8)
    out = bytearray()
    for start in range(0, channels, 3):
        rgb = np.zeros((height, width, 3), dtype=np.uint8)
        part = u8[start : start + 3]
        rgb[:, :, : part.shape[0]] = part.transpose(1, 2, 0)
        buf = io.BytesIO()
        Image.fromarray(rgb, "RGB").save(buf, format="PNG")
        out += buf.getvalue()
    return bytes(out)


def observation_proto(value: np.ndarray, spec: ObservationSpec) -> ObservationProto:
    obs = ObservationProto(name=spec.name, observation_type=int(spec.observation_type.value))
    obs.shape.extend(spec.shape)
    obs.dimension_properties.extend(int(d.value) for d in spec.dimension_property)
    if len(spec.shape) == 3:
        obs.compression_type = PNG
        obs.compressed_data = png_bytes(value)
        channels = spec.shape[0]
        if channels != 3:
            padded = -(-channels // 3) * 3
            obs.compressed_channel_mapping.extend(list(range(channels)) + [-1] * (padded - channels))
    else:
        obs.float_data.data.extend(np.asarray(value, dtype=np.float32).ravel().tolist())
    return obs


def agent_info_protos(infos: AgentInfos, spec: BehaviorSpec) -> List[AgentInfoProto]:
    out = []
    for row in range(len(infos.agent_id)):
        info = AgentInfoProto(
            reward=float(infos.reward[row]),
            done=bool(infos.done[row]),
            max_step_reached=bool(infos.max_step_reached[row]),
            id=int(infos.agent_id[row]),
        )
        if infos.action_mask is not None:
            info.action_mask.extend(infos.action_mask[row].tolist())
        info.observations.extend(
            observation_proto(o[row], s) for o, s in zip(infos.obs, spec.observation_specs)
        )
        out.append(info)
    return out


def actions_from_protos(actions: List[AgentActionProto], spec: ActionSpec, n_agents: int) -> ActionTuple:
    """ActionTuple for ``n_agents`` decision rows; rows Python did not send stay zero."""
    cont = np.zeros((n_agents, spec.continuous_size), dtype=np.float32)
    disc = np.zeros((n_agents, spec.discrete_size), dtype=np.int32)
    for row, act in enumerate(list(actions)[:n_agents]):
        if spec.continuous_size:
            values = list(act.continuous_actions) or list(act.vector_actions_deprecated)[: spec.continuous_size]
            if len(values) != spec.continuous_size:
                raise ValueError(
                    f"agent row {row}: got {len(values)} continuous actions, expected {spec.continuous_size}"
                )
            cont[row] = values
        if spec.discrete_size:
            values = list(act.discrete_actions)
            if not values:
                values = list(act.vector_actions_deprecated)[spec.continuous_size :]
            if len(values) != spec.discrete_size:
                raise ValueError(f"agent row {row}: got {len(values)} discrete actions, expected {spec.discrete_size}")
            disc[row] = values
    return ActionTuple(continuous=cont, discrete=disc)
