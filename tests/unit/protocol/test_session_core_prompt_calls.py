"""The session core's prompts that ask their client: in 2026-07-28 a `prompts/get` of one starts a
call (`CallKind.PROMPT`) carrying its checked arguments and the request's means of asking, which
ends in its rendered messages or an input-required result; every other prompt stays inline; in the
handshake eras it is refused (`client-cannot-ask`), never rendered without the answer."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, InvalidRequestStateError
from mcp_suite.protocol import core, mrtr
from mcp_suite.protocol.prompts import Prompt, PromptArgument
from tests.support.session_core import CC, MODERN, PV, TOOLS, answer_of, counter, line
from tests.support.wire import slug_of

SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "fixtures", "version": "9.9"}}


def _never(arguments: Any) -> list[dict[str, Any]]:
    raise AssertionError("the core never renders a prompt that asks")


def _plain(arguments: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": "plain"}}]


ASKS = Prompt("ask", "Ask", "Asks for context.", _never, (PromptArgument("topic", "The topic"),), asks=True)
PLAIN = Prompt("plain", "Plain", "Asks nothing.", _plain)
MESSAGES = [{"role": "user", "content": {"type": "text", "text": "Use this context: tests"}}]


def _core() -> core.SessionCore:
    return core.SessionCore(
        server_name="fixtures",
        server_version="9.9",
        tool_names=[tool.name for tool in TOOLS],
        tools=lambda: TOOLS,
        instructions="Fixtures.",
        resources=[],
        max_frame_bytes=1_048_576,
        max_json_depth=64,
        arg_max_depth=8,
        arg_max_items=1_000,
        call_deadline_s=30,
        draw_boundary=counter(),
        prompt_list=[ASKS, PLAIN],
    )


def _get(params: dict[str, Any], request_id: Any = 7) -> bytes:
    meta = {PV: MODERN, CC: {"elicitation": {}}}
    return line("prompts/get", {**params, "_meta": meta}, request_id)


def _started(session: core.SessionCore, params: dict[str, Any] | None = None) -> core.StartCall:
    start = session.receive(_get(params or {"name": "ask", "arguments": {"topic": "tests"}}))
    assert isinstance(start, core.StartCall), start
    return start


def test_a_prompt_that_asks_is_started_as_a_call_with_its_arguments_and_its_retry() -> None:
    session = _core()
    start = _started(
        session,
        {
            "name": "ask",
            "arguments": {"topic": "tests"},
            "inputResponses": {"user_context": {"action": "accept", "content": {"context": "x"}}},
            "requestState": "a.b",
        },
    )
    assert (start.kind, start.name, start.arguments) == (core.CallKind.PROMPT, "ask", {"topic": "tests"})
    assert start.kind.value == "prompts/get"  # what its state is bound to, with the name and arguments
    assert start.asking == mrtr.CallInput(
        modern=True,
        capabilities={"elicitation": {}},
        retry=mrtr.Retry({"user_context": {"action": "accept", "content": {"context": "x"}}}, "a.b"),
    )
    assert session.in_flight == 1


def test_every_other_prompt_is_still_answered_inline() -> None:
    message = answer_of(_core().receive(_get({"name": "plain"})))
    assert message["result"]["messages"] == _plain({})


def test_a_rendered_prompt_is_a_get_prompt_result() -> None:
    session = _core()
    start = _started(session)
    answer = session.call_finished(start.key, core.PromptRendered(MESSAGES))
    assert (answer.method, answer.outcome, answer.tool) == ("prompts/get", "ok", None)
    assert answer_of(answer) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "description": "Asks for context.",
            "messages": MESSAGES,
            "resultType": "complete",
            "_meta": SERVER_META,
        },
    }
    assert session.in_flight == 0


def test_a_prompt_that_needs_input_is_answered_with_an_input_required_result() -> None:
    session = _core()
    start = _started(session)
    question = mrtr.yes_no_request("Which context?")
    answer = session.call_finished(start.key, mrtr.InputNeeded({"user_context": question}, "s.t"))
    assert (answer.method, answer.outcome, answer.tool, answer.error_code) == (
        "prompts/get",
        "input-required",
        None,
        None,
    )
    assert answer_of(answer)["result"] == {
        "resultType": "input_required",
        "inputRequests": {"user_context": question.wire()},
        "requestState": "s.t",
        "_meta": SERVER_META,
    }


def test_a_state_the_runtime_refused_is_a_json_rpc_error_of_the_prompt() -> None:
    # The runtime unseals the state (bound to prompts/get, the prompt, its arguments and the caller):
    # a tampered or foreign one ends the call so, and the core sends it as a JSON-RPC error.
    session = _core()
    start = _started(session)
    refused = InvalidRequestStateError("not this request's state", invalid_params=["requestState"])
    message = answer_of(session.call_finished(start.key, core.CallRaised(refused)))
    assert message["error"]["code"] == INVALID_PARAMS
    assert slug_of(message["error"]["data"]) == "invalid-request-state"


def test_a_prompt_past_its_deadline_is_an_internal_error_naming_the_prompt() -> None:
    session = _core()
    start = _started(session)
    message = answer_of(session.call_finished(start.key, core.CallInterrupted(deadline_passed=True)))
    assert message["error"]["code"] == INTERNAL_ERROR
    assert "prompt could not be rendered" in message["error"]["message"] + str(message["error"]["data"])


@pytest.mark.parametrize(
    ("params", "slug"),
    [
        ({"name": "ask", "arguments": {}}, "validation-error"),  # its required argument missing
        ({"name": "ask", "arguments": {"topic": "t"}, "requestState": 42}, "invalid-request-state"),
        ({"name": "ask", "arguments": {"topic": "t"}, "inputResponses": []}, "invalid-input-responses"),
        ({"name": ["ask"]}, "validation-error"),  # not a name: inline, -32602
    ],
)
def test_a_prompt_asked_wrongly_is_refused_before_any_call_starts(params: dict[str, Any], slug: str) -> None:
    session = _core()
    message = answer_of(session.receive(_get(params)))
    assert message["error"]["code"] == INVALID_PARAMS
    assert slug_of(message["error"]["data"]) == slug
    assert session.in_flight == 0


def test_a_prompt_that_asks_is_refused_in_the_handshake_eras_and_never_rendered() -> None:
    session = _core()
    before = answer_of(session.receive(line("prompts/get", {"name": "ask", "arguments": {"topic": "t"}}, 1)))
    assert slug_of(before["error"]["data"]) != "client-cannot-ask"  # not initialized comes first
    capabilities: dict[str, Any] = {"elicitation": {}}
    answer_of(
        session.receive(line("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities}))
    )
    event = session.receive(line("prompts/get", {"name": "ask", "arguments": {"topic": "t"}}, 2))
    assert isinstance(event, core.Answer)
    refused = answer_of(event)["error"]
    assert (refused["code"], slug_of(refused["data"])) == (INVALID_REQUEST, "client-cannot-ask")
    assert session.in_flight == 0
    plain = answer_of(session.receive(line("prompts/get", {"name": "plain"}, 3)))
    assert plain["result"]["messages"] == _plain({})
