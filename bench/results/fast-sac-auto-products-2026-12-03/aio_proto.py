"""Prototype for measurement: ML-Agents' RpcCommunicator with a grpc.aio server on one event-loop thread instead of
the sync server (its poller thread + a pool thread per call).  Installs itself, then runs exchange_cpu.py's loop."""
import asyncio, collections, os, sys, threading
import grpc
from mlagents_envs import rpc_communicator as rc
from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import (
    UnityToExternalProtoServicer, add_UnityToExternalProtoServicer_to_server)


class ParentEnd:
    """The main thread's end: send hands a reply to the loop thread's waiting handler; recv/poll wait for requests."""
    def __init__(self, owner):
        self.o = owner
    def send(self, obj):
        self.o.loop.call_soon_threadsafe(self.o._deliver, obj)
    def _ready(self):
        return bool(self.o.requests) or self.o.closed
    def recv(self):
        with self.o.cond:
            self.o.cond.wait_for(self._ready)
            if self.o.requests:
                return self.o.requests.popleft()
            raise EOFError
    def poll(self, timeout=0.0):
        with self.o.cond:
            if timeout is None:
                return self.o.cond.wait_for(self._ready)
            return self.o.cond.wait_for(self._ready, timeout=max(0.0, float(timeout)))
    def close(self):
        self.o.loop.call_soon_threadsafe(self.o._close)


class AioServicer(UnityToExternalProtoServicer):
    def __init__(self, loop):
        self.loop = loop
        self.requests = collections.deque()
        self.cond = threading.Condition()
        self.closed = False
        self.waiting = collections.deque()
        self.replies = collections.deque()
        self.parent_conn = ParentEnd(self)
    def _deliver(self, obj):
        if self.waiting:
            self.waiting.popleft().set_result(obj)
        else:
            self.replies.append(obj)
    def _close(self):
        self.closed = True
        with self.cond:
            self.cond.notify_all()
        while self.waiting:
            self.waiting.popleft().set_exception(EOFError())
    async def _call(self, request):
        fut = self.loop.create_future()
        if self.replies:
            fut.set_result(self.replies.popleft())
        else:
            self.waiting.append(fut)
        with self.cond:
            self.requests.append(request)
            self.cond.notify_all()
        return await fut
    async def Initialize(self, request, context):
        return await self._call(request)
    async def Exchange(self, request, context):
        return await self._call(request)


def create_server(self):
    self.check_port(self.port)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder = {}
    def run():
        asyncio.set_event_loop(loop)
        async def start():
            server = grpc.aio.server(options=(("grpc.so_reuseport", 1),))
            servicer = AioServicer(loop)
            add_UnityToExternalProtoServicer_to_server(servicer, server)
            server.add_insecure_port("localhost:" + str(self.port))
            await server.start()
            holder["server"], holder["servicer"] = server, servicer
        loop.run_until_complete(start())
        started.set()
        loop.run_forever()
    t = threading.Thread(target=run, daemon=True, name="grpc-aio")
    t.start()
    started.wait()
    self._loop, self._thread = loop, t
    self.server = holder["server"]
    self.unity_to_external = holder["servicer"]
    self.is_open = True


def close(self):
    if self.is_open:
        from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
        m = UnityMessageProto(); m.header.status = 400
        self.unity_to_external.parent_conn.send(m)
        self.unity_to_external.parent_conn.close()
        asyncio.run_coroutine_threadsafe(self.server.stop(None), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.is_open = False


from mlagents_plugins.host import patches
patches.install_all()
if os.environ.get("AIO", "1") == "1":
    rc.RpcCommunicator.create_server = create_server
    rc.RpcCommunicator.close = close
sys.argv = sys.argv[1:]
exec(open(sys.argv[0]).read())
