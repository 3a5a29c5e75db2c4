"""Calls of `read_only_sql` through the real server, over stdio (a child process) and over HTTP
(`serve-http` and the official SDK's client), each result in the stdio shape; and the checks of a
refusal and of an answer that the PostgreSQL tests of the policy share."""

from __future__ import annotations

import json
from typing import Any

import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.client import ServerProcess
from tests.support.harness import open_session
from tests.support.http_server import open_http_server
from tests.support.pg import sql_settings
from tests.support.wire import modern_tool_post

__all__ = ["http_calls", "http_sql_call", "refused_with", "served", "session_sql_call", "stdio_calls"]


def stdio_calls(env: dict[str, str], sqls: list[str]) -> list[dict[str, Any]]:
    """Each query's result (the MCP `result` object) through the server over stdio."""
    with ServerProcess(env=env) as server:
        server.initialize()
        results = [server.call_tool("read_only_sql", {"sql": sql, "max_rows": 50}) for sql in sqls]
        assert server.stop() == 0
    return results


async def http_calls(env: dict[str, str], sqls: list[str]) -> list[dict[str, Any]]:
    """Each query's result through `serve-http` and the official SDK's client, in the stdio shape."""
    results: list[dict[str, Any]] = []
    with open_http_server(None, env) as server:
        with trio.fail_after(90):
            async with (
                create_mcp_http_client() as http,
                Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as client,
            ):
                for sql in sqls:
                    result = await client.call_tool("read_only_sql", {"sql": sql, "max_rows": 50})
                    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]  # a text block
                    results.append(
                        {
                            "isError": result.is_error,
                            "structuredContent": result.structured_content,
                            "text": text,
                        }
                    )
    return results


async def session_sql_call(cluster: Cluster, sql: str, **overrides: Any) -> dict[str, Any]:
    """One query's result (the MCP `result` object) through an in-memory session with the built-in
    tools on `cluster`'s reader, with the settings `overrides`."""
    settings = sql_settings(cluster.reader_dsn, **overrides)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            response = await h.response(await h.call("read_only_sql", {"sql": sql, "max_rows": 200}))
    result: dict[str, Any] = response["result"]
    return result


def http_sql_call(sql: str, token: str, request_id: int) -> dict[str, Any]:
    """The keyword arguments of an httpx POST that calls `read_only_sql` with `sql` (modern era)."""
    return modern_tool_post("read_only_sql", {"sql": sql}, token=token, request_id=request_id)


def refused_with(result: dict[str, Any], rule: str, secret: str) -> None:
    text = json.dumps(result)
    assert result["isError"] is True, text
    document = json.loads(result["content"][0]["text"] if "content" in result else result["text"])
    assert document["type"].endswith("query-violation"), document
    assert document["metadata"]["rule"] == rule, document
    assert secret not in text


def served(result: dict[str, Any], rows: list[list[Any]] | None) -> None:
    assert result["isError"] is False, json.dumps(result)
    if rows is not None:
        assert result["structuredContent"]["rows"] == rows
