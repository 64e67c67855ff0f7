"""Record a scene's scripted expert into a ``.demo`` file, as Unity's DemonstrationRecorder does.

File layout (what ``mlagents.trainers.demo_loader`` reads): a varint-delimited
``DemonstrationMetaProto`` (api_version 1) padded to byte 33, a delimited ``BrainParametersProto``,
then one delimited ``AgentInfoActionPairProto`` per recorded decision.  The loader treats consecutive
pairs as one agent's trajectory, so each agent slot is written as a contiguous block, cut after its
last finished episode; a terminal info is paired with a zero action (it takes no decision).

Used to test GAIL / behavioral cloning on the stand-in scenes:
``python -m mlagents_plugins.envs.demo_writer --scene branches --steps 2000 --out demos/Branches.demo``.
"""
import argparse
import os
import sys
from typing import Any, List, NamedTuple, Optional

import numpy as np

from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
from mlagents_envs.communicator_objects.agent_info_action_pair_pb2 import AgentInfoActionPairProto
from mlagents_envs.communicator_objects.demonstration_meta_pb2 import DemonstrationMetaProto
from google.protobuf.internal.encoder import _VarintBytes  # type: ignore

from mlagents_plugins.envs.academy import Academy
from mlagents_plugins.envs.scenes import SCENES, scene_class
from mlagents_plugins.envs.wire import agent_info_protos, brain_parameters_proto

DEMO_API_VERSION = 1
META_END = 33  # demo_loader.INITIAL_POS: the brain parameters start at this byte


class DemoSummary(NamedTuple):
    path: str
    number_steps: int  # recorded pairs
    number_episodes: int
    mean_reward: float  # mean return of the recorded episodes


def _delimited(message) -> bytes:
    data = message.SerializeToString()
    return _VarintBytes(len(data)) + data


def _action_proto(continuous: np.ndarray, discrete: np.ndarray) -> AgentActionProto:
    act = AgentActionProto()
    act.continuous_actions.extend(continuous.tolist())
    act.discrete_actions.extend(discrete.tolist())
    act.vector_actions_deprecated.extend(continuous.tolist() + discrete.tolist())
    return act


def record_demo(
    scene: str,
    path: str,
    *,
    steps: int,
    seed: int = 0,
    num_areas: int = 1,
    demo_name: Optional[str] = None,
    **scene_kwargs: Any,
) -> DemoSummary:
    """Run the scene's ``heuristic()`` for ``steps`` decisions and write every agent's finished episodes."""
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps={steps!r} is invalid; must be a positive integer")
    scene_class(scene)  # a demonstration is one behavior's: a clear error for a scene with several
    academy = Academy(scene, num_areas=num_areas, seed=seed, **scene_kwargs)
    (behavior,) = academy.behaviors
    spec = behavior.spec
    n = behavior.scene.num_agents
    per_slot: List[List[AgentInfoActionPairProto]] = [[] for _ in range(n)]
    kept = [0] * n  # pairs of each slot up to and including its last terminal info
    returns: List[float] = []
    zero = _action_proto(np.zeros(spec.action_spec.continuous_size, np.float32),
                         np.zeros(spec.action_spec.discrete_size, np.int32))
    infos = academy.reset()[behavior.name]
    for _ in range(steps):
        action = behavior.scene.heuristic()
        cont = action.continuous if spec.action_spec.continuous_size else np.zeros((n, 0), np.float32)
        disc = action.discrete if spec.action_spec.discrete_size else np.zeros((n, 0), np.int32)
        slot = 0
        for row, info in enumerate(agent_info_protos(infos, spec)):
            pair = AgentInfoActionPairProto(agent_info=info)
            if infos.done[row]:
                pair.action_info.CopyFrom(zero)
                per_slot[slot].append(pair)
                kept[slot] = len(per_slot[slot])
            else:
                pair.action_info.CopyFrom(_action_proto(cont[slot], disc[slot]))
                per_slot[slot].append(pair)
                slot += 1
        before = behavior.scene.episode_return.copy()
        infos = academy.step({behavior.name: action})[behavior.name]
        result_done = infos.done
        # returns of the episodes that just ended (their terminal rows carry the last reward)
        slot = 0
        for row in range(len(infos.agent_id)):
            if result_done[row]:
                returns.append(float(before[slot] + infos.reward[row]))
            else:
                slot += 1
    # The infos of the last step were never recorded; terminal ones still end an episode in the file.
    slot = 0
    for row, info in enumerate(agent_info_protos(infos, spec)):
        if infos.done[row]:
            per_slot[slot].append(AgentInfoActionPairProto(agent_info=info, action_info=zero))
            kept[slot] = len(per_slot[slot])
        else:
            slot += 1
    pairs = [p for s in range(n) for p in per_slot[s][: kept[s]]]
    if not pairs:
        raise ValueError(f"no episode finished in {steps} steps; record more steps")
    meta = DemonstrationMetaProto(
        api_version=DEMO_API_VERSION,
        demonstration_name=demo_name or behavior.scene.behavior_name,
        number_steps=len(pairs),
        number_episodes=len(returns),
        mean_reward=float(np.mean(returns)) if returns else 0.0,
    )
    head = _delimited(meta)
    if len(head) > META_END:
        raise ValueError(f"demo_name={demo_name!r} is too long for the {META_END}-byte metadata block")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(head + b"\0" * (META_END - len(head)))
        f.write(_delimited(brain_parameters_proto(behavior.name, spec.action_spec)))
        for pair in pairs:
            f.write(_delimited(pair))
    return DemoSummary(path, len(pairs), len(returns), meta.mean_reward)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mlagents_plugins.envs.demo_writer", allow_abbrev=False,
                                description="Record a stand-in scene's scripted expert as a .demo file.")
    p.add_argument("--scene", required=True, type=str.lower, choices=sorted(SCENES))
    p.add_argument("--steps", type=int, default=2000, help="decisions to record (all agents step together)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-areas", type=int, default=1)
    p.add_argument("--out", required=True, help="path of the .demo file")
    args = p.parse_args(argv)
    if not args.out.endswith(".demo"):
        p.error(f"--out must end with .demo (demo_loader only reads those), got {args.out!r}")
    if args.steps < 1 or args.num_areas < 1:
        p.error(f"--steps and --num-areas must be >= 1, got {args.steps} and {args.num_areas}")
    s = record_demo(args.scene, args.out, steps=args.steps, seed=args.seed, num_areas=args.num_areas)
    print(f"{s.path}: {s.number_steps} steps, {s.number_episodes} episodes, mean reward {s.mean_reward:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
