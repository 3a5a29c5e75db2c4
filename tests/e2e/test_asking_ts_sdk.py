"""The official TypeScript SDK (v2, `@modelcontextprotocol/client`) pinned to 2026-07-28 over
Streamable HTTP answers the question a tool asks (`confirm_echo`, tests/support/asking_server.py):
its input-required driver calls the client's `elicitation/create` handler with the yes/no form and
retries with the answer and the sealed state. A yes echoes, a no is `not-approved`, and a client
that declares no elicitation gets `client-cannot-ask` without being asked."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.client import REPO, server_env
from tests.support.http_server import HttpServer, open_http_server
from tests.support.ts_sdk import ts_sdk_ask

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    with open_http_server(None, {}, module="tests.support.asking_server") as running:
        yield running


def _ask(url: str, answer: str) -> dict[str, Any]:
    proc = subprocess.run(
        ["node", str(ts_sdk_ask()), url, answer],
        capture_output=True,
        text=True,
        env=server_env(),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    seen: dict[str, Any] = json.loads(proc.stdout)
    return seen


def _problem_type(seen: dict[str, Any]) -> str:
    assert seen["isError"] is True, seen
    (block,) = seen["content"]
    kind: str = json.loads(block["text"])["type"]
    return kind


def test_the_ts_sdk_answers_yes_and_the_text_is_echoed(server: HttpServer) -> None:
    seen = _ask(server.url, "yes")
    assert seen["protocolVersion"] == "2026-07-28"
    assert seen["asked"] == ["Echo 'hello'?"]
    assert (seen["isError"], seen["structuredContent"]) == (False, {"text": "hello"})


def test_the_ts_sdk_answers_no_and_the_call_is_refused(server: HttpServer) -> None:
    seen = _ask(server.url, "no")
    assert seen["asked"] == ["Echo 'hello'?"]
    assert _problem_type(seen) == "urn:mcp-suite:problem:not-approved"
    assert seen["structuredContent"] is None


def test_a_ts_sdk_client_without_elicitation_gets_the_refusal_unasked(server: HttpServer) -> None:
    seen = _ask(server.url, "cannot")
    assert seen["asked"] == []
    assert _problem_type(seen) == "urn:mcp-suite:problem:client-cannot-ask"
