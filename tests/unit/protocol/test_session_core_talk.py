"""While a call runs, the core decides what may go to its client (`protocol.talk`): progress for a
request that carries a token, and never after the call's result or its withdrawal; log messages
only at the level the client set, in the handshake eras; a request to the client only when it
declared the capability, its answer routed to the asking call, and any other answer dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_suite.problems import ClientCannotAskError
from mcp_suite.protocol import core
from mcp_suite.protocol.jsonrpc import ClientResponse
from mcp_suite.protocol.talk import (
    ClientAnswered,
    Facts,
    TalkTable,
    client_refused,
    progress_message,
    progress_token,
)
from tests.support.session_core import CALL, META, answer_of, initialized, line, make_core, modern

ELICIT = "elicitation/create"


def _started(session: core.SessionCore, params: dict[str, Any], request_id: Any = 7) -> core.StartCall:
    started = session.receive(line("tools/call", params, request_id))
    assert isinstance(started, core.StartCall)
    return started


def _notification(frame: bytes | None) -> dict[str, Any]:
    assert frame is not None
    assert frame.endswith(b"\n")
    message: dict[str, Any] = json.loads(frame)
    return message


def _at(seconds: float, **known: int) -> Facts:
    return Facts(elapsed_s=seconds, **known)


def test_a_call_with_a_progress_token_gets_progress_until_its_result_and_never_after() -> None:
    session = initialized()
    start = _started(session, {**CALL, "_meta": {"progressToken": "tok"}})
    assert start.progress_token == "tok"
    first = _notification(session.talk.progress(start.key, _at(1.04, rows=1)))
    assert first == {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "tok", "progress": 1.0, "message": "1.0 s elapsed; 1 row fetched"},
    }
    # `progress` must increase: the same tenth of a second again sends nothing.
    assert session.talk.progress(start.key, _at(1.01)) is None
    second = _notification(session.talk.progress(start.key, _at(2.0, rows=300, bytes_read=9)))
    assert second["params"]["message"] == "2.0 s elapsed; 300 rows fetched; 9 bytes read"
    session.call_finished(start.key, core.ToolSucceeded(b"{}"))
    assert session.talk.progress(start.key, _at(3.0)) is None  # the result is decided: nothing after it


def test_a_withdrawn_call_gets_no_more_progress() -> None:
    session = initialized()
    start = _started(session, {**CALL, "_meta": {"progressToken": 5}})
    assert session.talk.progress(start.key, _at(0.5)) is not None
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    cancel = session.receive(json.dumps(note).encode())
    assert cancel == core.CancelCall(start.key)
    assert session.talk.progress(start.key, _at(1.0)) is None


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {},
        {"progressToken": True},
        {"progressToken": 1.5},
        {"progressToken": None},
        {"progressToken": "x" * 257},
    ],
)
def test_a_call_without_a_usable_progress_token_gets_no_progress(meta: Any) -> None:
    session = initialized()
    params = dict(CALL) if meta is None else {**CALL, "_meta": meta}
    start = _started(session, params)
    assert start.progress_token is None
    assert session.talk.progress(start.key, _at(5.0)) is None


def test_a_modern_call_carries_its_progress_token_too() -> None:
    session = make_core()
    start = session.receive(line("tools/call", {**CALL, "_meta": {**META, "progressToken": "m"}}))
    assert isinstance(start, core.StartCall)
    assert _notification(session.talk.progress(start.key, _at(0.2)))["params"]["progressToken"] == "m"


def test_progress_says_only_the_time_and_what_is_known() -> None:
    assert progress_message(_at(0.25)) == "0.2 s elapsed"
    assert progress_message(_at(12.0, rows=0, bytes_read=1)) == "12.0 s elapsed; 0 rows fetched; 1 bytes read"
    assert progress_token({"_meta": "x"}) is None
    assert progress_token({"_meta": {"progressToken": "x" * 256}}) == "x" * 256


# -- logging ---------------------------------------------------------------------------------------


def test_log_messages_go_only_after_set_level_and_at_or_above_it() -> None:
    session = initialized()
    start = _started(session, CALL)
    assert session.talk.log(start.key, "emergency", "x") is None  # no level set: nothing
    reply = answer_of(session.receive(line("logging/setLevel", {"level": "warning"}, "lv")))
    assert reply == {"jsonrpc": "2.0", "id": "lv", "result": {}}
    assert session.talk.log(start.key, "info", "below") is None
    message = _notification(session.talk.log(start.key, "warning", "w" * 600))
    assert message == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "warning", "logger": "mcp-suite", "data": "w" * 512},
    }
    session.call_finished(start.key, core.ToolSucceeded(b"{}"))
    assert session.talk.log(start.key, "error", "late") is None


@pytest.mark.parametrize("level", ["WARNING", "verbose", 3, None])
def test_set_level_refuses_a_level_that_is_not_one_of_rfc_5424_s(level: Any) -> None:
    session = initialized()
    error = answer_of(session.receive(line("logging/setLevel", {"level": level})))["error"]
    assert error["code"] == -32602
    assert error["data"]["invalid_params"] == ["level"]
    assert session.talk.log_level is None


def test_set_level_needs_an_initialized_session_and_does_not_exist_in_the_modern_era() -> None:
    session = make_core()
    assert answer_of(session.receive(line("logging/setLevel", {"level": "info"})))["error"]["code"] == -32600
    assert (
        answer_of(session.receive(modern("logging/setLevel", {"level": "info"})))["error"]["code"] == -32601
    )


def test_a_modern_call_gets_no_log_message() -> None:
    session = initialized()
    session.receive(line("logging/setLevel", {"level": "debug"}))
    start = session.receive(modern("tools/call", CALL, 9))
    assert isinstance(start, core.StartCall)
    assert session.talk.log(start.key, "emergency", "x") is None


# -- asking the client -----------------------------------------------------------------------------


def _declaring(capabilities: dict[str, Any]) -> core.SessionCore:
    session = make_core()
    session.receive(line("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities}, 0))
    return session


def _response(request_id: Any, result: Any = None, error: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    return json.dumps(message).encode()


def test_a_client_that_declared_elicitation_is_asked_and_its_answer_reaches_the_asking_call() -> None:
    session = _declaring({"elicitation": {}})
    start = _started(session, CALL)
    server_id, frame = session.talk.ask(start.key, ELICIT, {"message": "ok?"})
    assert json.loads(frame) == {
        "jsonrpc": "2.0",
        "id": server_id,
        "method": ELICIT,
        "params": {"message": "ok?"},
    }
    answered = session.receive(_response(server_id, {"action": "accept"}))
    assert answered == ClientAnswered(start.key, server_id, {"action": "accept"}, None)
    # A second answer to the same request, and one to an id never sent, are dropped.
    assert session.receive(_response(server_id, {"action": "decline"})) is None
    assert session.receive(_response("mcp-suite-99", {})) is None
    assert session.receive(_response(1, {})) is None


def test_an_error_answer_reaches_the_asking_call_as_an_error() -> None:
    session = _declaring({"elicitation": {"form": {}}})
    start = _started(session, CALL)
    server_id, _ = session.talk.ask(start.key, ELICIT, {})
    answered = session.receive(_response(server_id, error={"code": -1, "message": "no"}))
    assert answered == ClientAnswered(start.key, server_id, None, {"code": -1, "message": "no"})


def test_an_answer_for_a_call_that_has_ended_or_stopped_waiting_is_dropped() -> None:
    session = _declaring({"elicitation": {}})
    start = _started(session, CALL)
    ended, _ = session.talk.ask(start.key, ELICIT, {})
    session.call_finished(start.key, core.ToolSucceeded(b"{}"))
    assert session.receive(_response(ended, {"action": "accept"})) is None
    again = _started(session, CALL, 8)
    gave_up, _ = session.talk.ask(again.key, ELICIT, {})
    session.talk.forget(gave_up)
    assert session.receive(_response(gave_up, {"action": "accept"})) is None


def test_an_answer_sent_to_another_session_is_dropped_there() -> None:
    asking, other = _declaring({"elicitation": {}}), _declaring({"elicitation": {}})
    start = _started(asking, CALL)
    server_id, _ = asking.talk.ask(start.key, ELICIT, {})
    assert other.receive(_response(server_id, {"action": "accept"})) is None
    assert asking.receive(_response(server_id, {"action": "accept"})) is not None


@pytest.mark.parametrize(
    ("capabilities", "method"),
    [
        ({}, ELICIT),
        ({"elicitation": {"url": {}}}, ELICIT),  # the URL mode only: no form to ask a question with
        ({"elicitation": True}, ELICIT),
        ({"elicitation": {}}, "sampling/createMessage"),
        ({"sampling": {}}, "roots/list"),
        ({"roots": {}}, "tools/call"),  # not a request the server sends
    ],
)
def test_a_client_that_did_not_declare_the_capability_is_never_asked(
    capabilities: dict[str, Any], method: str
) -> None:
    session = _declaring(capabilities)
    start = _started(session, CALL)
    with pytest.raises(ClientCannotAskError) as refused:
        session.talk.ask(start.key, method, {})
    assert refused.value.metadata == {"method": method}


@pytest.mark.parametrize(
    ("capabilities", "method"),
    [({"sampling": {}}, "sampling/createMessage"), ({"roots": {"listChanged": True}}, "roots/list")],
)
def test_sampling_and_roots_go_to_a_client_that_declared_them(
    capabilities: dict[str, Any], method: str
) -> None:
    session = _declaring(capabilities)
    start = _started(session, CALL)
    _, frame = session.talk.ask(start.key, method, {})
    assert json.loads(frame)["method"] == method


def test_a_modern_call_and_a_call_that_has_ended_never_ask() -> None:
    session = _declaring({"elicitation": {}})
    start = session.receive(modern("tools/call", CALL, 9))
    assert isinstance(start, core.StartCall)
    with pytest.raises(ClientCannotAskError):
        session.talk.ask(start.key, ELICIT, {})
    with pytest.raises(ClientCannotAskError):
        session.talk.ask(("i", 12345), ELICIT, {})


def test_initialize_with_capabilities_that_are_not_an_object_declares_nothing() -> None:
    session = _declaring("elicitation")  # type: ignore[arg-type]  # what a careless client sends
    assert session.talk.client_capabilities == {}


def test_a_fresh_table_waits_for_nothing() -> None:
    table = TalkTable()
    assert table.log_level is None
    assert table.answered(ClientResponse("mcp-suite-1", {}, None)) is None


@pytest.mark.parametrize(
    ("error", "detail"),
    [
        ({"code": -32601, "message": "no"}, "The client answered roots/list with an error (code -32601)."),
        ({"code": True}, "The client answered roots/list with an error."),
        ({}, "The client answered roots/list with an error."),
    ],
)
def test_a_client_s_error_answer_becomes_a_problem_naming_its_code_only(
    error: dict[str, Any], detail: str
) -> None:
    problem = client_refused("roots/list", error)
    assert (problem.slug, problem.detail, problem.metadata) == (
        "client-request-failed",
        detail,
        {"method": "roots/list"},
    )


def test_a_tool_s_own_reports_go_increasing_at_most_one_per_interval_and_stop_the_ticks() -> None:
    session = initialized()
    start = _started(session, {**CALL, "_meta": {"progressToken": "own"}})
    table = session.talk
    first = _notification(table.report(start.key, elapsed_s=0.0, progress=0, total=100, min_gap_s=0.1))
    assert first["params"] == {"progressToken": "own", "progress": 0, "total": 100}
    assert table.report(start.key, elapsed_s=0.05, progress=50, total=100, min_gap_s=0.1) is None  # too soon
    assert table.report(start.key, elapsed_s=0.2, progress=0, total=100, min_gap_s=0.1) is None  # no increase
    assert table.progress(start.key, _at(5.0)) is None  # the elapsed-time ticks have stopped
    last = _notification(
        table.report(start.key, elapsed_s=0.3, progress=100, message="m" * 600, min_gap_s=0.1)
    )
    assert last["params"] == {"progressToken": "own", "progress": 100, "message": "m" * 512}
    session.call_finished(start.key, core.ToolSucceeded(b"{}"))
    assert table.report(start.key, elapsed_s=9.0, progress=200) is None


def test_a_tool_s_report_for_a_call_without_a_token_sends_nothing() -> None:
    session = initialized()
    start = _started(session, CALL)
    assert session.talk.report(start.key, elapsed_s=1.0, progress=1) is None
