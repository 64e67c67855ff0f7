"""The Unity-side runtime around a scene: behaviors, agent ids, side channels, message order.

This is what Unity's Academy + Agents do around the scene logic, written once so the in-process
``SceneEnv`` and the gRPC stand-in produce the same thing:

* a scene has one behavior per part (``scenes.scene_behaviors``: a plain scene is its own one part, a group
  has several); each behavior ``Name?team=0`` gets its own infos and its own actions in every message;
* every agent episode gets a fresh id (Unity's episode id, one counter for all behaviors, as Unity's is
  static); an agent whose episode ended appears twice in its behavior's infos of one message - its terminal
  info (``done``, ``max_step_reached`` for time-outs) then the first info of its next episode (``done``
  false, reward 0) under a new id;
* actions are expected per behavior for its ``done``-false infos, in message order (= slot order);
* side channels from Python are applied *before* the command of the same message (environment
  parameters with samplers, engine configuration, training analytics);
* every episode end sends ``Scene/Success Rate`` (1 or 0, averaged) and ``Scene/Difficulty`` through
  the stats side channel, so they show up in mlagents summaries and TensorBoard (the stats channel names no
  behavior: ML-Agents adds them to every behavior's summaries, as it does for a Unity scene).
"""
import logging
import struct
import uuid
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from mlagents_envs.base_env import ActionTuple, BehaviorSpec
from mlagents_envs.side_channel.default_training_analytics_side_channel import (
    DefaultTrainingAnalyticsSideChannel,
)
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.incoming_message import IncomingMessage
from mlagents_envs.side_channel.outgoing_message import OutgoingMessage
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod, StatsSideChannel

from mlagents_plugins.envs.params import ParameterStore
from mlagents_plugins.envs.scenes import Scene, SceneRef, scene_behaviors

logger = logging.getLogger(__name__)

STAT_SUCCESS_RATE = "Scene/Success Rate"
STAT_DIFFICULTY = "Scene/Difficulty"

ENV_PARAMS_ID = EnvironmentParametersChannel().channel_id
ENGINE_CONFIG_ID = EngineConfigurationChannel().channel_id
STATS_ID = StatsSideChannel().channel_id
ANALYTICS_ID = DefaultTrainingAnalyticsSideChannel.CHANNEL_ID
_ENGINE = EngineConfigurationChannel.ConfigurationType


class AgentInfos(NamedTuple):
    """One behavior's agent infos of one message, in message order (rows)."""

    agent_id: np.ndarray  # int32 (M,)
    done: np.ndarray  # bool (M,)
    max_step_reached: np.ndarray  # bool (M,)
    reward: np.ndarray  # float32 (M,)
    obs: List[np.ndarray]  # float32, one (M, ...) array per observation spec
    action_mask: Optional[np.ndarray]  # bool (M, sum of branch sizes), True = masked; None if no branches


def split_side_channel_data(data: bytes) -> List[Tuple[uuid.UUID, bytes]]:
    """Split a side-channel blob (16-byte channel id, int32 length, payload ...) into messages."""
    out = []
    offset = 0
    while offset < len(data):
        if offset + 20 > len(data):
            raise ValueError("side channel data is truncated (header)")
        channel_id = uuid.UUID(bytes_le=bytes(data[offset : offset + 16]))
        (length,) = struct.unpack_from("<i", data, offset + 16)
        offset += 20
        if length < 0 or offset + length > len(data):
            raise ValueError(f"side channel message of channel {channel_id} is truncated")
        out.append((channel_id, bytes(data[offset : offset + length])))
        offset += length
    return out


def pack_side_channel_message(channel_id: uuid.UUID, payload: bytes) -> bytes:
    return channel_id.bytes_le + struct.pack("<i", len(payload)) + bytes(payload)


class Behavior:
    """One behavior of the academy: a scene whose agents all carry this behavior name, and their episode ids."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.name = f"{scene.behavior_name}?team=0"
        self.spec = BehaviorSpec(scene.observation_specs, scene.action_spec)
        self.ids = np.zeros(scene.num_agents, dtype=np.int32)

    def flat_mask(self) -> Optional[np.ndarray]:
        """The scene's per-branch masks as one row per slot, as an AgentInfo carries them (all False when the
        scene sets none; None without discrete branches)."""
        spec = self.scene.action_spec
        if spec.discrete_size == 0:
            return None
        masks = self.scene.action_mask()
        if masks is None:
            return np.zeros((self.scene.num_agents, int(sum(spec.discrete_branches))), dtype=bool)
        return np.concatenate([np.asarray(m, dtype=bool) for m in masks], axis=1)


class Academy:
    """Runs one scene the way Unity runs a scene with its Behaviors; see the module docstring.

    Every part of the scene gets the same arguments: ``num_areas`` areas each, ``seed``, one shared
    ``ParameterStore`` (environment parameters reach every agent, as in Unity).
    """

    def __init__(
        self,
        scene: SceneRef,
        num_areas: int = 1,
        seed: int = 0,
        max_episode_steps: Optional[int] = None,
        decision_period: int = 1,
        **scene_kwargs: Any,
    ):
        self.parameters = ParameterStore()
        self.behaviors: List[Behavior] = [
            Behavior(
                cls(
                    num_areas=num_areas,
                    seed=seed,
                    max_episode_steps=max_episode_steps,
                    decision_period=decision_period,
                    parameters=self.parameters,
                    **scene_kwargs,
                )
            )
            for cls in scene_behaviors(scene)
        ]
        names = [b.name for b in self.behaviors]
        if len(set(names)) != len(names):
            raise ValueError(f"scene={scene!r}: two parts share a behavior name ({', '.join(names)})")
        self.engine_config: Dict[str, Any] = {}
        self.analytics_messages = 0
        self.total_steps = 0
        self._next_id = 0
        self._stats: List[Tuple[str, float, StatsAggregationMethod]] = []

    @property
    def behavior_specs(self) -> Dict[str, BehaviorSpec]:
        """Behavior name -> spec, in message order."""
        return {b.name: b.spec for b in self.behaviors}

    @property
    def num_agents(self) -> int:
        return sum(b.scene.num_agents for b in self.behaviors)

    # ----- side channels ----------------------------------------------------------------------------
    def receive_side_channels(self, data: bytes) -> None:
        """Apply the messages Python queued (call before executing that message's command)."""
        for channel_id, payload in split_side_channel_data(data):
            msg = IncomingMessage(payload)
            if channel_id == ENV_PARAMS_ID:
                key = self.parameters.apply_message(msg)
                logger.debug(f"environment parameter {key} = {self.parameters.describe(key)}")
            elif channel_id == ENGINE_CONFIG_ID:
                self._apply_engine_config(msg)
            elif channel_id == ANALYTICS_ID:
                self.analytics_messages += 1  # Unity forwards these to its analytics; nothing to do
            else:
                logger.warning(f"Unknown side channel data received. Channel type: {channel_id}.")

    def _apply_engine_config(self, msg: IncomingMessage) -> None:
        kind = msg.read_int32()
        if kind == _ENGINE.SCREEN_RESOLUTION:
            self.engine_config["width"] = msg.read_int32()
            self.engine_config["height"] = msg.read_int32()
        elif kind == _ENGINE.QUALITY_LEVEL:
            self.engine_config["quality_level"] = msg.read_int32()
        elif kind == _ENGINE.TIME_SCALE:
            self.engine_config["time_scale"] = msg.read_float32()
        elif kind == _ENGINE.TARGET_FRAME_RATE:
            self.engine_config["target_frame_rate"] = msg.read_int32()
        elif kind == _ENGINE.CAPTURE_FRAME_RATE:
            self.engine_config["capture_frame_rate"] = msg.read_int32()
        else:
            logger.warning(f"unknown engine configuration type {kind}")
            return
        logger.info(f"engine configuration: {self.engine_config}")

    def outgoing_side_channels(self) -> bytes:
        """Stats queued since the last call, in the stats channel format, and clear the queue."""
        out = bytearray()
        for key, value, agg in self._stats:
            msg = OutgoingMessage()
            msg.write_string(key)
            msg.write_float32(value)
            msg.write_int32(agg.value)
            out += pack_side_channel_message(STATS_ID, msg.buffer)
        self._stats = []
        return bytes(out)

    # ----- commands ---------------------------------------------------------------------------------
    def _new_ids(self, behavior: Behavior, slots: np.ndarray) -> None:
        for s in slots:
            behavior.ids[s] = self._next_id
            self._next_id += 1

    def reset(self) -> Dict[str, AgentInfos]:
        """RESET: every slot of every behavior starts a new episode under a new id; no terminal infos are sent."""
        out = {}
        for b in self.behaviors:
            b.scene.reset()
            n = b.scene.num_agents
            self._new_ids(b, np.arange(n))
            out[b.name] = AgentInfos(
                b.ids.copy(),
                np.zeros(n, dtype=bool),
                np.zeros(n, dtype=bool),
                np.zeros(n, dtype=np.float32),
                b.scene.observe(),
                b.flat_mask(),
            )
        return out

    def step(self, actions: Mapping[str, ActionTuple]) -> Dict[str, AgentInfos]:
        """STEP: apply each behavior's actions (rows = its previous done-false infos, i.e. slots).

        A behavior without an entry in ``actions`` acts with zeros, as Unity's agents do without a decision.
        """
        unknown = set(actions) - {b.name for b in self.behaviors}
        if unknown:
            raise ValueError(f"actions for unknown behaviors {sorted(unknown)}; behaviors: {list(self.behavior_specs)}")
        self.total_steps += 1
        out = {}
        for b in self.behaviors:
            action = actions.get(b.name)
            if action is None:
                action = b.spec.action_spec.empty_action(b.scene.num_agents)
            out[b.name] = self._step_behavior(b, action)
        return out

    def _step_behavior(self, b: Behavior, action: ActionTuple) -> AgentInfos:
        scene = b.scene
        difficulty = scene.difficulty.copy()
        result = scene.step(action)
        for v in (result.reward, *result.terminal_obs):
            if not np.all(np.isfinite(v)):
                raise RuntimeError(f"scene {b.name} produced a non-finite value")
        ended = np.nonzero(result.done)[0]
        old_ids = b.ids.copy()
        self._new_ids(b, ended)
        for s in ended if scene.reports_scene_stats else ():
            self._stats.append((STAT_SUCCESS_RATE, float(result.success[s]), StatsAggregationMethod.AVERAGE))
            self._stats.append((STAT_DIFFICULTY, float(difficulty[s]), StatsAggregationMethod.AVERAGE))

        fresh = scene.observe()
        mask = b.flat_mask()
        # Row order: for each slot, its terminal info (if it ended) then its current info.
        n = scene.num_agents
        rows_slot: List[int] = []
        rows_terminal: List[bool] = []
        for s in range(n):
            if result.done[s]:
                rows_slot.append(s)
                rows_terminal.append(True)
            rows_slot.append(s)
            rows_terminal.append(False)
        slot = np.array(rows_slot, dtype=np.int64)
        term = np.array(rows_terminal, dtype=bool)
        ids = np.where(term, old_ids[slot], b.ids[slot]).astype(np.int32)
        reward = np.where(term | ~result.done[slot], result.reward[slot], 0.0).astype(np.float32)
        max_step = term & result.interrupted[slot]
        obs = []
        for t_obs, f_obs in zip(result.terminal_obs, fresh):
            o = f_obs[slot].copy()
            o[term] = t_obs[slot[term]]
            obs.append(o)
        row_mask = None
        if mask is not None:
            row_mask = mask[slot].copy()
            row_mask[term] = False
        return AgentInfos(ids, term, max_step, reward, obs, row_mask)
