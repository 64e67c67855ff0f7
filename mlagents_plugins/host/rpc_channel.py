"""The environment worker hands gRPC messages between its two threads without pickling them.

ML-Agents 1.1.0's ``RpcCommunicator`` is the gRPC server a Unity build (or the Editor) calls: a gRPC thread runs
``UnityToExternalServicerImplementation.Exchange``, which passes the build's message to the worker's main thread
and waits for the reply.  The two threads talk through a ``multiprocessing.Pipe`` although they share one process,
so every message is pickled and unpickled on its way, and a protobuf message pickles by serializing and parsing
itself: each environment step serializes and parses the observations of every agent twice and the actions twice
more, on top of gRPC's own (needed) wire encoding.  With protobuf's pure-Python backend (protobuf 3.20, what
mlagents 1.1.0 installs on Python 3.10/3.11) that was most of the environment worker's CPU.

The replacement gives the servicer an in-process pipe (``in_process_pipe``): the same four calls the communicator
uses (``send``, ``recv``, ``poll(timeout)``, ``close``) with ``multiprocessing.Connection``'s meaning - ``recv``
blocks, ``poll`` says whether ``recv`` would return without blocking (data or a closed peer), ``recv`` after the
peer closed and everything sent was read raises ``EOFError`` - but the objects themselves are handed over.  Neither
side changes a message after sending it (the communicator builds a new one for every exchange; gRPC builds a new
request for every call), so handing over is what pickling achieved, without the copies.

Installed by the stats-writer hook for every ``mlagents-learn`` run (built-in trainers too); it acts in the
environment workers, which inherit it under ``fork`` and install it themselves under ``spawn``
(``worker_lifetime``).  ``MLAGENTS_PLUGINS_RPC_PIPE=1`` keeps ML-Agents' pipe (``patches`` lists it).
"""
import sys
import threading
from collections import deque
from typing import Any, Deque, Optional, Tuple

from mlagents_plugins.host import patches

#: ML-Agents' own ``UnityToExternalServicerImplementation.__init__`` once replaced
ORIGINAL = None


class _Direction:
    """Messages travelling one way, and whether the end sending them or the end receiving them is closed."""

    def __init__(self) -> None:
        self.items: Deque[Any] = deque()
        self.sender_closed = False
        self.receiver_closed = False
        self.cond = threading.Condition()


class InProcessConnection:
    """One end of ``in_process_pipe``; the part of ``multiprocessing.connection.Connection`` that ``RpcCommunicator``
    and its servicer use."""

    def __init__(self, inbox: _Direction, outbox: _Direction) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self.closed = False

    def _check_open(self) -> None:
        if self.closed:
            raise OSError("handle is closed")

    def send(self, obj: Any) -> None:
        """Hand ``obj`` to the other end (not copied); ``BrokenPipeError`` if that end is closed."""
        self._check_open()
        with self._outbox.cond:
            if self._outbox.receiver_closed:
                raise BrokenPipeError("the other end of the pipe is closed")
            self._outbox.items.append(obj)
            self._outbox.cond.notify_all()

    def _ready(self) -> bool:
        return bool(self._inbox.items) or self._inbox.sender_closed or self.closed

    def recv(self) -> Any:
        """The next object sent by the other end, waiting for it; ``EOFError`` once the other end closed and
        everything it sent was received."""
        self._check_open()
        with self._inbox.cond:
            self._inbox.cond.wait_for(self._ready)
            self._check_open()
            if self._inbox.items:
                return self._inbox.items.popleft()
            raise EOFError

    def poll(self, timeout: Optional[float] = 0.0) -> bool:
        """Whether ``recv`` would return at once (an object is waiting or the other end closed), waiting up to
        ``timeout`` seconds for that (``None``: as long as it takes)."""
        self._check_open()
        with self._inbox.cond:
            if timeout is None:
                return self._inbox.cond.wait_for(self._ready)
            return self._inbox.cond.wait_for(self._ready, timeout=max(0.0, float(timeout)))

    def close(self) -> None:
        """Close this end: the other end's ``recv`` raises ``EOFError`` once it has read what was sent."""
        if self.closed:
            return
        self.closed = True
        with self._outbox.cond:
            self._outbox.sender_closed = True
            self._outbox.cond.notify_all()
        with self._inbox.cond:
            self._inbox.receiver_closed = True
            self._inbox.cond.notify_all()


def in_process_pipe() -> Tuple[InProcessConnection, InProcessConnection]:
    """Two connected ends, as ``multiprocessing.Pipe()`` (duplex) gives, for two threads of one process."""
    a_to_b, b_to_a = _Direction(), _Direction()
    return InProcessConnection(b_to_a, a_to_b), InProcessConnection(a_to_b, b_to_a)


def servicer_init(self) -> None:
    """``UnityToExternalServicerImplementation.__init__`` of mlagents-envs 1.1.0 with ``in_process_pipe``."""
    self.parent_conn, self.child_conn = in_process_pipe()


def install_rpc_channel() -> bool:
    """Replace ``UnityToExternalServicerImplementation.__init__`` (once); returns whether the patch is active."""
    try:
        from mlagents_envs.rpc_communicator import UnityToExternalServicerImplementation
    except ImportError:
        return False
    return patches.replace_attribute("rpc_channel", UnityToExternalServicerImplementation, "__init__", servicer_init,
                                     sys.modules[__name__])
