"""The official Python SDK (`mcp`), pinned to 2026-07-28 over stdio, answers the question a tool
asks (`confirm_echo`, tests/support/asking_server.py): its input-required driver calls the client's
elicitation callback with the yes/no form and retries with the answer and the sealed state. A yes
echoes, a no is the in-band `not-approved` refusal, and an SDK client without an elicitation
callback (which then declares no elicitation) gets `client-cannot-ask`."""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.asking_server import CONFIRM_TOOL
from tests.support.client import REPO

pytestmark = pytest.mark.e2e


def _parameters() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-X", "dev", "-m", "tests.support.asking_server"],
        env={"PYTHONPATH": ".", "MCP_LOG_LEVEL": "INFO"},
        cwd=REPO,
    )


def _problem(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error is True
    problem: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]  # one text block
    return problem


@pytest.mark.parametrize(("approve", "echoed"), [(True, True), (False, False)])
async def test_the_sdk_answers_the_yes_no_question_and_the_call_follows_the_answer(
    approve: bool, echoed: bool
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": approve})

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        client = Client(
            stdio_client(_parameters(), errlog=errlog), mode=MODERN_VERSION, elicitation_callback=elicit
        )
        async with client:
            result = await client.call_tool(CONFIRM_TOOL, {"text": "hello"})
    assert [params.message for params in asked] == ["Echo 'hello'?"]
    if echoed:
        assert result.is_error is False
        assert result.structured_content == {"text": "hello"}
    else:
        assert _problem(result)["type"] == "urn:mcp-suite:problem:not-approved"


async def test_an_sdk_client_that_cannot_elicit_gets_the_refusal() -> None:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog, trio.fail_after(60):
        async with Client(stdio_client(_parameters(), errlog=errlog), mode=MODERN_VERSION) as client:
            result = await client.call_tool(CONFIRM_TOOL, {"text": "hello"})
    assert _problem(result)["type"] == "urn:mcp-suite:problem:client-cannot-ask"
