"""Server-process CPU per Exchange: ML-Agents' RpcCommunicator (sync gRPC server, in-process handoff to the main
thread) against an asyncio gRPC server whose handler awaits the main thread's reply.  A client process calls
Exchange N times with a 1-agent 17-float observation; the server's main thread answers each at once.
usage: python grpc_server_cpu.py {sync|aio} N"""
import asyncio, os, socket, subprocess, sys, threading, time
sys.path.insert(0, os.environ.get("REPO", os.getcwd()))
import grpc
from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
    UnityToExternalProtoServicer, add_UnityToExternalProtoServicer_to_server, UnityToExternalProtoStub)
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto
from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto
from mlagents_envs.communicator_objects.unity_rl_output_pb2 import UnityRLOutputProto
from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto
from mlagents_envs.communicator_objects.unity_rl_input_pb2 import UnityRLInputProto
from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto

B = "HalfCheetah?team=0"

def request():
    infos = UnityRLOutputProto.ListAgentInfoProto()
    info = AgentInfoProto(reward=0.5, done=False, id=0)
    obs = ObservationProto(shape=[17]); obs.float_data.data.extend([0.1 * i for i in range(17)])
    info.observations.append(obs); infos.value.append(info)
    rl = UnityRLOutputProto(); rl.agentInfos[B].CopyFrom(infos)
    m = UnityMessageProto(); m.header.status = 200; m.unity_output.CopyFrom(UnityOutputProto(rl_output=rl)); return m

def reply():
    rl = UnityRLInputProto(); rl.agent_actions[B].value.append(AgentActionProto(continuous_actions=[0.1] * 6))
    m = UnityMessageProto(); m.header.status = 200; m.unity_input.CopyFrom(UnityInputProto(rl_input=rl)); return m

def client(port, n):
    ch = grpc.insecure_channel(f"127.0.0.1:{port}"); stub = UnityToExternalProtoStub(ch)
    grpc.channel_ready_future(ch).result(timeout=30)
    req = request()
    for _ in range(n):
        stub.Exchange(req)

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]

def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    port = free_port()
    rep = reply()
    if mode == "sync":
        from mlagents_plugins.host import rpc_channel
        rpc_channel.install_rpc_channel()
        from mlagents_envs.rpc_communicator import RpcCommunicator
        comm = RpcCommunicator(base_port=port, timeout_wait=30)
        conn = comm.unity_to_external.parent_conn
        def serve_one():
            comm.poll_for_timeout(); conn.recv(); conn.send(rep)
    else:
        loop = asyncio.new_event_loop()
        inbox = []; cond = threading.Condition(); pending = []
        class Servicer(UnityToExternalProtoServicer):
            async def Exchange(self, request, context):
                fut = loop.create_future(); pending.append(fut)
                with cond:
                    inbox.append(request); cond.notify()
                return await fut
        async def start():
            server = grpc.aio.server(); add_UnityToExternalProtoServicer_to_server(Servicer(), server)
            server.add_insecure_port(f"127.0.0.1:{port}"); await server.start(); return server
        started = threading.Event(); keep = []
        def run():
            asyncio.set_event_loop(loop); keep.append(loop.run_until_complete(start())); started.set(); loop.run_forever()
        threading.Thread(target=run, daemon=True).start(); started.wait()
        def serve_one():
            with cond:
                cond.wait_for(lambda: inbox); inbox.pop()
            fut = pending.pop()
            loop.call_soon_threadsafe(fut.set_result, rep)
    child = subprocess.Popen([sys.executable, __file__, "client", str(port), str(n + 200)])
    for _ in range(200):
        serve_one()
    t0 = time.process_time(); w0 = time.perf_counter()
    for _ in range(n):
        serve_one()
    cpu = time.process_time() - t0; wall = time.perf_counter() - w0
    child.wait()
    print(f"{mode}: server CPU {cpu / n * 1e6:.0f} us per exchange, wall {wall / n * 1e6:.0f} us", flush=True)
    os._exit(0)

if __name__ == "__main__":
    if sys.argv[1] == "client":
        client(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
