"""A slow query shows its progress to a client that asked for it: the official Python SDK calls
`read_only_sql` and `explain_sql` with `analyze` through the real server, on stdio and over
Streamable HTTP, with the tests' slow query (tests.support.pg.LONG_QUERY), which runs until its
statement timeout. Each notification says the time elapsed; none follows the result."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO
from tests.support.http_server import HttpServer, open_http_server
from tests.support.pg import LONG_QUERY

pytestmark = [
    pytest.mark.pg,
    pytest.mark.e2e,
    # The SDK leaves its event-stream generators to the collector (tests/e2e/test_talk_sdk.py).
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object "
        "(PoolByteStream|Response|EventSource):pytest.PytestUnraisableExceptionWarning"
    ),
]

_ENV = {"MCP_PROGRESS_INTERVAL_S": "0.2", "MCP_SQL_STATEMENT_TIMEOUT_MS": "1500"}


@pytest.fixture(scope="module")
def http_server(demo_cluster: Cluster) -> Iterator[HttpServer]:
    with open_http_server(None, {"MCP_SQL_DSN": demo_cluster.reader_dsn, **_ENV}) as running:
        yield running


@asynccontextmanager
async def _client(transport: str, dsn: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    if transport == "stdio":
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-X", "dev", "-m", "mcp_suite"],
            env={"PYTHONPATH": ".", "MCP_SQL_DSN": dsn, **_ENV},
            cwd=REPO,
        )
        with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
            async with Client(stdio_client(parameters, errlog=errlog), mode="legacy") as client:
                yield client
        return
    server: HttpServer = request.getfixturevalue("http_server")
    async with (
        create_mcp_http_client() as http,
        Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client,
    ):
        yield client


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("read_only_sql", {"sql": LONG_QUERY}), ("explain_sql", {"sql": LONG_QUERY, "analyze": True})],
)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_slow_query_shows_its_progress_until_its_statement_timeout_ends_it(
    transport: str,
    tool: str,
    arguments: dict[str, Any],
    demo_cluster: Cluster,
    request: pytest.FixtureRequest,
) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    with trio.fail_after(60):
        async with _client(transport, demo_cluster.reader_dsn, request) as client:
            result = await client.call_tool(tool, arguments, progress_callback=on_progress)
            at_result = len(seen)
            quick = await client.call_tool("read_only_sql", {"sql": "SELECT 1 AS one"})
    assert result.is_error is True  # the statement timeout ended it
    problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # one text block
    assert problem["type"] == "urn:mcp-suite:problem:execution-timeout"
    assert at_result == len(seen) >= 3  # 1.5 s at one each 0.2 s; none after the result
    assert [p for p, _ in seen] == sorted({p for p, _ in seen})
    assert all(message is not None and message.endswith(" s elapsed") for _, message in seen)
    assert all(LONG_QUERY not in (message or "") for _, message in seen)
    assert quick.is_error is False
