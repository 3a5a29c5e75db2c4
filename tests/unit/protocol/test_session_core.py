"""The session core, driven directly (no event loop): tables of frames in, answers out, both eras."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_suite.problems import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    AccessDeniedError,
    InternalServerError,
)
from mcp_suite.protocol import core
from mcp_suite.protocol.framing import OversizedFrame
from mcp_suite.protocol.mcp import ALL_VERSIONS
from tests.support.session_core import (
    CALL,
    CC,
    ERROR_CASES,
    META,
    MODERN,
    PV,
    SCHEMA_URI,
    answer_of,
    initialized,
    line,
    make_core,
    modern,
)
from tests.support.wire import slug_of


def _state(name: str) -> core.SessionCore:
    return make_core() if name == "fresh" else initialized()


@pytest.mark.parametrize(("state", "frame", "code"), ERROR_CASES)
def test_requests_that_get_a_json_rpc_error(state: str, frame: bytes, code: int) -> None:
    session = _state(state)
    before = session.legacy_version
    message = answer_of(session.receive(frame))
    assert message["error"]["code"] == code, message
    assert session.legacy_version == before  # an error never changes the handshake state
    assert session.in_flight == 0


def test_unsupported_version_names_every_supported_one_and_the_requested_one() -> None:
    message = answer_of(make_core().receive(line("tools/list", {"_meta": {PV: "1900-01-01", CC: {}}}, 4)))
    assert message["id"] == 4
    data = message["error"]["data"]
    assert data["supported"] == list(ALL_VERSIONS)
    assert data["requested"] == "1900-01-01"
    assert slug_of(data) == "unsupported-protocol-version"


def test_a_removed_method_says_it_does_not_exist_in_the_modern_revision() -> None:
    message = answer_of(make_core().receive(modern("ping")))
    assert MODERN in message["error"]["data"]["detail"]


@pytest.mark.parametrize("state", ["fresh", "initialized"])
@pytest.mark.parametrize(
    ("method", "params", "members", "cache_scope"),
    [
        ("server/discover", {}, {"supportedVersions", "capabilities", "instructions"}, "public"),
        ("tools/list", {}, {"tools"}, "public"),
        ("tools/list", {"cursor": ""}, {"tools"}, "public"),
        ("resources/list", {}, {"resources"}, "public"),
        ("resources/templates/list", {}, {"resourceTemplates"}, "public"),
    ],
)
def test_modern_results_carry_result_type_server_info_and_caching_hints(
    state: str, method: str, params: dict[str, Any], members: set[str], cache_scope: str
) -> None:
    session = _state(state)
    result = answer_of(session.receive(modern(method, params)))["result"]
    assert members <= result.keys()
    assert result["resultType"] == "complete"
    assert result["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "mcp-suite", "version": "9.9"}}
    assert result["cacheScope"] == cache_scope
    assert isinstance(result["ttlMs"], int)
    assert result["ttlMs"] >= 0


def test_discover_lists_the_modern_and_the_four_handshake_versions() -> None:
    result = answer_of(make_core().receive(modern("server/discover")))["result"]
    assert result["supportedVersions"] == [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ]
    assert result["capabilities"] == {
        "tools": {"listChanged": False},
        "resources": {"listChanged": False, "subscribe": False},
    }
    assert (
        "resources"
        not in answer_of(make_core(resources=False).receive(modern("server/discover")))["result"][
            "capabilities"
        ]
    )


def test_tools_are_listed_in_the_same_order_every_time_in_both_eras() -> None:
    session = initialized()
    orders = [
        [tool["name"] for tool in answer_of(session.receive(frame))["result"]["tools"]]
        for frame in (modern("tools/list"), line("tools/list"), modern("tools/list"))
    ]
    assert orders == [["echo", "sleep"]] * 3


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2026-07-28", "2025-11-25"),  # no handshake exists in 2026-07-28: the latest one is offered
        ("1999-01-01", "2025-11-25"),
        (None, "2025-11-25"),
    ],
)
def test_initialize_negotiates_a_handshake_version_and_adds_no_modern_members(
    requested: str | None, negotiated: str
) -> None:
    session = make_core()
    params: dict[str, Any] = {"capabilities": {}}
    if requested is not None:
        params["protocolVersion"] = requested
    result = answer_of(session.receive(line("initialize", params)))["result"]
    assert result["protocolVersion"] == negotiated
    assert session.legacy_version == negotiated
    assert "resultType" not in result
    assert "_meta" not in result


def test_initialize_with_modern_meta_still_selects_the_handshake_era() -> None:
    session = make_core()
    result = answer_of(session.receive(line("initialize", {"protocolVersion": "2025-06-18", "_meta": META})))
    assert result["result"]["protocolVersion"] == "2025-06-18"


def test_modern_requests_leave_no_state_behind() -> None:
    session = make_core()
    for frame in (modern("server/discover"), modern("tools/list"), modern("resources/list")):
        answer_of(session.receive(frame))
    assert session.legacy_version is None
    # A request without the protocol fields is still a handshake-era one, and the handshake is due.
    assert answer_of(session.receive(line("tools/list")))["error"]["code"] == INVALID_REQUEST
    # And an initialize after modern requests is the first one.
    answer_of(session.receive(line("initialize", {"protocolVersion": "2025-03-26"})))
    assert session.legacy_version == "2025-03-26"


@pytest.mark.parametrize("state", ["fresh", "initialized"])
def test_ping_answers_at_any_time_in_the_handshake_era(state: str) -> None:
    message = answer_of(_state(state).receive(line("ping", request_id="p")))
    assert message == {"jsonrpc": "2.0", "id": "p", "result": {}}


def test_legacy_meta_without_the_protocol_fields_is_a_handshake_era_request() -> None:
    message = answer_of(initialized().receive(line("tools/list", {"_meta": {"progressToken": 3}})))
    assert "resultType" not in message["result"]


# -- unreadable ids, per era -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "id_member"),
    [
        (None, "omitted"),
        ("2025-11-25", "omitted"),
        ("2025-06-18", "null"),
        ("2025-03-26", "null"),
        ("2024-11-05", "null"),
    ],
)
def test_an_error_for_an_unreadable_id_follows_the_schema_of_the_era(
    version: str | None, id_member: str
) -> None:
    session = make_core() if version is None else initialized(version)
    message = answer_of(session.receive(b'{"jsonrpc":"2.0","id":null,"method":"ping"}'))
    assert message["error"]["code"] == INVALID_REQUEST
    if id_member == "omitted":
        assert "id" not in message
    else:
        assert message["id"] is None


@pytest.mark.parametrize(
    ("head", "answer_id"),
    [
        (b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"a":"', 17),
        (b' {"id" : "x\\"y","method"', 'x"y'),
        (b'{"params":{"id":1,"list":[{"id":2}],"s":"}"},"id":3,"pad":"', 3),
        (b'{"jsonrpc":"2.0","method":"tools/call","params":{"a":"', None),
        (b'{"id":1.5,', None),
        (b'{"id":12', None),  # cut off: the id may go on
        (b'[{"id":1}', None),
    ],
)
def test_an_oversized_line_is_answered_with_the_id_found_in_its_head(head: bytes, answer_id: Any) -> None:
    answer = make_core().receive_oversized(OversizedFrame(2_000_000, head))
    message = answer_of(answer)
    assert message["error"]["code"] == INVALID_REQUEST
    assert message["error"]["data"]["max_frame_bytes"] == 1_048_576
    if answer_id is None:
        assert "id" not in message
    else:
        assert message["id"] == answer_id


@pytest.mark.parametrize(
    ("head", "tail", "answer_id"),
    [
        (b'{"jsonrpc":"2.0","method":"tools/call","params":{"a":"', b'xxxx"},"id":9}', 9),  # id last
        (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"a":"', b'xxxx"},"id":9}', 4),  # head wins
        (b'{"jsonrpc":"2.0","method":"tools/call","params":{"a":"', b'xxxx"}}', None),
    ],
)
def test_an_oversized_line_is_answered_with_the_id_found_in_its_tail_when_its_head_has_none(
    head: bytes, tail: bytes, answer_id: Any
) -> None:
    # The TypeScript SDKs write `id` last: without it the client waits out its own timeout.
    answer = make_core().receive_oversized(OversizedFrame(2_000_000, head, tail))
    message = answer_of(answer)
    assert message["error"]["code"] == INVALID_REQUEST
    if answer_id is None:
        assert "id" not in message
    else:
        assert message["id"] == answer_id


# -- calls: start, outcome, reply --------------------------------------------------------------


def start(session: core.SessionCore, frame: bytes) -> core.StartCall:
    event = session.receive(frame)
    assert isinstance(event, core.StartCall), event
    return event


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(
    ("outcome", "expect"),
    [
        (core.ToolSucceeded(b'{"text":"hi"}'), "success"),
        (core.CallRaised(AccessDeniedError("no")), "in-band:access-denied"),
        (core.CallInterrupted(deadline_passed=True), "in-band:execution-timeout"),
        (core.CallRaised(InternalServerError("boom")), f"error:{INTERNAL_ERROR}"),
        (core.CallInterrupted(deadline_passed=False), f"error:{INTERNAL_ERROR}"),
    ],
)
def test_what_each_call_outcome_sends_in_each_era(era: str, outcome: core.CallOutcome, expect: str) -> None:
    session = initialized()
    started = start(
        session, modern("tools/call", CALL, 9) if era == "modern" else line("tools/call", CALL, 9)
    )
    assert (started.kind, started.name, started.arguments) == (core.CallKind.TOOL, "echo", {"text": "hi"})
    assert session.in_flight == 1
    answer = session.call_finished(started.key, outcome)
    assert session.in_flight == 0
    message = answer_of(answer)
    assert message["id"] == 9
    kind, _, detail = expect.partition(":")
    if kind == "error":
        assert message["error"]["code"] == int(detail)
        return
    result = message["result"]
    assert ("resultType" in result) == (era == "modern")
    assert ("_meta" in result) == (era == "modern")
    if kind == "success":
        assert result["structuredContent"] == {"text": "hi"}
        assert result["isError"] is False
    else:
        assert result["isError"] is True
        assert slug_of(json.loads(result["content"][0]["text"])) == detail


@pytest.mark.parametrize("frame", [line("tools/call", CALL, 7), modern("tools/call", CALL, 7)])
@pytest.mark.parametrize("cancel_id", [7, "7"])
@pytest.mark.parametrize(
    "outcome", [core.CallInterrupted(deadline_passed=False), core.ToolSucceeded(b'{"text":"hi"}')]
)
def test_a_call_the_client_cancelled_gets_no_response_in_either_era(
    frame: bytes, cancel_id: Any, outcome: core.CallOutcome
) -> None:
    session = initialized()
    started = start(session, frame)
    cancel = json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancel_id}}
    )
    assert session.receive(cancel.encode()) == core.CancelCall(started.key)
    assert session.receive(cancel.encode()) is None  # already cancelled: nothing more to do
    answer = session.call_finished(started.key, outcome)  # even if it finished anyway
    assert answer.frame is None
    assert answer.outcome == "cancelled"
    # Finished ids are ignored.
    assert session.receive(cancel.encode()) is None


def test_a_cancellation_for_an_unknown_id_is_ignored() -> None:
    session = initialized()
    for params in ({"requestId": 5}, {"requestId": True}, {}, {"requestId": [1]}):
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
        assert session.receive(note.encode()) is None


def test_a_call_whose_id_is_in_flight_is_refused_and_the_first_is_undisturbed() -> None:
    session = initialized()
    first = start(session, line("tools/call", CALL, 3))
    assert answer_of(session.receive(modern("tools/call", CALL, 3)))["error"]["code"] == INVALID_REQUEST
    assert session.in_flight == 1
    # 3 and "3" are different requests.
    second = start(session, line("tools/call", CALL, "3"))
    assert second.key != first.key


def test_arguments_the_sanitizer_refuses_are_answered_in_band_without_a_task() -> None:
    session = initialized()
    answer = session.receive(line("tools/call", {"name": "echo", "arguments": {"bad key": 1}}))
    message = answer_of(answer)
    assert message["result"]["isError"] is True
    assert session.in_flight == 0


def test_a_resource_read_in_the_modern_era_is_private_and_immediately_stale() -> None:
    session = make_core()
    started = start(session, modern("resources/read", {"uri": SCHEMA_URI}))
    result = answer_of(session.call_finished(started.key, core.ResourceRead("{}")))["result"]
    assert result["contents"] == [{"uri": SCHEMA_URI, "mimeType": "application/json", "text": "{}"}]
    assert (result["ttlMs"], result["cacheScope"], result["resultType"]) == (0, "private", "complete")


def test_a_resource_read_that_ran_out_of_time_is_an_internal_error() -> None:
    session = initialized()
    started = start(session, line("resources/read", {"uri": SCHEMA_URI}))
    message = answer_of(session.call_finished(started.key, core.CallInterrupted(deadline_passed=True)))
    assert message["error"]["code"] == INTERNAL_ERROR


# -- shutdown ----------------------------------------------------------------------------------


def test_the_first_signal_drains_and_the_second_cancels() -> None:
    session = make_core()
    assert session.signal_received() is core.Shutdown.STOP_READING
    assert not session.stopping
    assert session.signal_received() is core.Shutdown.CANCEL_CALLS
    assert session.stopping


def test_a_signal_during_a_drain_started_by_eof_cancels_at_once() -> None:
    # The SDK clients close stdin, then send SIGTERM: that signal must not wait out the grace.
    session = make_core()
    session.input_ended()
    assert session.signal_received() is core.Shutdown.CANCEL_CALLS


def test_a_deadline_that_fires_during_shutdown_is_a_shutdown_answer() -> None:
    session = initialized()
    started = start(session, line("tools/call", CALL, 1))
    assert session.grace_over() is core.Shutdown.CANCEL_CALLS
    message = answer_of(session.call_finished(started.key, core.CallInterrupted(deadline_passed=True)))
    assert message["error"]["code"] == INTERNAL_ERROR


# -- notifications, responses, warm-up ---------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","method":"notifications/whatever","params":{"_meta":{}}}',
        b'{"jsonrpc":"2.0","id":5,"result":{}}',
        b'{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}}',
    ],
)
def test_notifications_and_client_responses_are_never_answered(frame: bytes) -> None:
    assert make_core().receive(frame) is None


@pytest.mark.parametrize(
    "first",
    [line("initialize", {"protocolVersion": "2025-11-25"}), modern("server/discover"), modern("tools/list")],
)
def test_the_first_answer_that_opens_the_session_asks_for_the_warm_up_once(first: bytes) -> None:
    session = make_core()
    assert answer_of(session.receive(line("ping"))) is not None
    opening = session.receive(first)
    assert isinstance(opening, core.Answer)
    assert opening.warm_up
    later = session.receive(modern("tools/list"))
    assert isinstance(later, core.Answer)
    assert not later.warm_up


def test_events_compare_by_value_and_show_their_members() -> None:
    assert core.CancelCall(("i", 1)) == core.CancelCall(("i", 1))
    assert core.CancelCall(("i", 1)) != core.CancelCall(("s", "1"))
    # two problems (exceptions compare by identity), so two outcomes
    assert core.CallRaised(InternalServerError("x")) != core.CallRaised(InternalServerError("x"))
    failure = InternalServerError("x")
    assert core.CallRaised(failure) == core.CallRaised(failure)
    other: object = core.ToolSucceeded(b"{}")
    assert core.CallRaised(failure) != other
    assert repr(core.CallInterrupted(deadline_passed=True)) == "CallInterrupted(deadline_passed=True)"
