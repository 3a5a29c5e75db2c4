"""Shared data of the session core's tests: a core with two tools and a resource, frames of both
eras, the table of requests that get a JSON-RPC error, and a call."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable
from typing import Any, Final

from mcp_suite.problems import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_suite.protocol import core
from mcp_suite.protocol.catalogue import Ids
from mcp_suite.protocol.mcp import ResourceDescription, ToolDescription
from tests.support.wire import check_line

MODERN: Final = "2026-07-28"
PV: Final = "io.modelcontextprotocol/protocolVersion"
CC: Final = "io.modelcontextprotocol/clientCapabilities"
META: Final = {PV: MODERN, CC: {}}
SCHEMA_URI: Final = "postgres://db/schema"
TOOLS: Final = [
    ToolDescription("echo", "Echo", "Echoes.", {"type": "object"}, {"type": "object"}),
    ToolDescription("sleep", "Sleep", "Sleeps.", {"type": "object"}, {"type": "object"}),
]


SCHEMA: Final = ResourceDescription(
    uri=SCHEMA_URI, name="schema", title="Schema", description="The schema.", mime_type="application/json"
)


def counter() -> Callable[[], int]:
    """1, 2, 3...: the random bits of a table test, which then asserts whole answers."""
    return itertools.count(1).__next__


def counting_ids() -> Ids:
    """The random values of a table test: boundaries 1, 2, 3... (39 digits each), and session ids
    `session-0…01`, `session-0…02`... (43 characters, the form of the server's)."""
    sessions = itertools.count(1)
    return Ids(boundary=counter(), session_id=lambda: f"session-{next(sessions):035d}")


def make_core(*, resources: bool = True, per_caller_lists: bool = False) -> core.SessionCore:
    """A core of the two test tools; without `per_caller_lists` it is built with the core's own
    default, as the stdio transport builds it. Its boundaries count 1, 2, 3..."""
    build = functools.partial(
        core.SessionCore,
        server_name="mcp-suite",
        server_version="9.9",
        tool_names=[tool.name for tool in TOOLS],
        tools=lambda: TOOLS,
        instructions="Use echo, then sleep.",
        resources=[SCHEMA] if resources else [],
        max_frame_bytes=1_048_576,
        max_json_depth=64,
        arg_max_depth=8,
        arg_max_items=1_000,
        call_deadline_s=30,
        draw_boundary=counter(),
    )
    return build(per_caller_lists=True) if per_caller_lists else build()


def line(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def modern(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> bytes:
    return line(method, {**(params or {}), "_meta": META}, request_id)


def answer_of(event: object) -> dict[str, Any]:
    assert isinstance(event, core.Answer), event
    assert event.frame is not None
    return check_line(event.frame)


def initialized(version: str = "2025-11-25") -> core.SessionCore:
    session = make_core()
    answer_of(session.receive(line("initialize", {"protocolVersion": version, "capabilities": {}})))
    return session


# -- requests: (state, frame) -> JSON-RPC error code, or a result ---------------------------------

ERROR_CASES: Final = [
    # the handshake era, before initialize
    ("fresh", line("tools/list"), INVALID_REQUEST),
    ("fresh", line("tools/call", {"name": "echo"}), INVALID_REQUEST),
    ("fresh", line("resources/read", {"uri": SCHEMA_URI}), INVALID_REQUEST),
    ("fresh", line("no/such"), METHOD_NOT_FOUND),
    ("fresh", line("resources/subscribe", {"uri": SCHEMA_URI}), METHOD_NOT_FOUND),
    # server/discover is modern only: without the protocol fields it is a malformed modern request
    ("fresh", line("server/discover"), INVALID_PARAMS),
    ("fresh", line("server/discover", {"_meta": {"progressToken": 1}}), INVALID_PARAMS),
    ("fresh", line("server/discover", {"_meta": "2026-07-28"}), INVALID_PARAMS),
    # modern requests that are malformed or ask for a version not served per request
    ("fresh", line("tools/list", {"_meta": {PV: MODERN}}), INVALID_PARAMS),
    ("fresh", line("tools/list", {"_meta": {CC: {}}}), INVALID_PARAMS),
    ("fresh", line("tools/list", {"_meta": {PV: 20260728, CC: {}}}), INVALID_PARAMS),
    ("fresh", line("tools/list", {"_meta": {PV: MODERN, CC: []}}), INVALID_PARAMS),
    ("fresh", line("tools/list", {"_meta": {PV: "1900-01-01", CC: {}}}), UNSUPPORTED_PROTOCOL_VERSION),
    ("fresh", line("tools/list", {"_meta": {PV: "2025-11-25", CC: {}}}), UNSUPPORTED_PROTOCOL_VERSION),
    # methods the 2026-07-28 revision removed, and unknown ones
    ("fresh", modern("ping"), METHOD_NOT_FOUND),
    ("fresh", modern("logging/setLevel", {"level": "info"}), METHOD_NOT_FOUND),
    ("fresh", modern("resources/subscribe", {"uri": SCHEMA_URI}), METHOD_NOT_FOUND),
    ("fresh", modern("no/such"), METHOD_NOT_FOUND),
    ("fresh", modern("tools/call", {"name": "nope"}), INVALID_PARAMS),
    ("fresh", modern("tools/call", {"name": ""}), INVALID_PARAMS),
    ("fresh", modern("resources/read", {"uri": "file:///etc/passwd"}), INVALID_PARAMS),
    ("fresh", modern("tools/list", {"cursor": "page-2"}), INVALID_PARAMS),
    # after the handshake: legacy rules, and modern requests beside them
    ("initialized", line("initialize", {"protocolVersion": "2025-11-25"}), INVALID_REQUEST),
    ("initialized", line("server/discover"), INVALID_PARAMS),
    ("initialized", line("tools/call", {"name": "nope"}), INVALID_PARAMS),
    # server/resources "Error Handling": -32002 up to 2025-11-25 (the 2026-07-28 one above: -32602)
    ("initialized", line("resources/read", {"uri": "nope"}), RESOURCE_NOT_FOUND),
    ("initialized", line("resources/read", {"uri": 5}), INVALID_PARAMS),
    ("initialized", modern("ping"), METHOD_NOT_FOUND),
    ("initialized", line("tools/list", {"_meta": {PV: "2025-11-25", CC: {}}}), UNSUPPORTED_PROTOCOL_VERSION),
    # envelopes
    ("fresh", b'{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}', INVALID_REQUEST),
    ("fresh", b'{"jsonrpc":"2.0","id":1,"method":"ping","error":{"code":1,"message":"x"}}', INVALID_REQUEST),
    ("fresh", b"{oops", PARSE_ERROR),
]


CALL: Final = {"name": "echo", "arguments": {"text": "hi"}}
