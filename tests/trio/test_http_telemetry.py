"""Traces and metrics of the HTTP transport in process (hypercorn on a loopback port, the SDK's
in-memory exporters): the `traceparent` header is a call's link unless its `_meta` names one, the
session id is never an attribute (a digest of it is), the caller's subject is; the sessions and
callers gauges; the probes answer without a token and leave no span."""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

import httpx2
import pytest
import trio

from mcp_suite import observe
from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.runtime.http import serve_http
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import open_registry
from tests.support.harness import ToolLog, tool_opener
from tests.support.telemetry import InMemory, in_memory_telemetry
from tests.support.wire import initialize_request

HEADER_TRACE: Final = "11111111111111111111111111111111"
META_TRACE: Final = "22222222222222222222222222222222"
HEADER_PARENT: Final = f"00-{HEADER_TRACE}-1111111111111111-01"
META_PARENT: Final = f"00-{META_TRACE}-2222222222222222-01"
INITIALIZE: Final = initialize_request("t", version="2025-11-25")


@pytest.fixture
def memory() -> Iterator[list[InMemory]]:
    made: list[InMemory] = []
    yield made
    for watched in made:
        watched.telemetry.close()
    assert not observe.tracing()


@contextlib.asynccontextmanager
async def serving(made: list[InMemory]) -> AsyncIterator[str]:
    settings = Settings(http_port=0, http_auth="none")
    with open_registry(settings, extra=[tool_opener(ToolLog())]) as registry:
        watched = in_memory_telemetry(registry)
        made.append(watched)
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                functools.partial(
                    serve_http, settings, registry, shutdown=stop.wait, telemetry=watched.telemetry
                )
            )
            yield binds[0]
            stop.set()


def call(name: str, request_id: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {"text": "t"} if name == "echo" else {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def test_an_http_call_s_span_links_the_client_s_trace_from_the_header_or_its_meta_and_has_its_own(
    memory: list[InMemory],
) -> None:
    with trio.fail_after(30):
        async with serving(memory) as base, httpx2.AsyncClient() as http:
            opened = await http.post(base + "/mcp", json=INITIALIZE)
            session_id = opened.headers["mcp-session-id"]
            legacy = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
            answered = await http.post(
                base + "/mcp", json=call("echo", 2), headers={**legacy, "traceparent": HEADER_PARENT}
            )
            assert answered.status_code == 200
            meta = {
                "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "traceparent": META_PARENT,
            }
            modern = {
                "MCP-Protocol-Version": MODERN_VERSION,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "deny",
                "traceparent": HEADER_PARENT,
            }
            denied = await http.post(base + "/mcp", json=call("deny", 3, meta), headers=modern)
            assert denied.json()["result"]["isError"] is True
            (watched,) = memory
            sessions = watched.points("mcp_suite.http.sessions")
            assert sessions == [({}, 1)]
            for path in ("/healthz", "/readyz"):
                probe = await http.get(base + path)
                assert (probe.status_code, probe.text) == (200, "ok\n")
    spans = {span.name: span for span in watched.spans()}
    assert sorted(spans) == ["initialize", "mcp.encode", "tools/call deny", "tools/call echo"]
    echo, deny = spans["tools/call echo"], spans["tools/call deny"]
    # The client's trace is a link (`_meta` is the request's own, before the header); the span's
    # trace is the server's, and it has no parent.
    assert [format(link.context.trace_id, "032x") for link in echo.links] == [HEADER_TRACE]
    assert [format(link.context.trace_id, "032x") for link in deny.links] == [META_TRACE]
    assert format(echo.context.trace_id, "032x") not in (HEADER_TRACE, META_TRACE)
    assert format(deny.context.trace_id, "032x") not in (HEADER_TRACE, META_TRACE)
    assert (echo.parent, deny.parent) == (None, None)
    attributes = dict(echo.attributes or {})
    assert attributes["mcp.session.id"] == hashlib.sha256(session_id.encode()).hexdigest()[:32]
    assert session_id not in {
        str(value) for span in spans.values() for value in (span.attributes or {}).values()
    }
    assert (attributes["enduser.id"], attributes["network.transport"]) == ("anonymous", "tcp")
    assert attributes["mcp.protocol.version"] == "2025-11-25"
    assert dict(deny.attributes or {})["mcp.protocol.version"] == MODERN_VERSION
    assert dict(deny.attributes or {})["error.type"] == "tool_error"
    durations = watched.points("mcp.server.operation.duration")
    assert sum(count for _, count in durations) == 3  # the probes are not MCP operations
    assert {a["network.transport"] for a, _ in durations} == {"tcp"}
    assert watched.points("mcp_suite.http.callers") == [({}, 0)]
