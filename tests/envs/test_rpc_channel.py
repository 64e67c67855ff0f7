"""``rpc_channel``: the gRPC servicer and the environment's thread hand messages over in-process.

The connection pair keeps ``multiprocessing.Connection``'s meaning for the calls ML-Agents makes (order, blocking
``recv``, ``poll`` with a time-out, end of file after the peer closed); through a real build the environment sees
exactly what it sees over ML-Agents' pipe; and the messages are no longer pickled (counted).
"""
import threading
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
from mlagents_envs import rpc_communicator
from mlagents_envs.rpc_communicator import UnityToExternalServicerImplementation

from mlagents_plugins.envs.scenes import ALL_SCENES
from mlagents_plugins.host import rpc_channel
from tests.envs.test_protocol import open_env, trace

UPSTREAM = rpc_channel.ORIGINAL or UnityToExternalServicerImplementation.__dict__["__init__"]


def test_order_identity_and_both_directions():
    a, b = rpc_channel.in_process_pipe()
    first, second = {"x": 1}, [2]
    a.send(first)
    a.send(second)
    b.send("reply")
    assert b.recv() is first and b.recv() is second  # handed over, in order, not copied
    assert a.recv() == "reply"
    assert not a.poll() and not b.poll(0.01)


def test_poll_waits_up_to_its_timeout_and_recv_blocks_until_a_send():
    a, b = rpc_channel.in_process_pipe()
    start = time.monotonic()
    assert b.poll(0.2) is False
    assert time.monotonic() - start >= 0.15
    got = []
    reader = threading.Thread(target=lambda: got.append(b.recv()))
    reader.start()
    time.sleep(0.1)
    assert not got  # still blocked
    a.send("late")
    reader.join(5)
    assert got == ["late"]
    sender = threading.Timer(0.1, a.send, ("ping",))
    sender.start()
    assert b.poll(None) is True and b.recv() == "ping"  # None waits as long as it takes
    sender.join()


def test_close_is_end_of_file_after_what_was_sent():
    a, b = rpc_channel.in_process_pipe()
    a.send("last")
    a.close()
    assert b.poll() is True and b.recv() == "last"
    assert b.poll(0.0) is True  # recv would not block: it raises
    with pytest.raises(EOFError):
        b.recv()
    with pytest.raises(OSError):
        a.send("after close")
    with pytest.raises(OSError):
        a.recv()
    with pytest.raises(OSError):
        b.send("to a closed peer")
    a.close()  # twice is fine


def test_a_blocked_recv_ends_when_the_peer_closes():
    a, b = rpc_channel.in_process_pipe()
    errors = []

    def read():
        try:
            b.recv()
        except EOFError as err:
            errors.append(err)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.1)
    a.close()
    reader.join(5)
    assert not reader.is_alive() and len(errors) == 1


def test_environment_sees_the_same_steps_without_pickling(builds, tmp_path, monkeypatch):
    """Observations (vector and PNG frames), rewards, masks and episode ends of a real build through ML-Agents'
    pipe and through the in-process channel are identical; with the channel no message is pickled."""
    pickled = {"n": 0}
    dumps = ForkingPickler.dumps

    def counting(obj, *args, **kwargs):  # what Connection.send pickles with
        pickled["n"] += isinstance(obj, rpc_communicator.UnityMessageProto)
        return dumps(obj, *args, **kwargs)

    monkeypatch.setattr(ForkingPickler, "dumps", counting)
    traces = {}
    for mode in ("pipe", "channel"):
        monkeypatch.setattr(UnityToExternalServicerImplementation, "__init__",
                            UPSTREAM if mode == "pipe" else rpc_channel.servicer_init)
        pickled["n"] = 0
        traces[mode] = {}
        for scene in ("branches", "camera"):
            names = [f"{ALL_SCENES[scene].behavior_name}?team=0"]
            env = open_env(builds, scene, tmp_path, seed=3, additional_args=["--max-episode-steps", "5"])
            try:
                traces[mode][scene] = trace(env, names, 12, seed=1)
            finally:
                env.close()
        traces[mode]["pickled"] = pickled["n"]
    assert traces["pipe"]["pickled"] >= 2 * 2 * 12  # both ways, every step of both scenes
    assert traces["channel"]["pickled"] == 0
    for scene in ("branches", "camera"):
        for r, c in zip(traces["pipe"][scene], traces["channel"][scene], strict=True):
            for x, y in zip(r, c, strict=True):
                if isinstance(x, list):
                    for u, v in zip(x, y, strict=True):
                        np.testing.assert_array_equal(u, v)
                elif x is None:
                    assert y is None
                else:
                    np.testing.assert_array_equal(x, y)


def test_the_patch_is_listed_and_guarded(monkeypatch):
    monkeypatch.setattr(UnityToExternalServicerImplementation, "__init__", UPSTREAM)
    monkeypatch.setenv("MLAGENTS_PLUGINS_RPC_PIPE", "1")
    assert rpc_channel.install_rpc_channel() is False
    assert UnityToExternalServicerImplementation.__init__ is UPSTREAM
    monkeypatch.delenv("MLAGENTS_PLUGINS_RPC_PIPE")
    assert rpc_channel.install_rpc_channel() is True
    servicer = UnityToExternalServicerImplementation()
    assert isinstance(servicer.parent_conn, rpc_channel.InProcessConnection)
