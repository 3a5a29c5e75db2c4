"""A call talks to its client while it runs, seen by the official Python SDK through the real server
(the test entry point `tests.support.stray_server`, with its `sleep` and `ask` tools), on stdio and
over Streamable HTTP: progress for a request that carries a progress token, `logging/setLevel` and
the log message a long call sends, and a question put to the user (`elicitation/create`, the
handshake eras) whose answer reaches the tool; a client that declared no elicitation gets the
refusal, never a silent yes.
"""

from __future__ import annotations

import json
import subprocess
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
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ElicitResult, LoggingLevel, LoggingMessageNotificationParams

from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.client import REPO
from tests.support.http_server import HttpServer, open_http_server
from tests.support.ts_sdk import ts_sdk_progress

pytestmark = [
    pytest.mark.e2e,
    # The SDK (mcp 2.x, streamable_http.py `_handle_sse_response`) returns from inside its loop
    # over an event stream once the result has arrived, leaving its async generators to the
    # collector: only the SDK's own generators, named, are let through.
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object "
        "(PoolByteStream|Response|EventSource):pytest.PytestUnraisableExceptionWarning"
    ),
]

_ENV = {"MCP_PROGRESS_INTERVAL_S": "0.2", "MCP_CALL_DEADLINE_S": "2", "MCP_SQL_STATEMENT_TIMEOUT_MS": "1000"}


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    with open_http_server(None, _ENV, module="tests.support.stray_server") as running:
        yield running


@asynccontextmanager
async def _client(
    transport: str, http: HttpServer | None, mode: str, **options: Any
) -> AsyncIterator[Client]:
    if transport == "stdio":
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-X", "dev", "-m", "tests.support.stray_server"],
            env={"PYTHONPATH": ".", "MCP_LOG_LEVEL": "INFO", **_ENV},
            cwd=REPO,
        )
        with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
            async with Client(stdio_client(parameters, errlog=errlog), mode=mode, **options) as client:
                yield client
        return
    assert http is not None
    async with (
        create_mcp_http_client() as session_http,
        Client(streamable_http_client(http.url, http_client=session_http), mode=mode, **options) as client,
    ):
        yield client


def _server(transport: str, request: pytest.FixtureRequest) -> HttpServer | None:
    return request.getfixturevalue("http_server") if transport == "http" else None


@pytest.mark.parametrize("mode", ["legacy", MODERN_VERSION])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_with_a_progress_token_sees_the_slow_call_s_progress_before_its_result(
    transport: str, mode: str, request: pytest.FixtureRequest
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with trio.fail_after(60):
        async with _client(transport, _server(transport, request), mode) as client:
            result = await client.call_tool("sleep", {"seconds": 1.2}, progress_callback=on_progress)
            assert result.is_error is False
            done = len(seen)
            silent: list[object] = []
            quiet = await client.call_tool("sleep", {"seconds": 0.6}, progress_callback=None)
            assert quiet.is_error is False
            assert silent == []
    assert done == len(seen) >= 2  # one each 0.2 s of a 1.2 s call: several, and none after it
    progresses = [p for p, _, _ in seen]
    assert progresses == sorted(set(progresses))  # strictly increasing
    assert all(total is None for _, total, _ in seen)
    assert all(message is not None and message.endswith(" s elapsed") for _, _, message in seen)


async def _set_level(client: Client, level: LoggingLevel) -> None:
    # The SDK warns that 2026-07-28 deprecates logging; the handshake eras have it.
    with pytest.warns(MCPDeprecationWarning):
        await client.set_logging_level(level)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_log_messages_reach_a_client_only_at_the_level_it_set(
    transport: str, request: pytest.FixtureRequest
) -> None:
    messages: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        messages.append(params)

    with trio.fail_after(60):
        async with _client(
            transport, _server(transport, request), "legacy", logging_callback=on_log
        ) as client:
            caps = client.server_capabilities
            assert caps is not None
            assert caps.logging is not None
            # No level set: nothing is sent, even for a call past half its deadline (2 s).
            assert (await client.call_tool("sleep", {"seconds": 1.3})).is_error is False
            assert messages == []
            await _set_level(client, "error")  # a warning is below it
            assert (await client.call_tool("sleep", {"seconds": 1.3})).is_error is False
            assert messages == []
            await _set_level(client, "info")
            assert (await client.call_tool("sleep", {"seconds": 1.3})).is_error is False
    (message,) = messages
    assert (message.level, message.logger) == ("warning", "mcp-suite")
    assert isinstance(message.data, str)
    assert "half of its deadline" in message.data


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_legacy_client_answers_the_tool_s_question_and_the_tool_gets_the_answer(
    transport: str, request: pytest.FixtureRequest
) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    with trio.fail_after(60):
        async with _client(
            transport, _server(transport, request), "legacy", elicitation_callback=on_elicit
        ) as client:
            result = await client.call_tool("ask", {"question": "Read the payroll table?"})
    assert asked == ["Read the payroll table?"]
    assert result.is_error is False
    assert result.structured_content == {"action": "accept", "approve": True}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_that_declared_no_elicitation_is_not_asked_and_the_tool_gets_the_refusal(
    transport: str, request: pytest.FixtureRequest
) -> None:
    with trio.fail_after(60):
        async with _client(transport, _server(transport, request), "legacy") as client:
            result = await client.call_tool("ask", {"question": "Read the payroll table?"})
    assert result.is_error is True
    problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # one text block
    assert problem["type"] == "urn:mcp-suite:problem:client-cannot-ask"
    assert problem["metadata"] == {"method": "elicitation/create"}


@pytest.mark.parametrize(("sdk", "era"), [("v1", "legacy"), ("v2", "legacy"), ("v2", "modern")])
def test_the_typescript_sdk_sees_the_slow_call_s_progress_before_its_result(
    sdk: str, era: str, http_server: HttpServer
) -> None:
    script = ts_sdk_progress()
    done = subprocess.run(
        ["node", str(script), sdk, era, http_server.url, "1.2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=script.parent,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["isError"] is False
    assert seen["atResult"] == len(seen["seen"]) >= 2
    progresses = [note["progress"] for note in seen["seen"]]
    assert progresses == sorted(set(progresses))
    assert all(note["message"].endswith(" s elapsed") for note in seen["seen"])


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_refusal_from_a_call_with_progress_is_the_tool_s_own_problem(
    transport: str, request: pytest.FixtureRequest
) -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        await trio.lowlevel.checkpoint()

    with trio.fail_after(60):
        async with _client(transport, _server(transport, request), "legacy") as client:
            result = await client.call_tool("deny", {}, progress_callback=on_progress)
    assert result.is_error is True
    problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # one text block
    assert (problem["type"], problem["metadata"]) == ("urn:mcp-suite:problem:access-denied", {"why": "test"})
