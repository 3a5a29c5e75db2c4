"""Handshake, version negotiation, the pre-initialize rules (docs/wire.md), over every in-memory transport."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcp_suite import SERVER_NAME, __version__
from mcp_suite.problems import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_suite.protocol.mcp import LEGACY_VERSIONS
from tests.support.harness import TRANSPORTS, Transport, open_session
from tests.support.wire import slug_of

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)


@pytest.mark.parametrize(
    ("requested", "answered"),
    [
        *((version, version) for version in LEGACY_VERSIONS),
        ("1999-01-01", "2025-11-25"),
        ("2099-12-31", "2025-11-25"),
    ],
)
async def test_initialize_negotiates_the_protocol_version(
    transport: Transport, requested: str, answered: str
) -> None:
    assert set(LEGACY_VERSIONS) == {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
    with trio.fail_after(10):
        async with open_session(transport=transport) as h:
            response = await h.initialize(requested)
            result = response["result"]
            assert result["protocolVersion"] == answered
            assert "tools" in result["capabilities"]
            assert "resources" not in result["capabilities"]  # no tool here offers one
            assert result["serverInfo"] == {"name": SERVER_NAME, "version": __version__}
            assert isinstance(result["instructions"], str)
            assert result["instructions"]
            # The session is usable afterwards.
            listed = await h.request("tools/list")
            assert [tool["name"] for tool in listed["result"]["tools"]] == [
                "sleep",
                "echo",
                "deny",
                "boom",
                "down",
            ]


async def test_initialize_without_a_version_answers_the_latest(transport: Transport) -> None:
    with trio.fail_after(10):
        async with open_session(transport=transport) as h:
            response = await h.request("initialize", {"capabilities": {}})
            assert response["result"]["protocolVersion"] == "2025-11-25"


async def test_second_initialize_is_an_invalid_request(transport: Transport) -> None:
    with trio.fail_after(10):
        async with open_session(transport=transport) as h:
            await h.initialize("2025-06-18")
            again = await h.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
            assert again["error"]["code"] == INVALID_REQUEST
            assert slug_of(again["error"]["data"]) == "invalid-request"
            # The first negotiation stands and the session keeps serving.
            assert (await h.request("ping"))["result"] == {}


async def test_before_initialize_ping_works_and_others_are_refused_at_once(
    transport: Transport, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(10):
        async with open_session(transport=transport) as h:
            start = trio.current_time()
            assert (await h.request("ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}

            # server/discover exists only in the modern era, whose requests need the protocol
            # fields in `_meta` (basic/index, "Per-request protocol fields"): -32602 without them.
            discover = await h.request("server/discover", {"_meta": {"x": 1}})
            assert discover["error"]["code"] == INVALID_PARAMS
            assert discover["error"]["data"]["invalid_params"] == ["_meta"]
            unknown = await h.request("no/such/method")
            assert unknown["error"]["code"] == METHOD_NOT_FOUND
            assert slug_of(unknown["error"]["data"]) == "method-not-found"

            for method in ("tools/list", "tools/call"):
                response = await h.request(method, {"name": "echo", "arguments": {"text": "x"}})
                assert response["error"]["code"] == INVALID_REQUEST
                assert slug_of(response["error"]["data"]) == "session-not-initialized"
            # Nothing was called and nothing waited (virtual time: only a sleep would move it).
            assert trio.current_time() == start
            assert h.log.started == []

            await h.initialize()
            listed = await h.request("tools/list")
            assert "tools" in listed["result"]


async def test_notifications_are_never_answered(transport: Transport) -> None:
    with trio.fail_after(10):
        async with open_session(transport=transport) as h:
            await h.notify("notifications/initialized")  # before initialize: accepted, silent
            await h.notify("notifications/whatever", {"x": 1})  # unknown: ignored
            await h.notify("notifications/cancelled", {"requestId": 99})  # unknown id: ignored
            # A client response (the server issues no requests) is ignored as well.
            await h.send({"jsonrpc": "2.0", "id": 5, "result": {}})
            await h.initialize()
            assert (await h.request("ping"))["result"] == {}
            assert await h.finish() == []
            assert h.lines_seen == 2  # initialize and ping, nothing else
