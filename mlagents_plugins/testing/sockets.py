"""Which addresses a TCP port is listening on, read from Linux's ``/proc/net/tcp`` and ``/proc/net/tcp6``: how
the tests check that a trainer's gRPC server is reachable from loopback only."""
import ipaddress
import os
import sys
import time
from typing import List

_LISTEN = "0A"


def _decode(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    # The kernel prints each 32-bit word of the address in host byte order.
    words = [raw[i : i + 4] for i in range(0, len(raw), 4)]
    if sys.byteorder == "little":
        words = [w[::-1] for w in words]
    return str(ipaddress.ip_address(b"".join(words)))


def listening_addresses(port: int) -> List[str]:
    """Local addresses with a TCP socket listening on ``port`` (e.g. ``['127.0.0.1', '::1']``; ``'::'`` or
    ``'0.0.0.0'`` mean every interface)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            next(f)  # column titles
            for line in f:
                cols = line.split()
                addr, hex_port = cols[1].split(":")
                if cols[3] == _LISTEN and int(hex_port, 16) == port:
                    found.append(_decode(addr))
    return sorted(set(found))


def is_loopback(address: str) -> bool:
    """127.0.0.0/8 and ::1, also IPv4 loopback written as an IPv6 socket address (``::ffff:127.0.0.1``)."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def wait_until_listening(port: int, timeout_s: float) -> List[str]:
    """``listening_addresses(port)`` as soon as it is not empty (empty after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = listening_addresses(port)
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)
