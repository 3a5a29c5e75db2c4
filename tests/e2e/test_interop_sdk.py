"""Interop with a real third-party client: the official `mcp` Python SDK (2.3.0) over stdio.

The SDK launches `python -X dev -m mcp_suite` and connects in each era: `mode="legacy"` (the
initialize handshake, once for each of the four handshake versions), its default auto mode (a
`server/discover` probe, which finds a modern server) and pinned to 2026-07-28 (no probe). Each lists
the tools, calls `system_metrics` and validates the result against the advertised outputSchema (the
SDK does that itself inside `call_tool`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any, TextIO

import mcp.client.session
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_suite.protocol.mcp import ALL_VERSIONS, LEGACY_VERSIONS, MODERN_VERSION
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


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_sdk_legacy_mode_negotiates_each_handshake_version_lists_and_calls(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's legacy mode offers its newest handshake version; offering an older one is how a
    # client of that revision opens the session.
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        async with Client(stdio_client(_parameters(), errlog=errlog), mode="legacy") as client:
            assert client.protocol_version == version
            assert client.server_info is not None
            assert client.server_info.name == "mcp-suite"
            assert client.instructions
            await _list_and_call(client)
            # The same process also serves a modern request beside the legacy session
            # (versioning, "Backward Compatibility": a dual-era server MAY serve both at once).
            discovered = await client.session.send_discover(MODERN_VERSION)
            assert discovered["supportedVersions"] == list(ALL_VERSIONS)
            assert discovered["resultType"] == "complete"
        methods = [event["method"] for event in _audit(errlog)]
        assert methods[0] == "initialize"
        assert "server/discover" in methods


async def test_sdk_auto_mode_probe_discovers_a_modern_server_and_stays_modern() -> None:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        async with Client(stdio_client(_parameters(), errlog=errlog)) as client:
            # Auto mode adopted the discover result: no handshake at all.
            assert client.session.discover_result is not None
            assert client.session.initialize_result is None
            assert client.protocol_version == MODERN_VERSION
            assert client.server_info is not None
            assert client.server_info.name == "mcp-suite"
            await _list_and_call(client)
        audit = _audit(errlog)
        assert audit[0]["method"] == "server/discover"
        assert audit[0]["outcome"] == "ok"
        assert "initialize" not in [event["method"] for event in audit]


async def test_sdk_pinned_to_the_modern_version_needs_neither_probe_nor_handshake() -> None:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        async with Client(stdio_client(_parameters(), errlog=errlog), mode=MODERN_VERSION) as client:
            assert client.protocol_version == MODERN_VERSION
            await _list_and_call(client)
        methods = [event["method"] for event in _audit(errlog)]
        assert methods[0] == "tools/list"
        assert "initialize" not in methods
        assert "server/discover" not in methods
