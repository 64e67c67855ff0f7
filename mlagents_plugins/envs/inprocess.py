"""``SceneEnv``: a stand-in scene as an in-process ``mlagents_envs.base_env.BaseEnv``.

Same semantics as the scene behind gRPC (``standin.py``), without sockets: one behavior ``Name?team=0`` per
part of the scene (``get_steps``/``set_actions`` per behavior; a behavior left without actions acts with zeros),
terminal steps with ``interrupted`` for time-outs, fresh agent ids per episode, action masks split per
branch (all False when a scene sets none), side channels exchanged at every reset/step (environment
parameters and samplers in, stats out - only if a StatsSideChannel is registered), and camera images quantised to 1/255 exactly as a PNG round
trip gives them.  Fast: use it for unit and learning tests; use the stand-in to test the protocol.
"""
from typing import Dict, List, Optional, Tuple

import numpy as np

from mlagents_envs.base_env import (
    ActionTuple,
    BaseEnv,
    BehaviorMapping,
    BehaviorName,
    BehaviorSpec,
    DecisionSteps,
    TerminalSteps,
)
from mlagents_envs.exception import UnityActionException, UnityEnvironmentException
from mlagents_envs.side_channel.side_channel import SideChannel
from mlagents_envs.side_channel.side_channel_manager import SideChannelManager

from mlagents_plugins.envs.academy import STATS_ID, Academy, AgentInfos
from mlagents_plugins.envs.scenes import SceneRef


def _split_branches(mask: np.ndarray, branches: Tuple[int, ...]) -> List[np.ndarray]:
    return np.split(mask, np.cumsum(branches)[:-1], axis=1)


def infos_to_steps(infos: AgentInfos, spec: BehaviorSpec) -> Tuple[DecisionSteps, TerminalSteps]:
    """Split one message's infos into DecisionSteps/TerminalSteps as ``rpc_utils.steps_from_proto`` does."""
    dec = ~infos.done
    term = infos.done
    action_mask = None
    if spec.action_spec.discrete_size > 0:
        action_mask = _split_branches(infos.action_mask[dec], spec.action_spec.discrete_branches)
    n_dec, n_term = int(dec.sum()), int(term.sum())
    decision = DecisionSteps(
        [o[dec] for o in infos.obs],
        infos.reward[dec],
        infos.agent_id[dec],
        action_mask,
        np.zeros(n_dec, dtype=np.int32),
        np.zeros(n_dec, dtype=np.float32),
    )
    terminal = TerminalSteps(
        [o[term] for o in infos.obs],
        infos.reward[term],
        infos.max_step_reached[term],
        infos.agent_id[term],
        np.zeros(n_term, dtype=np.int32),
        np.zeros(n_term, dtype=np.float32),
    )
    return decision, terminal


class SceneEnv(BaseEnv):
    def __init__(
        self,
        scene: SceneRef,
        num_areas: int = 1,
        seed: int = 0,
        side_channels: Optional[List[SideChannel]] = None,
        max_episode_steps: Optional[int] = None,
        **scene_kwargs,
    ):
        self._academy = Academy(scene, num_areas, seed, max_episode_steps, **scene_kwargs)
        self._specs = self._academy.behavior_specs
        channels = list(side_channels or [])
        self._channels = SideChannelManager(channels)
        # Unity sends stats whether or not Python listens, and UnityEnvironment then warns on every step;
        # in-process we only deliver them to a registered stats channel (no warning flood in tests).
        self._wants_stats = any(c.channel_id == STATS_ID for c in channels)
        self._state: Optional[Dict[str, Tuple[DecisionSteps, TerminalSteps]]] = None
        self._actions: Dict[str, ActionTuple] = {}
        self._closed = False

    @property
    def academy(self) -> Academy:
        """The Unity-side runtime (behaviors and their scenes, parameters, engine configuration) - for tests and tools."""
        return self._academy

    @property
    def behavior_specs(self) -> BehaviorMapping:
        return BehaviorMapping(dict(self._specs))

    def _exchange(self, run) -> None:
        if self._closed:
            raise UnityEnvironmentException("No Unity environment is loaded.")
        self._academy.receive_side_channels(bytes(self._channels.generate_side_channel_messages()))
        infos = run()
        self._state = {name: infos_to_steps(infos[name], spec) for name, spec in self._specs.items()}
        stats = self._academy.outgoing_side_channels()
        if self._wants_stats:
            self._channels.process_side_channel_message(stats)
        self._actions = {}

    def reset(self) -> None:
        self._exchange(self._academy.reset)

    def step(self) -> None:
        if self._state is None:
            return self.reset()
        actions = self._actions
        self._exchange(lambda: self._academy.step(actions))

    def _check_name(self, behavior_name: BehaviorName) -> None:
        if behavior_name not in self._specs:
            raise UnityActionException(
                f"The group {behavior_name} does not correspond to an existing agent group in the environment"
            )

    def set_actions(self, behavior_name: BehaviorName, action: ActionTuple) -> None:
        self._check_name(behavior_name)
        if self._state is None:
            return
        n = len(self._state[behavior_name][0])
        spec = self._specs[behavior_name].action_spec
        self._actions[behavior_name] = spec._validate_action(action, n, behavior_name)

    def set_action_for_agent(self, behavior_name: BehaviorName, agent_id: int, action: ActionTuple) -> None:
        self._check_name(behavior_name)
        if self._state is None:
            return
        spec = self._specs[behavior_name].action_spec
        action = spec._validate_action(action, 1, behavior_name)
        decision = self._state[behavior_name][0]
        if behavior_name not in self._actions:
            self._actions[behavior_name] = spec.empty_action(len(decision))
        hits = np.nonzero(decision.agent_id == agent_id)[0]
        if hits.size == 0:
            raise IndexError(f"agent_id {agent_id} is did not request a decision at the previous step")
        if spec.continuous_size > 0:
            self._actions[behavior_name].continuous[hits[0]] = action.continuous[0]
        if spec.discrete_size > 0:
            self._actions[behavior_name].discrete[hits[0]] = action.discrete[0]

    def get_steps(self, behavior_name: BehaviorName) -> Tuple[DecisionSteps, TerminalSteps]:
        self._check_name(behavior_name)
        if self._state is None:
            raise UnityEnvironmentException("get_steps() called before reset()")
        return self._state[behavior_name]

    def close(self) -> None:
        self._closed = True
