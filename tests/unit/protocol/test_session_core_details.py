"""The session core's answers, exactly: each refusal's detail and the members the audit reads
(id, method, outcome, problem), the line that was too long, the call deadline's words, and which
ids a cancellation matches."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from mcp_suite.problems import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    AccessDeniedError,
    DatabaseUnavailableError,
    InternalServerError,
    InvalidParamsError,
    ProblemError,
    ShuttingDownError,
)
from mcp_suite.protocol import core
from mcp_suite.protocol.framing import OversizedFrame
from mcp_suite.protocol.jsonrpc import JsonRpcError, Request, decode_message
from mcp_suite.protocol.mcp import ResourceDescription
from tests.support.session_core import (
    CALL,
    CC,
    ERROR_CASES,
    MODERN,
    PV,
    SCHEMA_URI,
    answer_of,
    counter,
    initialized,
    line,
    make_core,
    modern,
)
from tests.support.wire import slug_of

KEYS: Final = f"every request carries {PV!r} and {CC!r} in params._meta."


def _answer(session: core.SessionCore, frame: bytes) -> tuple[core.Answer, dict[str, Any]]:
    event = session.receive(frame)
    assert isinstance(event, core.Answer), event
    return event, answer_of(event)


@pytest.mark.parametrize(("state", "frame", "code"), ERROR_CASES)
def test_every_error_answer_names_its_request_for_the_client_and_for_the_audit(
    state: str, frame: bytes, code: int
) -> None:
    session = make_core()
    if state == "initialized":
        _answer(session, line("initialize", {"protocolVersion": "2025-11-25"}))
    answer, message = _answer(session, frame)
    try:
        request = decode_message(frame)
    except JsonRpcError as exc:  # refused by the guard: no method to name, the id if it found one
        assert (answer.request_id, answer.method) == (exc.request_id, "")
    else:
        assert isinstance(request, Request)
        assert message["id"] == request.id == answer.request_id
        assert answer.method == request.method
    assert answer.outcome == "error"
    assert answer.problem is not None
    assert message["error"]["data"]["detail"] == answer.problem.detail
    assert message["error"]["code"] == code


@pytest.mark.parametrize(
    ("meta", "detail"),
    [
        ("x", f"A {MODERN} request needs params._meta with the per-request protocol fields: {KEYS}"),
        ({PV: MODERN}, f"A {MODERN} request lacks {CC!r}: {KEYS}"),
        ({PV: 1, CC: {}}, f"A {MODERN} request has {PV!r} that is not a string: {KEYS}"),
        ({PV: MODERN, CC: []}, f"A {MODERN} request has {CC!r} that is not an object: {KEYS}"),
    ],
)
def test_a_malformed_modern_request_says_what_its_meta_lacks(meta: Any, detail: str) -> None:
    answer, message = _answer(make_core(), line("server/discover", {"_meta": meta}, 4))
    assert message["id"] == 4
    error = message["error"]
    assert (error["code"], error["data"]["detail"], error["data"]["invalid_params"]) == (
        INVALID_PARAMS,
        detail,
        ["_meta"],
    )
    assert answer.problem is not None
    assert answer.problem.jsonrpc_code == INVALID_PARAMS
    assert (error["data"]["status"], error["data"]["code"]) == (400, "MCP_MALFORMED_META")


def test_a_modern_request_lacking_both_fields_names_both() -> None:
    _, message = _answer(make_core(), line("tools/list", {"_meta": {CC: {}, "other": 1}}))
    assert message["error"]["data"]["detail"] == f"A {MODERN} request lacks {PV!r}: {KEYS}"
    both = {"_meta": {"io.modelcontextprotocol/other": 1}}
    _, message = _answer(make_core(), line("server/discover", both))
    assert message["error"]["data"]["detail"] == f"A {MODERN} request lacks {PV!r} and {CC!r}: {KEYS}"


def test_an_unsupported_version_is_echoed_cut_to_64_characters() -> None:
    version = "9" * 100
    _, message = _answer(make_core(), line("tools/list", {"_meta": {PV: version, CC: {}}}))
    assert message["error"]["data"]["detail"] == (
        f"This server does not serve protocol version {'9' * 63 + '…'!r} per request; it serves "
        f"{MODERN} so, and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 through initialize."
    )


def test_an_oversized_line_says_the_limit_and_what_to_do() -> None:
    answer = make_core().receive_oversized(OversizedFrame(2_000_000, b'{"id":5,'))
    message = answer_of(answer)
    data = message["error"]["data"]
    assert data["detail"] == (
        "The message is longer than 1048576 bytes and was discarded; "
        "send one JSON-RPC message per line, each at most that long."
    )
    assert data["metadata"] == {"max_frame_bytes": 1_048_576}
    assert (answer.request_id, answer.method, answer.outcome) == (5, "", "error")
    assert answer.problem is not None
    assert answer.problem.jsonrpc_code == INVALID_REQUEST


def _core(deadline_s: float = 30, *, max_json_depth: int = 64) -> core.SessionCore:
    session = core.SessionCore(
        server_name="s",
        server_version="1",
        tool_names=["echo"],
        tools=list,
        instructions="",
        max_frame_bytes=1_000,
        max_json_depth=max_json_depth,
        arg_max_depth=8,
        arg_max_items=100,
        call_deadline_s=deadline_s,
        draw_boundary=counter(),
    )
    _answer(session, line("initialize", {"protocolVersion": "2025-11-25"}))
    return session


# (settings refuse a deadline that is not finite: the core is only ever given a finite one)
@pytest.mark.parametrize(("deadline_s", "within"), [(2.5, "2.5 s"), (30, "30 s"), (0.001, "0.001 s")])
def test_a_call_past_its_deadline_says_the_deadline(deadline_s: float, within: str) -> None:
    session = _core(deadline_s)
    started = session.receive(line("tools/call", CALL, 8))
    assert isinstance(started, core.StartCall)
    answer = session.call_finished(started.key, core.CallInterrupted(deadline_passed=True))
    problem = json.loads(answer_of(answer)["result"]["content"][0]["text"])
    assert problem["detail"] == f"The call did not finish within {within}; ask for less work."
    assert problem["metadata"] == {"deadline_s": deadline_s}
    assert answer.problem is not None
    assert answer.problem.detail == problem["detail"]


def test_a_failed_call_answers_with_its_own_problem() -> None:
    session = _core(30)
    started = session.receive(line("tools/call", CALL, 8))
    assert isinstance(started, core.StartCall)
    failure = InternalServerError("The tool broke.")
    answer = session.call_finished(started.key, core.CallRaised(failure))
    assert answer_of(answer)["error"]["code"] == INTERNAL_ERROR
    assert answer.problem is failure


@pytest.mark.parametrize(
    ("call_id", "cancel_id", "cancels"),
    [
        ("7", 7, True),
        ("abc", "abc", True),
        (-7, "-7", True),
        (7, " 7 ", True),
        (1_234_567_890_123_456_789, "1234567890123456789", True),  # 19 digits: still read
        (10**19, "10000000000000000000", False),  # 20 digits: not read as a number
        ("ab", "abc", False),
        (7, "x7", False),
        (7, "-", False),
        (7, "a", False),
        (7, "", False),
        (1, True, False),
    ],
)
def test_a_cancellation_matches_an_id_in_either_form(call_id: Any, cancel_id: Any, cancels: bool) -> None:
    session = _core(30)
    started = session.receive(line("tools/call", CALL, call_id))
    assert isinstance(started, core.StartCall)
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancel_id}}
    expected = core.CancelCall(started.key) if cancels else None
    assert session.receive(json.dumps(note).encode()) == expected


def test_an_event_shows_every_member_in_order() -> None:
    started = _core(30).receive(modern("tools/call", CALL, 3))
    assert repr(started) == (
        "StartCall(key=('i', 3), request_id=3, kind=<CallKind.TOOL: 'tools/call'>, name='echo', "
        "arguments={'text': 'hi'}, trace_parent=None, protocol_version='2026-07-28', "
        "asking=CallInput(modern=True, capabilities={}, retry=Retry(responses={}, state=None)), "
        "progress_token=None)"
    )


# -- what each finished call answers and hands the audit ---------------------------------------

_SHUTDOWN = (
    "The server shut down before this call finished; it was cancelled."
    " Send it again once the server is running."
)
_READ_LATE = "The resource could not be read within the call deadline."


@pytest.mark.parametrize(
    ("method", "outcome", "stopping", "expect"),
    [
        ("tools/call", core.ToolSucceeded(b'{"text":"hi"}'), False, ("ok", "result", None)),
        ("resources/read", core.ResourceRead("{}"), False, ("ok", "result", None)),
        (
            "tools/call",
            core.CallRaised(AccessDeniedError("refused")),
            False,
            ("error", "isError", "refused"),
        ),
        (
            "tools/call",
            core.CallRaised(InternalServerError("broke")),
            False,
            ("error", INTERNAL_ERROR, "broke"),
        ),
        ("tools/call", core.CallInterrupted(deadline_passed=True), False, ("error", "isError", None)),
        (
            "resources/read",
            core.CallInterrupted(deadline_passed=True),
            False,
            ("error", INTERNAL_ERROR, _READ_LATE),
        ),
        (
            "tools/call",
            core.CallInterrupted(deadline_passed=True),
            True,
            ("error", INTERNAL_ERROR, _SHUTDOWN),
        ),
        (
            "tools/call",
            core.CallInterrupted(deadline_passed=False),
            True,
            ("error", INTERNAL_ERROR, _SHUTDOWN),
        ),
        (
            "resources/read",
            core.CallInterrupted(deadline_passed=False),
            True,
            ("error", INTERNAL_ERROR, _SHUTDOWN),
        ),
    ],
)
def test_each_finished_call_answers_and_hands_the_audit_its_id_method_tool_and_arguments(
    method: str, outcome: core.CallOutcome, stopping: bool, expect: tuple[str, Any, str | None]
) -> None:
    session = initialized()
    params = CALL if method == "tools/call" else {"uri": SCHEMA_URI}
    started = session.receive(line(method, params, 7))
    assert isinstance(started, core.StartCall)
    if stopping:
        session.signal_received()
        session.signal_received()
    answer = session.call_finished(started.key, outcome)
    status, where, detail = expect
    assert (answer.request_id, answer.method, answer.outcome) == (7, method, status)
    assert answer.tool == ("echo" if method == "tools/call" else None)
    assert answer.arguments == (CALL["arguments"] if method == "tools/call" else None)
    message = answer_of(answer)
    assert message["id"] == 7
    if where == "result":
        assert answer.problem is None
        assert "result" in message
    elif where == "isError":
        assert message["result"]["isError"] is True
        assert answer.problem is not None
    else:
        assert message["error"]["code"] == where
        assert answer.problem is not None
    if detail is not None:
        assert answer.problem is not None
        assert answer.problem.detail == detail


def test_a_cancelled_call_hands_the_audit_its_id_method_tool_and_arguments() -> None:
    session = initialized()
    started = session.receive(line("tools/call", CALL, 7))
    assert isinstance(started, core.StartCall)
    cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    session.receive(cancel.encode())
    answer = session.call_finished(started.key, core.CallInterrupted(deadline_passed=False))
    assert answer.frame is None
    assert (answer.request_id, answer.method, answer.outcome, answer.problem) == (
        7,
        "tools/call",
        "cancelled",
        None,
    )
    assert (answer.tool, answer.arguments) == ("echo", CALL["arguments"])


def test_a_call_cut_off_by_the_shutdown_tells_the_client_it_may_send_it_again() -> None:
    session = initialized()
    started = session.receive(line("tools/call", CALL, 7))
    assert isinstance(started, core.StartCall)
    session.signal_received()
    session.signal_received()
    answer = session.call_finished(started.key, core.CallInterrupted(deadline_passed=False))
    data = answer_of(answer)["error"]["data"]
    assert (data["code"], data["metadata"]) == ("MCP_SHUTTING_DOWN", {"retryable": True})


def test_a_call_the_transport_saw_withdrawn_gets_no_answer_and_is_audited_as_cancelled() -> None:
    # Streamable HTTP (2026-07-28): a closed response stream is the cancellation.
    session = make_core()
    started = session.receive(modern("tools/call", CALL, 9))
    assert isinstance(started, core.StartCall)
    assert session.withdraw(started.key) == core.CancelCall(started.key)
    assert session.withdraw(started.key) is None  # once
    assert session.withdraw(core.id_key(10)) is None  # unknown
    answer = session.call_finished(started.key, core.CallInterrupted(deadline_passed=False))
    assert (answer.frame, answer.outcome, answer.tool) == (None, "cancelled", "echo")


def test_lists_that_depend_on_the_caller_are_cached_privately() -> None:
    # server/utilities/caching: a "public" list may be shared across tokens.
    shared = answer_of(make_core().receive(modern("tools/list")))
    assert shared["result"]["cacheScope"] == "public"
    per_caller = make_core(per_caller_lists=True)
    for method in ("tools/list", "resources/list"):
        assert answer_of(per_caller.receive(modern(method)))["result"]["cacheScope"] == "private"


def test_the_lists_of_the_handshake_era_carry_no_cache_fields() -> None:
    # The cache members are the 2026-07-28 revision's; a session of the handshake era never sent them.
    session = initialized()
    listed = answer_of(session.receive(line("resources/list", request_id=2)))["result"]
    assert [r["uri"] for r in listed.pop("resources")] == [SCHEMA_URI]
    assert listed == {}
    templates = answer_of(session.receive(line("resources/templates/list", request_id=3)))["result"]
    assert templates == {"resourceTemplates": []}


# -- the answers given at once, their words and the members the audit reads ----------------------

_CAPABILITIES: Final = {"tools": {"listChanged": False}}
_RESOURCES: Final = {"resources": {"listChanged": False, "subscribe": False}}


@pytest.mark.parametrize("resources", [True, False])
def test_initialize_and_discover_give_the_server_s_name_instructions_and_capabilities(
    resources: bool,
) -> None:
    session = make_core(resources=resources)
    capabilities = {**_CAPABILITIES, **(_RESOURCES if resources else {})}
    _, message = _answer(session, line("initialize", {"protocolVersion": "2025-06-18"}))
    assert message["result"] == {
        "protocolVersion": "2025-06-18",
        # logging/setLevel is served in the handshake eras only (2026-07-28 deprecates logging)
        "capabilities": {**capabilities, "logging": {}},
        "serverInfo": {"name": "mcp-suite", "version": "9.9"},
        "instructions": "Use echo, then sleep.",
    }
    result = answer_of(session.receive(modern("server/discover")))["result"]
    assert (result["capabilities"], result["instructions"]) == (capabilities, "Use echo, then sleep.")


def test_each_answer_given_at_once_hands_the_audit_its_id_method_and_outcome() -> None:
    session = make_core()
    for frame, method, warm_up in [
        (line("ping", request_id="a"), "ping", False),
        (modern("tools/list", request_id="b"), "tools/list", True),  # the first that opens the session
        (line("initialize", {"protocolVersion": "2025-11-25"}, "c"), "initialize", False),
        (line("tools/list", request_id="d"), "tools/list", False),
        (modern("resources/templates/list", request_id="e"), "resources/templates/list", False),
    ]:
        answer, message = _answer(session, frame)
        assert "result" in message
        assert message["id"] == answer.request_id == json.loads(frame)["id"]
        assert (answer.method, answer.outcome, answer.problem) == (method, "ok", None)
        assert (answer.tool, answer.arguments, answer.warm_up) == (None, None, warm_up)


def test_a_second_initialize_is_refused_and_the_first_version_stays() -> None:
    session = initialized("2025-06-18")
    answer, message = _answer(session, line("initialize", {"protocolVersion": "2025-11-25"}, 2))
    assert (message["error"]["code"], message["error"]["data"]["detail"]) == (
        INVALID_REQUEST,
        "The session is already initialized.",
    )
    assert (answer.request_id, answer.method) == (2, "initialize")
    assert session.legacy_version == "2025-06-18"


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list", "resources/read"])
def test_a_server_without_resources_knows_no_resource_method_in_either_era(method: str) -> None:
    session = make_core(resources=False)
    _answer(session, line("initialize", {"protocolVersion": "2025-11-25"}))
    for frame in (line(method, {"uri": SCHEMA_URI}), modern(method, {"uri": SCHEMA_URI})):
        _, message = _answer(session, frame)
        assert (message["error"]["code"], message["error"]["data"]["detail"]) == (
            METHOD_NOT_FOUND,
            f"The method {method!r} does not exist on this server.",
        )


def test_the_nesting_limit_is_the_session_s_own() -> None:
    session = _core(max_json_depth=4)
    # the message, params, and three lists: five levels
    answer, message = _answer(session, line("ping", {"a": [[[1]]]}, 3))
    assert (message["error"]["code"], message["error"]["data"]["detail"]) == (
        PARSE_ERROR,
        "The message nests deeper than 4 levels.",
    )
    assert answer.method == ""
    assert _answer(session, line("ping", {"a": [[1]]}))[1]["result"] == {}


def test_a_call_whose_id_is_in_flight_is_refused_with_its_id_and_what_to_do() -> None:
    session = initialized()
    assert isinstance(session.receive(line("tools/call", CALL, 3)), core.StartCall)
    answer, message = _answer(session, modern("tools/call", CALL, 3))
    assert message["id"] == 3
    assert message["error"]["data"]["detail"] == (
        "A call with this id is still running; use a new id for each request."
    )
    assert (answer.request_id, answer.method, answer.outcome) == (3, "tools/call", "error")


@pytest.mark.parametrize(
    ("params", "code", "slug"),
    [
        ({"uri": "postgres://db/other"}, RESOURCE_NOT_FOUND, "not-found"),  # legacy: -32002
        ({"uri": 5}, INVALID_PARAMS, "validation-error"),
        ({}, INVALID_PARAMS, "validation-error"),
    ],
)
def test_a_read_of_an_unknown_resource_names_the_uri_parameter(
    params: dict[str, Any], code: int, slug: str
) -> None:
    answer, message = _answer(initialized(), line("resources/read", params, 6))
    error = message["error"]
    assert (error["code"], error["data"]["detail"], error["data"]["invalid_params"]) == (
        code,
        'resources/read needs the "uri" of a resource that resources/list shows.',
        ["uri"],
    )
    assert error["data"]["type"].endswith(slug)
    assert answer.problem is not None
    assert answer.problem.jsonrpc_code == code
    # the code the frame carries, for the transport that maps it to an HTTP status
    assert answer.error_code == code
    assert (answer.request_id, answer.method, answer.tool) == (6, "resources/read", None)


def test_a_resource_read_starts_with_its_uri_and_no_arguments() -> None:
    started = initialized().receive(modern("resources/read", {"uri": SCHEMA_URI}, 5))
    assert started == core.StartCall(
        ("i", 5), 5, core.CallKind.RESOURCE, SCHEMA_URI, {}, protocol_version=MODERN
    )


def test_a_call_hands_the_runtime_its_meta_traceparent_and_nothing_else_of_meta() -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    meta = {PV: MODERN, CC: {}, "traceparent": parent}
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}
    started = _core(30).receive(line("tools/call", params, 4))
    assert isinstance(started, core.StartCall)
    assert (started.trace_parent, started.protocol_version) == (parent, MODERN)
    meta["traceparent"] = "0" * 128  # the longest string still handed on
    started = _core(30).receive(line("tools/call", params, 5))
    assert isinstance(started, core.StartCall)
    assert started.trace_parent == "0" * 128
    meta["traceparent"] = "0" * 129  # longer than any traceparent: not one
    started = _core(30).receive(line("tools/call", params, 6))
    assert isinstance(started, core.StartCall)
    assert started.trace_parent is None


def test_a_call_of_the_handshake_era_starts_with_the_version_it_negotiated() -> None:
    started = initialized("2025-06-18").receive(line("tools/call", {"name": "echo", "arguments": {}}, 7))
    assert isinstance(started, core.StartCall)
    assert (started.trace_parent, started.protocol_version) == (None, "2025-06-18")


def test_an_unknown_tool_hands_the_audit_its_name() -> None:
    answer, message = _answer(initialized(), line("tools/call", {"name": "nope", "arguments": {}}, 2))
    assert (message["id"], message["error"]["code"]) == (2, INVALID_PARAMS)
    assert (answer.request_id, answer.method, answer.outcome, answer.tool) == (
        2,
        "tools/call",
        "error",
        "nope",
    )
    assert answer.problem is not None
    assert answer.problem.slug == slug_of(message["error"]["data"])


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_arguments_the_sanitizer_refuses_are_answered_in_the_era_and_audited_with_the_call(era: str) -> None:
    params = {"name": "echo", "arguments": {"bad key": 1}}
    frame = modern("tools/call", params, 4) if era == "modern" else line("tools/call", params, 4)
    answer, message = _answer(initialized(), frame)
    result = message["result"]
    assert (message["id"], result["isError"]) == (4, True)
    assert answer.problem is not None
    assert json.loads(result["content"][0]["text"])["detail"] == answer.problem.detail
    assert (answer.request_id, answer.method, answer.outcome) == (4, "tools/call", "error")
    assert (answer.tool, answer.arguments) == ("echo", {"bad key": 1})
    if era == "modern":
        assert (result["resultType"], result["_meta"]) == (
            "complete",
            {"io.modelcontextprotocol/serverInfo": {"name": "mcp-suite", "version": "9.9"}},
        )
    else:
        assert "resultType" not in result
        assert "_meta" not in result


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (
            core.CallRaised(InvalidParamsError("Asked wrongly.")),
            INVALID_PARAMS,
        ),
        (core.CallRaised(ShuttingDownError("The server is stopping.")), INTERNAL_ERROR),
    ],
)
def test_a_call_that_fails_travels_with_its_problem_s_own_json_rpc_code(
    outcome: core.CallRaised, code: int
) -> None:
    session = _core()
    started = session.receive(line("tools/call", CALL, 8))
    assert isinstance(started, core.StartCall)
    answer = session.call_finished(started.key, outcome)
    message = answer_of(answer)
    assert (message["id"], message["error"]["code"]) == (8, code)
    problem: ProblemError = outcome.problem
    assert answer.problem is problem
    assert message["error"]["data"]["detail"] == problem.detail


@pytest.mark.parametrize(
    ("method", "problem", "travels"),
    [
        ("tools/call", AccessDeniedError("Refused."), "isError"),
        ("tools/call", InvalidParamsError("Asked wrongly."), INVALID_PARAMS),
        # In-band, so that the model reads it (issue 53): an outage is a tool result it can act on.
        ("tools/call", DatabaseUnavailableError("The database is down."), "isError"),
        ("resources/read", DatabaseUnavailableError("The database is down."), INTERNAL_ERROR),
        ("resources/read", InvalidParamsError("Asked wrongly."), INVALID_PARAMS),
    ],
)
def test_the_core_picks_a_raised_problem_s_channel_from_its_class_in_band_only_for_a_tool(
    method: str, problem: ProblemError, travels: str | int
) -> None:
    session = initialized()
    params = CALL if method == "tools/call" else {"uri": SCHEMA_URI}
    started = session.receive(line(method, params, 7))
    assert isinstance(started, core.StartCall)
    answer = session.call_finished(started.key, core.CallRaised(problem))
    message = answer_of(answer)
    if travels == "isError":
        assert message["result"]["isError"] is True
        assert json.loads(message["result"]["content"][0]["text"])["detail"] == problem.detail
    else:
        assert (message["error"]["code"], message["error"]["data"]["detail"]) == (travels, problem.detail)
    assert (answer.outcome, answer.problem) == ("error", problem)


def test_without_a_listing_filter_every_resource_is_listed() -> None:
    listed = answer_of(make_core().receive(modern("resources/list")))["result"]["resources"]
    assert [r["uri"] for r in listed] == [SCHEMA_URI]


def test_a_resource_not_listed_to_a_caller_is_still_read_through_a_call() -> None:
    """The HTTP transport lists a caller only the resources its scopes allow, and answers a read
    of another as it answers a tool call it may not make (403 naming the scope): so the core keeps
    every resource readable and filters the list alone."""
    schema = ResourceDescription(
        uri=SCHEMA_URI, name="schema", title="S", description="d", mime_type="application/json"
    )
    other = ResourceDescription(
        uri="notes://x", name="notes", title="N", description="d", mime_type="text/plain"
    )
    session = core.SessionCore(
        server_name="s",
        server_version="1",
        tool_names=[],
        tools=list,
        instructions="",
        resources=[schema, other],
        resources_listed=lambda uri: uri == "notes://x",
        max_frame_bytes=1_000,
        max_json_depth=64,
        arg_max_depth=8,
        arg_max_items=100,
        call_deadline_s=30,
        draw_boundary=counter(),
    )
    listed = answer_of(session.receive(modern("resources/list")))["result"]["resources"]
    assert [r["uri"] for r in listed] == ["notes://x"]
    start = session.receive(modern("resources/read", {"uri": SCHEMA_URI}, request_id=2))
    assert isinstance(start, core.StartCall)
    assert (start.kind, start.name) == (core.CallKind.RESOURCE, SCHEMA_URI)
