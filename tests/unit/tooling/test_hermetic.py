"""The suite is hermetic: sockets reach loopback only; the caller's MCP_* / PG* variables are gone.

`make pytest` runs the suite with canary variables set (MCP_HERMETIC_CANARY, PGSERVICE): they must
not be visible to any test.
"""

from __future__ import annotations

import os
import socket

import pytest
from pytest_socket import SocketConnectBlockedError


def test_no_mcp_or_libpq_variable_of_the_caller_reaches_a_test() -> None:
    leaked = [name for name in os.environ if name.startswith(("MCP_", "PG")) and name != "PG_BIN"]
    assert leaked == []


def test_a_variable_a_test_sets_is_gone_before_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    os.environ["MCP_SET_BY_A_TEST"] = "1"  # not monkeypatch, on purpose: the fixture must clean it
    monkeypatch.setenv("PGHOST", "/nonexistent")
    assert os.environ["MCP_SET_BY_A_TEST"] == "1"


def test_the_variable_set_by_the_previous_test_is_gone() -> None:
    assert "MCP_SET_BY_A_TEST" not in os.environ


def test_a_connection_beyond_loopback_is_blocked_before_it_is_made() -> None:
    # UDP: connect() only records the peer, so nothing would be sent even if the guard were missing.
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
        pytest.warns(UserWarning, match="192.0.2.1"),
        pytest.raises(SocketConnectBlockedError),
    ):
        udp.connect(("192.0.2.1", 9))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.connect(("127.0.0.1", 9))  # loopback is allowed


def test_ipv6_loopback_is_allowed_and_other_ipv6_is_blocked() -> None:
    if not socket.has_ipv6:  # pragma: no cover  # the CI kernel has IPv6
        pytest.fail("this machine has no IPv6 support; the hermetic check needs it")
    with (
        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as udp,
        pytest.warns(UserWarning, match="2001:db8::1"),
        pytest.raises(SocketConnectBlockedError),
    ):
        udp.connect(("2001:db8::1", 9))
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as udp:
        udp.connect(("::1", 9))
