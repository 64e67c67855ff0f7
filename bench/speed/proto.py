"""What the protobuf stack costs per environment step: old stack (protobuf 3.20, pure-Python backend) vs new
(protobuf 4-6 with mlagents-envs' messages rebuilt by mlagents_plugins_boot, compiled upb backend).

Each environment given with ``--venv`` is measured in its own processes, all in one invocation:

- **gRPC round trip** over loopback, with ML-Agents' own message classes and service on both ends: the "Unity"
  side (client) sends a ``UnityMessageProto`` carrying one step's ``UnityRLOutputProto`` and waits for the
  reply; the Python side (server, its own process) parses it, decodes it with ``mlagents_envs.rpc_utils``
  (``steps_from_proto``, what ``UnityEnvironment`` does each step) and answers with the next step's actions
  (a ``UnityRLInputProto``).  Two payloads: 8 agents with 8 vector observations and 2 continuous actions,
  and 1 agent with a 3x84x84 uncompressed float observation.  Median of ``--exchanges`` round trips after a
  warm-up.
- **mlagents-learn env steps/s**: ``python -m bench speed learn``'s run (Balance stand-in, 8 agents, built-in ``sac``
  or ``--trainer``), once per environment, alternating.

Usage: ``python -m bench speed proto --venv .venv --venv .venv-3.13 [--exchanges 2000] [--learn-steps 4000]``;
writes a Markdown table (and ``--json``).  The environments' Python versions differ, so the table says which.
"""
import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from concurrent import futures
from typing import Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: this mode, run in another environment's interpreter (cwd REPO, so ``-m bench`` finds this checkout)
SELF = ["-m", "bench", "speed", "proto"]
VECTOR_AGENTS, VECTOR_OBS, ACTIONS = 8, 8, 2
VISUAL_SHAPE = (3, 84, 84)
BEHAVIOR = "Bench?team=0"


def _payloads():
    """{name: (UnityMessageProto from "Unity", BehaviorSpec, UnityMessageProto reply)} for both step kinds."""
    import numpy as np
    from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
    from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
    from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
    from mlagents_envs.communicator_objects.command_pb2 import STEP
    from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto
    from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto
    from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
    from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto
    from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
    from mlagents_envs.communicator_objects.unity_rl_output_pb2 import UnityRLOutputProto

    rng = np.random.default_rng(0)
    out = {}
    for name, agents, shape in (("8-agent vector step", VECTOR_AGENTS, (VECTOR_OBS,)), ("3x84x84 visual step", 1, VISUAL_SHAPE)):
        infos = UnityRLOutputProto.ListAgentInfoProto()
        for agent in range(agents):
            info = AgentInfoProto(reward=float(rng.normal()), done=False, id=agent)
            obs = ObservationProto(shape=list(shape))
            obs.float_data.data.extend(rng.random(int(np.prod(shape)), dtype=np.float32).tolist())
            info.observations.append(obs)
            infos.value.append(info)
        rl_output = UnityRLOutputProto()
        rl_output.agentInfos[BEHAVIOR].CopyFrom(infos)
        request = UnityMessageProto()
        request.header.status = 200
        request.unity_output.CopyFrom(UnityOutputProto(rl_output=rl_output))
        dims = (DimensionProperty.NONE,) * len(shape) if len(shape) == 1 else (
            DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
        spec = BehaviorSpec([ObservationSpec(shape, dims, ObservationType.DEFAULT, "obs")], ActionSpec.create_continuous(ACTIONS))
        rl_input = UnityRLInputProto(command=STEP)
        for agent in range(agents):
            rl_input.agent_actions[BEHAVIOR].value.append(
                AgentActionProto(continuous_actions=rng.uniform(-1, 1, ACTIONS).astype(np.float32).tolist()))
        reply = UnityMessageProto()
        reply.header.status = 200
        reply.unity_input.CopyFrom(UnityInputProto(rl_input=rl_input))
        out[name] = (request, spec, reply)
    return out


def serve(port: int) -> None:
    """The Python side: parse (grpc, with ML-Agents' message class), decode like UnityEnvironment, reply."""
    import grpc
    from mlagents_envs import rpc_utils
    from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
        UnityToExternalProtoServicer, add_UnityToExternalProtoServicer_to_server)

    payloads = list(_payloads().values())
    by_agents = {len(req.unity_output.rl_output.agentInfos[BEHAVIOR].value): (spec, reply) for req, spec, reply in payloads}

    class Servicer(UnityToExternalProtoServicer):
        def Exchange(self, request, context):
            infos = request.unity_output.rl_output.agentInfos[BEHAVIOR].value
            spec, reply = by_agents[len(infos)]
            decision, terminal = rpc_utils.steps_from_proto(infos, spec)
            assert len(decision) == len(infos)
            return reply

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    add_UnityToExternalProtoServicer_to_server(Servicer(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(exchanges: int) -> Dict:
    """The "Unity" side: time full round trips against a server process of the same environment."""
    import google.protobuf
    import grpc
    import numpy
    from google.protobuf.internal import api_implementation
    from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import UnityToExternalProtoStub

    port = _free_port()
    server = subprocess.Popen([sys.executable, *SELF, "--serve", str(port)], cwd=REPO)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=120)
        stub = UnityToExternalProtoStub(channel)
        result = {
            "python": platform.python_version(),
            "protobuf": google.protobuf.__version__,
            "backend": api_implementation.Type(),
            "grpcio": grpc.__version__,
            "numpy": numpy.__version__,
            "round_trip_us": {},
        }
        for name, (request, _, _) in _payloads().items():
            for _ in range(max(20, exchanges // 10)):
                stub.Exchange(request)
            times: List[float] = []
            for _ in range(exchanges):
                t0 = time.perf_counter()
                reply = stub.Exchange(request)
                times.append(time.perf_counter() - t0)
            assert reply.unity_input.rl_input.agent_actions[BEHAVIOR].value
            result["round_trip_us"][name] = {
                "median": 1e6 * statistics.median(times),
                "p10": 1e6 * sorted(times)[len(times) // 10],
                "p90": 1e6 * sorted(times)[9 * len(times) // 10],
                "bytes": request.ByteSize(),
            }
        channel.close()
        return result
    finally:
        server.kill()
        server.wait()


def _venv_python(venv: str) -> str:
    return os.path.join(os.path.abspath(venv), "bin", "python")


def learn_speed(venv: str, steps: int, trainer: str) -> Dict:
    """One mlagents-learn run through the Balance stand-in (``python -m bench speed learn``'s setup) in ``venv``."""
    code = (
        "import sys, json; sys.argv=['x']; sys.path.insert(0, '.')\n"
        "import bench.speed.learn as L\n"
        f"args = L.argparse.Namespace(steps={steps}, summary=1000, skip=2000, areas=2, hidden=64, batch=128, threaded=False, torch_device=None)\n"
        "import tempfile, subprocess, os\n"
        "builds = tempfile.mkdtemp(prefix='proto_speed_builds_')\n"
        "subprocess.run([sys.executable, '-m', 'mlagents_plugins.envs.standin', '--write-builds', builds], check=True, stdout=subprocess.DEVNULL)\n"
        f"print(json.dumps(L.run_one({trainer!r}, args, builds, 0)))\n"
    )
    proc = subprocess.run([_venv_python(venv), "-c", code], cwd=REPO, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{venv}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench speed proto", description=__doc__.split("\n")[0])
    p.add_argument("--venv", action="append", default=[], help="an environment to measure (repeat; first = baseline)")
    p.add_argument("--exchanges", type=int, default=2000, help="timed round trips per payload (default 2000)")
    p.add_argument("--learn-steps", type=int, default=6000, help="max_steps of the mlagents-learn run (0: skip it)")
    p.add_argument("--trainer", default="sac", help="trainer of the mlagents-learn run (default built-in sac)")
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--measure", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)
    if args.measure is not None:
        print(json.dumps(measure(args.measure)))
        return None
    if not args.venv:
        p.error("give at least one --venv")
    results = {}
    for venv in args.venv:
        proc = subprocess.run([_venv_python(venv), *SELF, "--measure", str(args.exchanges)],
                              cwd=REPO, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"{venv}: {proc.stderr[-2000:]}")
        results[venv] = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.learn_steps:
        for venv in args.venv:
            results[venv]["learn"] = learn_speed(venv, args.learn_steps, args.trainer)
    base = results[args.venv[0]]
    names = list(base["round_trip_us"])
    header = ["environment", "Python", "protobuf (backend)", "grpcio", "numpy"]
    header += [f"{n}: round trip, us (ratio)" for n in names]
    if args.learn_steps:
        header.append(f"mlagents-learn {args.trainer}, env steps/s (ratio)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; {platform.processor() or platform.machine()}")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for venv, r in results.items():
        row = [f"`{venv}`", r["python"], f"{r['protobuf']} ({r['backend']})", r["grpcio"], r["numpy"]]
        for n in names:
            us = r["round_trip_us"][n]["median"]
            row.append(f"{us:.0f} ({base['round_trip_us'][n]['median'] / us:.2f}x)")
        if args.learn_steps:
            sps = r["learn"]["steps_per_s"]
            row.append(f"{sps:.0f} ({sps / base['learn']['steps_per_s']:.2f}x)")
        print("| " + " | ".join(row) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return None

