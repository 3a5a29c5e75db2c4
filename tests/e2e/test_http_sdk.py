"""The official Python SDK's Streamable HTTP client against `mcp-suite serve-http`, run as a process.

A test issuer (keys and JWKS made here, served on loopback) signs the bearer token; the server
fetches the keys itself. The SDK connects in each era: pinned to 2026-07-28 (stateless POSTs) and
in its legacy mode (an `initialize` session with `Mcp-Session-Id`, ended with DELETE). The token
holds `metrics:read` only: the file tools are served but neither listed nor callable (403
insufficient_scope). Every audit record carries the token's subject.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.wire import modern_tool_post

pytestmark = pytest.mark.e2e


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def server(issuer: TestIssuer, tmp_path: Path) -> Iterator[HttpServer]:
    (tmp_path / "a.txt").write_text("hello\n")
    with open_http_server(issuer, {"MCP_SAFE_DATA_DIR": str(tmp_path)}) as running:
        yield running


def _client(token: str) -> httpx2.AsyncClient:
    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})


async def _list_and_call(client: Client) -> None:
    listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == ["system_metrics"]  # files:read is not granted
    result = await client.call_tool("system_metrics", {})
    assert result.is_error is False
    assert result.structured_content is not None
    assert 0 <= result.structured_content["cpu"]["percent"] <= 100


async def test_sdk_pinned_to_the_modern_version_lists_and_calls_with_a_bearer_token(
    server: HttpServer, issuer: TestIssuer
) -> None:
    token = issuer.token(server.url, sub="alice")
    with trio.fail_after(60):
        async with (
            _client(token) as http,
            Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as client,
        ):
            assert client.protocol_version == MODERN_VERSION
            await _list_and_call(client)
    audit = server.audit(2)
    assert [r["method"] for r in audit] == ["tools/list", "tools/call"]
    assert {r["sub"] for r in audit} == {"alice"}
    assert all(token not in json.dumps(r) for r in server.records())  # the token is never logged


async def test_sdk_auto_mode_probe_finds_a_modern_server_over_http(
    server: HttpServer, issuer: TestIssuer
) -> None:
    token = issuer.token(server.url, sub="dora")
    with trio.fail_after(60):
        async with (
            _client(token) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            assert client.session.discover_result is not None
            assert client.protocol_version == MODERN_VERSION
            await _list_and_call(client)
    audit = server.audit(3)
    assert [r["method"] for r in audit] == ["server/discover", "tools/list", "tools/call"]
    assert {r["sub"] for r in audit} == {"dora"}


async def test_sdk_legacy_mode_opens_a_session_lists_calls_and_ends_it(
    server: HttpServer, issuer: TestIssuer
) -> None:
    token = issuer.token(server.url, sub="bob")
    with trio.fail_after(60):
        async with (
            _client(token) as http,
            Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client,
        ):
            assert client.protocol_version == "2025-11-25"
            await _list_and_call(client)
    audit = server.audit(3)
    assert [r["method"] for r in audit] == ["initialize", "tools/list", "tools/call"]
    assert {r["sub"] for r in audit} == {"bob"}


async def test_a_tool_outside_the_token_s_scopes_is_403_insufficient_scope(
    server: HttpServer, issuer: TestIssuer
) -> None:
    token = issuer.token(server.url, sub="carol", scope="metrics:read")
    post = modern_tool_post("sandbox_fs_read", {"relative_path": "a.txt"}, token=token, request_id=5)
    body, headers = post["json"], post["headers"]
    async with httpx2.AsyncClient() as http:
        refused = await http.post(server.url, json=body, headers=headers)
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert 'scope="files:read"' in challenge
        assert "resource_metadata=" in challenge
        assert refused.json()["error"]["data"]["type"] == "urn:mcp-suite:problem:insufficient-scope"

        allowed = issuer.token(server.url, sub="carol", scope="files:read")
        headers["Authorization"] = f"Bearer {allowed}"
        served = await http.post(server.url, json=body, headers=headers)
        assert served.status_code == 200
        assert served.json()["result"]["structuredContent"]["content"] == "hello\n"
    audit = server.audit(2)
    assert [(r["sub"], r["outcome"], r.get("problem")) for r in audit] == [
        ("carol", "error", "insufficient-scope"),
        ("carol", "ok", None),
    ]
