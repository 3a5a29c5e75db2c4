"""Asking the user through the real server, over stdio and Streamable HTTP, in 2026-07-28: a tool
that asks a yes/no question (`confirm_echo`, tests/support/asking_server.py) ends its first call in
an input-required result; the retry carrying the answer and the sealed `requestState` completes on
a yes and is refused on a no; an altered state, or one replayed on other arguments or by another
caller, is refused; a client that did not declare elicitation is refused, never taken for a yes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, Final

import httpx2
import pytest

from tests.support.asking_server import CONFIRM_TOOL
from tests.support.client import ServerProcess, problem_of
from tests.support.harness import TEST_SCOPE
from tests.support.http_server import open_http_server
from tests.support.issuer import open_issuer

MODERN: Final = "2026-07-28"
ASKING_ARGV: Final = (sys.executable, "-X", "dev", "-m", "tests.support.asking_server")
CAN_ELICIT: Final[dict[str, Any]] = {"elicitation": {}}
YES: Final = {"action": "accept", "content": {"approve": True}}
NO: Final = {"action": "accept", "content": {"approve": False}}

Send = Callable[[dict[str, Any]], dict[str, Any]]


def _params(text: str, capabilities: dict[str, Any], **retry: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
    }
    return {"name": CONFIRM_TOOL, "arguments": {"text": text}, **retry, "_meta": meta}


@pytest.fixture(params=["stdio", "http"])
def send(request: pytest.FixtureRequest) -> Iterator[Send]:
    """One `tools/call` (its params) to a fresh asking server, its whole response back."""
    if request.param == "stdio":
        with ServerProcess(argv=ASKING_ARGV) as server:
            yield lambda params: server.request("tools/call", params, timeout=30)
        return
    with (
        open_http_server(None, {}, module="tests.support.asking_server") as running,
        httpx2.Client(timeout=30) as http,
    ):
        ids = iter(range(1, 1000))

        def post(params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": CONFIRM_TOOL}
            answer = http.post(running.url, json=body, headers=headers)
            reply: dict[str, Any] = answer.json()
            assert answer.status_code == 200, (answer.status_code, reply)  # a JSON-RPC answer, errors too
            return reply

        yield post


def _asked(send: Send, text: str = "hi") -> dict[str, Any]:
    result: dict[str, Any] = send(_params(text, CAN_ELICIT))["result"]
    assert result["resultType"] == "input_required", result
    return result


def test_the_first_call_asks_the_question_with_a_sealed_state(send: Send) -> None:
    result = _asked(send)
    assert result["inputRequests"] == {
        "q1": {
            "method": "elicitation/create",
            "params": {
                "message": "Echo 'hi'?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"approve": {"type": "boolean", "title": "Approve"}},
                    "required": ["approve"],
                },
            },
        }
    }
    assert isinstance(result["requestState"], str)
    assert "content" not in result
    assert "isError" not in result


def test_the_retry_with_a_yes_completes_and_with_a_no_is_refused(send: Send) -> None:
    state = _asked(send)["requestState"]
    done = send(_params("hi", CAN_ELICIT, inputResponses={"q1": YES}, requestState=state))["result"]
    assert done["resultType"] == "complete"
    assert done["structuredContent"] == {"text": "hi"}
    assert "isError" not in done or done["isError"] is False
    for answer, action in [
        (NO, "accept"),
        ({"action": "decline"}, "decline"),
        ({"action": "cancel"}, "cancel"),
    ]:
        refused = send(_params("hi", CAN_ELICIT, inputResponses={"q1": answer}, requestState=state))["result"]
        assert refused["isError"] is True, refused
        assert problem_of(refused)["type"].endswith(":not-approved")
        assert problem_of(refused)["metadata"] == {"action": action}
        assert "structuredContent" not in refused


def test_a_yes_sent_without_the_state_is_not_taken_the_question_is_asked_again(send: Send) -> None:
    result = send(_params("hi", CAN_ELICIT, inputResponses={"q1": YES}))["result"]
    assert result["resultType"] == "input_required"


@pytest.mark.parametrize(
    ("text", "alter"),
    [
        ("hi", lambda state: state + "-TAMPERED"),
        ("hi", lambda state: state[::-1]),
        ("bye", lambda state: state),  # the yes to "hi" replayed on other arguments
    ],
    ids=["tampered", "reversed", "other-arguments"],
)
def test_a_state_that_is_not_this_requests_is_refused_with_invalid_params(
    send: Send, text: str, alter: Callable[[str], str]
) -> None:
    state = _asked(send)["requestState"]
    reply = send(_params(text, CAN_ELICIT, inputResponses={"q1": YES}, requestState=alter(state)))
    assert "result" not in reply, reply
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"]["type"].endswith(":invalid-request-state")


@pytest.mark.parametrize("capabilities", [{}, {"sampling": {}, "roots": {}}, {"elicitation": {"url": {}}}])
def test_a_client_without_elicitation_is_refused_never_taken_for_a_yes(
    send: Send, capabilities: dict[str, Any]
) -> None:
    result = send(_params("hi", capabilities, inputResponses={"q1": YES}))["result"]
    assert result["isError"] is True, result
    problem = problem_of(result)
    assert problem["type"].endswith(":client-cannot-ask")
    assert problem["metadata"] == {"capability": "elicitation", "method": "elicitation/create"}


def test_malformed_input_responses_are_refused_with_invalid_params(send: Send) -> None:
    for responses in (None, {"q1": 12345}):
        reply = send(_params("hi", CAN_ELICIT, inputResponses=responses))
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["data"]["type"].endswith(":invalid-input-responses")


def test_a_legacy_client_that_did_not_declare_elicitation_is_refused() -> None:
    with ServerProcess(argv=ASKING_ARGV) as server:
        server.initialize()  # declares no capabilities
        result = server.call_tool(CONFIRM_TOOL, {"text": "hi"})
    assert result["isError"] is True
    assert problem_of(result)["type"].endswith(":client-cannot-ask")


def test_over_http_a_state_sealed_for_one_caller_is_refused_for_another() -> None:
    with (
        open_issuer() as issuer,
        open_http_server(issuer, {}, module="tests.support.asking_server") as running,
    ):

        def post(subject: str, params: dict[str, Any]) -> dict[str, Any]:
            token = issuer.token(running.url, sub=subject, scope=TEST_SCOPE)
            headers = {
                "Authorization": f"Bearer {token}",
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": CONFIRM_TOOL,
            }
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            reply: dict[str, Any] = httpx2.post(running.url, json=body, headers=headers, timeout=30).json()
            return reply

        state = post("alice", _params("hi", CAN_ELICIT))["result"]["requestState"]
        retry = _params("hi", CAN_ELICIT, inputResponses={"q1": YES}, requestState=state)
        stolen = post("mallory", retry)
        assert stolen["error"]["data"]["type"].endswith(":invalid-request-state"), stolen
        assert post("alice", retry)["result"]["structuredContent"] == {"text": "hi"}


def test_over_http_the_audit_records_the_question_and_the_answer_but_never_the_state() -> None:
    with (
        open_http_server(None, {}, module="tests.support.asking_server") as running,
        httpx2.Client(timeout=30) as http,
    ):
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": CONFIRM_TOOL}

        def post(request_id: int, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            reply: dict[str, Any] = http.post(running.url, json=body, headers=headers).json()
            return reply

        state = post(1, _params("hi", CAN_ELICIT))["result"]["requestState"]
        post(2, _params("hi", CAN_ELICIT, inputResponses={"q1": YES}, requestState=state))
        asked, answered = running.audit(2)
        log = running.errlog
        log.seek(0)
        text = log.read()
    assert (asked["id"], asked["tool"], asked["outcome"]) == (1, CONFIRM_TOOL, "input-required")
    assert (answered["id"], answered["outcome"]) == (2, "ok")
    assert state not in text  # the sealed state is the client's to keep, not the log's


def test_the_product_refuses_a_state_it_never_issued_even_on_a_tool_that_asks_nothing() -> None:
    # basic/patterns/mrtr: "MUST reject state that fails verification" -- whichever tool is named.
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": CAN_ELICIT,
    }
    with ServerProcess() as server:
        forged = server.request(
            "tools/call",
            {"name": "system_metrics", "arguments": {}, "requestState": "e30.AAAA", "_meta": meta},
            timeout=30,
        )
        plain = server.request(
            "tools/call", {"name": "system_metrics", "arguments": {}, "_meta": meta}, timeout=30
        )
    assert forged["error"]["code"] == -32602, forged
    assert forged["error"]["data"]["type"].endswith(":invalid-request-state")
    assert plain["result"]["resultType"] == "complete"
