"""Interop with a real third-party client: the official `mcp` Python SDK (2.3.0) over stdio.

The SDK launches `python -X dev -m mcp_suite`, connects in `mode="legacy"` (initialize handshake) and
in its default auto mode (a `server/discover` probe first, then the handshake when the server does not
know the probe), lists the tools, calls `system_metrics` and validates the result against the
advertised outputSchema (the SDK does that itself inside `call_tool`).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, TextIO

import mcp.client.session
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from mcp_suite.problems import METHOD_NOT_FOUND
from mcp_suite.protocol.mcp import SUPPORTED_VERSIONS
from tests.support.client import REPO

pytestmark = pytest.mark.e2e


def _parameters() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-X", "dev", "-m", "mcp_suite"],
        env={"PYTHONPATH": ".", "MCP_LOG_LEVEL": "INFO"},
        cwd=REPO,
    )


def _audit(errlog: TextIO) -> list[dict[str, Any]]:
    errlog.seek(0)
    events = [json.loads(line) for line in errlog.read().splitlines() if line.startswith("{")]
    return [event for event in events if event.get("event") == "request"]


async def _list_and_call(client: Client) -> None:
    listed = await client.list_tools()
    (tool,) = listed.tools
    assert tool.name == "system_metrics"
    assert tool.output_schema is not None
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.destructive_hint is False

    # call_tool validates structuredContent against the outputSchema and raises if it does not match.
    result = await client.call_tool("system_metrics", {})
    assert result.is_error is False
    assert result.structured_content is not None
    assert 0 <= result.structured_content["cpu"]["percent"] <= 100
    await client.session.validate_tool_result("system_metrics", result)

    refused = await client.call_tool("system_metrics", {"x": 1})
    assert refused.is_error is True
    assert refused.structured_content is None
    problem = json.loads(refused.content[0].text)  # type: ignore[union-attr]  # one text block
    assert problem["type"] == "urn:mcp-suite:problem:validation-error"
    assert problem["invalid_params"] == ["x"]


async def test_sdk_connects_in_legacy_mode_lists_and_calls() -> None:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        async with Client(stdio_client(_parameters(), errlog=errlog), mode="legacy") as client:
            assert client.protocol_version in SUPPORTED_VERSIONS
            assert client.server_info is not None
            assert client.server_info.name == "mcp-suite"
            assert client.instructions
            await _list_and_call(client)
            # After the handshake the probe is still an unknown method, and the SDK sees -32601.
            with pytest.raises(MCPError) as probe:
                await client.session.send_discover("2026-07-28")
            assert probe.value.code == METHOD_NOT_FOUND
        methods = [event["method"] for event in _audit(errlog)]
        assert methods[0] == "initialize"
        assert "server/discover" in methods


async def test_sdk_auto_mode_probe_is_answered_at_once_with_method_not_found(
    monkeypatch: pytest.MonkeyPatch, record_property: Callable[[str, object], None]
) -> None:
    # The SDK waits up to 10 s for an unanswered probe before falling back. Make that wait longer
    # than this test's bound: the connect can then only succeed if the server answered the probe.
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 3_600.0)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        started = time.perf_counter()
        async with Client(stdio_client(_parameters(), errlog=errlog)) as client:
            connect_s = time.perf_counter() - started
            # Auto mode fell back to the handshake: an initialize result, no discover result.
            assert client.session.initialize_result is not None
            assert client.session.discover_result is None
            assert client.protocol_version in SUPPORTED_VERSIONS
            await _list_and_call(client)
        record_property("auto_mode_connect_seconds", round(connect_s, 3))  # a figure, not an assertion
        audit = _audit(errlog)
        probe, handshake = audit[0], audit[1]
        assert probe["method"] == "server/discover"
        assert probe["outcome"] == "error"
        assert probe["problem"] == "method-not-found"  # -32601 by the mapping table
        assert handshake["method"] == "initialize"
        assert handshake["outcome"] == "ok"
