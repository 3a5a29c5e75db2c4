"""The session core's side of asking the client: what a tool call carries to the runtime (the
declared capabilities, the retry's members), a malformed retry refused before any call starts, and
the input-required result (modern era only)."""

from __future__ import annotations

from mcp_suite.problems import INTERNAL_ERROR, INVALID_PARAMS
from mcp_suite.protocol import core, mrtr
from tests.support.session_core import CC, MODERN, PV, answer_of, line, make_core
from tests.support.wire import slug_of

SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "mcp-suite", "version": "9.9"}}


def _call(params: dict[str, object], capabilities: dict[str, object] | None = None) -> bytes:
    meta = {PV: MODERN, CC: {"elicitation": {}} if capabilities is None else capabilities}
    return line("tools/call", {"name": "echo", "arguments": {"text": "hi"}, **params, "_meta": meta}, 7)


def test_a_modern_call_carries_its_declared_capabilities_and_its_retry() -> None:
    start = make_core().receive(
        _call({"inputResponses": {"q1": {"action": "decline"}}, "requestState": "a.b"}, {"sampling": {}})
    )
    assert isinstance(start, core.StartCall)
    assert start.asking == mrtr.CallInput(
        modern=True,
        capabilities={"sampling": {}},
        retry=mrtr.Retry({"q1": {"action": "decline"}}, "a.b"),
    )


def test_a_legacy_call_carries_what_initialize_declared() -> None:
    session = make_core()
    answer_of(
        session.receive(
            line("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}})
        )
    )
    start = session.receive(
        line("tools/call", {"name": "echo", "arguments": {}, "requestState": "ignored"}, 2)
    )
    assert isinstance(start, core.StartCall)
    assert start.asking == mrtr.CallInput(modern=False, capabilities={"elicitation": {}})
    bare = make_core()
    answer_of(bare.receive(line("initialize", {"protocolVersion": "2025-11-25", "capabilities": "all"})))
    start = bare.receive(line("tools/call", {"name": "echo", "arguments": {}}, 2))
    assert isinstance(start, core.StartCall)
    assert start.asking == mrtr.CallInput(modern=False, capabilities={})


def test_a_malformed_retry_is_a_json_rpc_error_and_starts_no_call() -> None:
    cases: list[tuple[dict[str, object], str]] = [
        ({"inputResponses": None}, "invalid-input-responses"),
        ({"inputResponses": {"q1": 12345}}, "invalid-input-responses"),
        ({"requestState": 42}, "invalid-request-state"),
    ]
    for params, slug in cases:
        session = make_core()
        message = answer_of(session.receive(_call(params)))
        assert message["id"] == 7
        assert message["error"]["code"] == INVALID_PARAMS
        assert slug_of(message["error"]["data"]) == slug
        assert session.in_flight == 0


def test_a_call_that_needs_input_is_answered_with_an_input_required_result() -> None:
    session = make_core()
    start = session.receive(_call({}))
    assert isinstance(start, core.StartCall)
    question = mrtr.yes_no_request("Go on?")
    answer = session.call_finished(start.key, mrtr.InputNeeded({"q1": question}, "s.t"))
    assert answer.outcome == "input-required"  # audited and counted as such, neither ok nor an error
    assert answer.error_code is None
    assert answer_of(answer) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "resultType": "input_required",
            "inputRequests": {"q1": question.wire()},
            "requestState": "s.t",
            "_meta": SERVER_META,
        },
    }
    assert session.in_flight == 0


def test_a_call_the_client_cancelled_gets_nothing_even_when_it_needed_input() -> None:
    session = make_core()
    start = session.receive(_call({}))
    assert isinstance(start, core.StartCall)
    session.receive(line("notifications/cancelled", {"requestId": 7}, None).replace(b'"id": null, ', b""))
    answer = session.call_finished(start.key, mrtr.InputNeeded({}, "s.t"))
    assert answer.frame is None


def test_input_needed_in_a_legacy_call_is_an_internal_error_never_a_result() -> None:
    session = make_core()
    answer_of(session.receive(line("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})))
    start = session.receive(line("tools/call", {"name": "echo", "arguments": {}}, 3))
    assert isinstance(start, core.StartCall)
    message = answer_of(session.call_finished(start.key, mrtr.InputNeeded({}, "s.t")))
    assert message["error"]["code"] == INTERNAL_ERROR
