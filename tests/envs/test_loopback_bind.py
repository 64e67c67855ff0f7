"""The trainer's gRPC server (ML-Agents' ``RpcCommunicator``) listens on loopback only with the ``loopback_bind``
patch; ``MLAGENTS_PLUGINS_BIND_ALL=1`` keeps ML-Agents' all-interfaces binding, with a warning."""
import logging
import sys

import pytest
from mlagents_envs.rpc_communicator import RpcCommunicator

from mlagents_plugins.host import loopback_bind
from mlagents_plugins.testing.sockets import is_loopback, listening_addresses
from tests.envs.conftest import free_base_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the tests read /proc/net/tcp*")

UPSTREAM = loopback_bind.ORIGINAL or RpcCommunicator.__dict__["create_server"]


def _bound_addresses():
    communicator = RpcCommunicator(worker_id=0, base_port=free_base_port(), timeout_wait=1)
    try:
        return listening_addresses(communicator.port)
    finally:
        communicator.close()


def test_loopback_by_default_and_the_opt_out_restores_every_interface(monkeypatch, caplog):
    monkeypatch.setattr(RpcCommunicator, "create_server", UPSTREAM)
    assert _bound_addresses() == ["::"]  # what ML-Agents 1.1.0 does: every interface

    monkeypatch.delenv(loopback_bind.OPT_OUT, raising=False)
    assert loopback_bind.install_loopback_bind() is True
    addresses = _bound_addresses()
    assert addresses and all(is_loopback(a) for a in addresses), addresses

    monkeypatch.setattr(RpcCommunicator, "create_server", UPSTREAM)
    monkeypatch.setenv(loopback_bind.OPT_OUT, "1")
    monkeypatch.setattr(loopback_bind, "_warned", False)
    with caplog.at_level(logging.WARNING):
        assert loopback_bind.install_loopback_bind() is False
    assert f"{loopback_bind.OPT_OUT}=1" in caplog.text and "every network interface" in caplog.text
    assert _bound_addresses() == ["::"]


def test_a_port_in_use_still_raises_mlagents_error(monkeypatch):
    from mlagents_envs.exception import UnityWorkerInUseException

    monkeypatch.setattr(RpcCommunicator, "create_server", loopback_bind.create_loopback_server)
    first = RpcCommunicator(worker_id=0, base_port=free_base_port(), timeout_wait=1)
    try:
        with pytest.raises(UnityWorkerInUseException):
            RpcCommunicator(worker_id=0, base_port=first.port, timeout_wait=1)
    finally:
        first.close()
