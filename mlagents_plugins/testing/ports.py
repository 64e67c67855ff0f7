"""Free TCP ports for runs that launch stand-in builds (tests and the bench).

mlagents-learn in launch mode listens on ``base_port + worker_id`` (one port per ``--num-envs`` copy), so a
run needs ``count`` consecutive free ports.  Picking them at random from a wide range keeps parallel test
runs and benchmarks on one machine from colliding; the check binds the way mlagents' own ``check_port`` does.
"""
import os
import random
import socket
import time


def port_is_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as mlagents' RpcCommunicator.check_port
    try:
        s.bind(("localhost", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_base_port(count: int = 1) -> int:
    """A base port with ``count`` consecutive free ports, picked at random so parallel runs do not collide."""
    rng = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(200):
        base = rng.randrange(20000, 60000 - count)
        if all(port_is_free(base + i) for i in range(count)):
            return base
    raise RuntimeError("no free port range found")
