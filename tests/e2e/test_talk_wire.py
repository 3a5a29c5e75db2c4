"""The talk of a running call, line by line through the real server (the test entry point, with its
`sleep` and `ask` tools): on stdio, a question to the client and its answer matched by the server's
id, a second answer, an unknown one and a late one dropped with the session going on, a question
left unanswered ended by the call's deadline, and progress lines only before the result; over HTTP,
a client that takes no event stream gets its JSON answer as before, and is never asked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest

from tests.support.client import STRAY_ARGV, ServerProcess, problem_of
from tests.support.http_server import HttpServer, open_http_server

pytestmark = pytest.mark.e2e

_ENV = {"MCP_PROGRESS_INTERVAL_S": "0.2", "MCP_CALL_DEADLINE_S": "2", "MCP_SQL_STATEMENT_TIMEOUT_MS": "1000"}
_ASK = {"name": "ask", "arguments": {"question": "Go on?"}}


def _open(server: ServerProcess, capabilities: dict[str, Any]) -> None:
    server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities})
    server.notify("notifications/initialized")


def _quiet_then_ping(server: ServerProcess) -> None:
    """Nothing came for what was sent before: the next line is the answer to a ping."""
    ping = server.send_request("ping")
    assert server.recv() == {"jsonrpc": "2.0", "id": ping, "result": {}}


def test_a_question_s_answer_reaches_its_call_once_and_other_answers_are_dropped() -> None:
    with ServerProcess(_ENV, argv=STRAY_ARGV) as server:
        _open(server, {"elicitation": {}})
        server.send_request("tools/call", _ASK, id="q")
        asked = server.recv()
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["message"] == "Go on?"
        answer = {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"approve": True}},
        }
        server.send(answer)
        assert server.recv()["result"]["structuredContent"] == {"action": "accept", "approve": True}
        server.send(answer)  # a second answer to the same question
        server.send({"jsonrpc": "2.0", "id": "mcp-suite-77", "result": {}})  # to one never asked
        server.send({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -1, "message": "x"}})
        _quiet_then_ping(server)
        # A refusal by the client is the tool's problem, naming the code only.
        server.send_request("tools/call", _ASK, id="r")
        again = server.recv()
        server.send({"jsonrpc": "2.0", "id": again["id"], "error": {"code": -32600, "message": "secret"}})
        problem = problem_of(server.recv()["result"])
        assert problem["type"] == "urn:mcp-suite:problem:client-request-failed"
        assert "secret" not in problem["detail"]


def test_an_unanswered_question_ends_at_the_call_s_deadline_and_a_late_answer_is_dropped() -> None:
    with ServerProcess(_ENV, argv=STRAY_ARGV) as server:
        _open(server, {"elicitation": {}})
        server.send_request("tools/call", _ASK, id="late")
        asked = server.recv()
        timed_out = server.recv(timeout=15)
        assert timed_out["id"] == "late"
        assert problem_of(timed_out["result"])["type"] == "urn:mcp-suite:problem:execution-timeout"
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
        _quiet_then_ping(server)


def test_a_question_to_a_client_that_declared_no_elicitation_is_never_sent() -> None:
    with ServerProcess(_ENV, argv=STRAY_ARGV) as server:
        _open(server, {"sampling": {}, "roots": {}})
        result = server.call_tool("ask", {"question": "Go on?"})  # the next line is its answer
        assert problem_of(result)["type"] == "urn:mcp-suite:problem:client-cannot-ask"


def test_progress_lines_come_only_before_their_call_s_result() -> None:
    with ServerProcess(_ENV, argv=STRAY_ARGV) as server:
        _open(server, {})
        params = {"name": "sleep", "arguments": {"seconds": 1}, "_meta": {"progressToken": "p"}}
        server.send_request("tools/call", params, id="s")
        lines = []
        while "id" not in (line := server.recv()):
            lines.append(line)
        assert line["id"] == "s"
        assert len(lines) >= 2
        assert {(m["method"], m["params"]["progressToken"]) for m in lines} == {
            ("notifications/progress", "p")
        }
        _quiet_then_ping(server)
        # Without a token, the same call says nothing before its result.
        server.send_request("tools/call", {"name": "sleep", "arguments": {"seconds": 0.6}}, id="t")
        assert server.recv()["id"] == "t"


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    with open_http_server(None, _ENV, module="tests.support.stray_server") as running:
        yield running


def _session(client: httpx.Client, url: str, capabilities: dict[str, Any]) -> dict[str, str]:
    opened = client.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities},
        },
        headers={"accept": "application/json, text/event-stream"},
    )
    assert opened.status_code == 200
    return {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}


def test_over_http_a_client_that_takes_no_event_stream_gets_json_and_is_never_asked(
    http_server: HttpServer,
) -> None:
    with httpx.Client(timeout=30) as client:
        session = _session(client, http_server.url, {"elicitation": {}})
        json_only = {**session, "accept": "application/json"}
        params = {"name": "sleep", "arguments": {"seconds": 0.8}, "_meta": {"progressToken": 1}}
        slow = client.post(
            http_server.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
            headers=json_only,
        )
        assert slow.headers["content-type"] == "application/json"
        assert slow.json()["result"]["structuredContent"] == {"tag": 0, "slept": 0.8}
        asked = client.post(
            http_server.url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": _ASK},
            headers=json_only,
        )
        assert asked.headers["content-type"] == "application/json"
        assert problem_of(asked.json()["result"])["type"] == "urn:mcp-suite:problem:client-cannot-ask"


def test_over_http_progress_and_the_result_arrive_as_events_of_one_stream(http_server: HttpServer) -> None:
    with httpx.Client(timeout=30) as client:
        session = _session(client, http_server.url, {})
        params = {"name": "sleep", "arguments": {"seconds": 0.8}, "_meta": {"progressToken": "h"}}
        slow = client.post(
            http_server.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
            headers={**session, "accept": "application/json, text/event-stream"},
        )
    assert slow.headers["content-type"] == "text/event-stream"
    events = [block for block in slow.text.split("\n\n") if block]
    assert all(block.startswith("event: message\ndata: {") for block in events)
    datas = [block.split("data: ", 1)[1] for block in events]
    assert len(datas) >= 3
    assert all('"notifications/progress"' in data for data in datas[:-1])
    assert datas[-1].startswith('{"jsonrpc":"2.0","id":1,"result":')


def test_a_call_cancelled_while_it_waits_for_an_answer_sends_nothing_more_and_its_answer_is_dropped() -> None:
    with ServerProcess(_ENV, argv=STRAY_ARGV) as server:
        _open(server, {"elicitation": {}})
        server.send_request("tools/call", _ASK, id="c")
        asked = server.recv()
        server.notify("notifications/cancelled", {"requestId": "c"})
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
        _quiet_then_ping(server)  # no answer to "c", and none to the late answer
