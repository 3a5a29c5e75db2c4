"""The wire contract through a whole session: the guard's codes, the error table, tools/list, ASCII output.

Every line read here has also passed `check_line` (tests/support/wire.py): ASCII-only JSON on one line,
problem documents with every member, and an error code the mapping table allows for the problem type.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import trio

from mcp_suite.asking import current_rounds
from mcp_suite.lazy import Lazy
from mcp_suite.problems import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    WIRE_CODES,
)
from mcp_suite.protocol import mrtr
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.settings import MAX_FRAME_BYTES, Settings
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.registry import ToolOpener
from tests.support.harness import (
    TEST_SCOPE,
    TRANSPORTS,
    Harness,
    NoArgs,
    NoResult,
    Transport,
    open_session,
    refused_resource_opener,
)
from tests.support.wire import HTTP_REFUSALS, slug_of

_DEEP = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b'{"a":' * 70 + b"1" + b"}" * 70 + b"}"

# (line, code, id the answer must carry)
GUARD_CASES: list[tuple[bytes, int, Any]] = [
    (b"{not json", PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"', PARSE_ERROR, None),
    (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"p\xffing"}', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}', PARSE_ERROR, None),
    (_DEEP, PARSE_ERROR, None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', INVALID_REQUEST, None),
    (b"[]", INVALID_REQUEST, None),
    (b"42", INVALID_REQUEST, None),
    (b'{"jsonrpc":"1.0","id":3,"method":"ping"}', INVALID_REQUEST, 3),
    (b'{"id":"s","method":"ping"}', INVALID_REQUEST, "s"),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":4,"method":""}', INVALID_REQUEST, 4),
    (b'{"jsonrpc":"2.0","id":5,"method":7}', INVALID_REQUEST, 5),
    (b'{"jsonrpc":"2.0","id":6,"method":"ping","params":[1]}', INVALID_REQUEST, 6),
    (b'{"jsonrpc":"2.0","id":7}', INVALID_REQUEST, 7),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"pi\x01ng"}', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":1e3,"method":"ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":8,"method":"no/such"}', METHOD_NOT_FOUND, 8),
    (b'{"jsonrpc":"2.0","id":-8,"method":"no/such"}', METHOD_NOT_FOUND, -8),
    (b'{"jsonrpc":"2.0","id":10000000000000000000000000000,"method":"x"}', METHOD_NOT_FOUND, 10**28),
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"x\\udfff"}', METHOD_NOT_FOUND, "\ud800"),
    (b'{"jsonrpc":"2.0","id":9,"method":"p\\u00efng\\u2028"}', METHOD_NOT_FOUND, 9),
]


@pytest.mark.parametrize(("line", "code", "answer_id"), GUARD_CASES)
async def test_malformed_lines_get_the_right_code_and_the_session_goes_on(
    line: bytes, code: int, answer_id: Any
) -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            await h.send_raw(line + b"\n")
            response = await h.recv()
            assert response["error"]["code"] == code
            if answer_id is None:
                # The 2025-11-25 schema lets an error for an unreadable id leave `id` out; null fails it.
                assert "id" not in response
            else:
                assert response["id"] == answer_id
                assert type(response["id"]) is type(answer_id)
            assert (await h.request("ping"))["result"] == {}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
async def test_an_unreadable_id_is_null_in_versions_whose_schema_requires_an_id(version: str) -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize(version)
            await h.send_raw(b"{not json\n")
            response = await h.recv()
            assert response["error"]["code"] == PARSE_ERROR
            assert "id" in response
            assert response["id"] is None


async def test_an_unreadable_id_is_left_out_before_any_initialize() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.send_raw(b"[1]\n")
            response = await h.recv()
            assert response["error"]["code"] == INVALID_REQUEST
            assert "id" not in response


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_oversized_line_is_dropped_while_streaming_and_the_next_line_is_served(
    transport: Transport,
) -> None:
    # The one-byte transport would take minutes for a megabyte: it gets a short limit instead.
    limit = 4_096 if transport == "onebyte" else MAX_FRAME_BYTES
    with trio.fail_after(60):
        async with open_session(transport=transport, max_frame_bytes=limit) as h:
            await h.initialize()
            await h.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"')
            sent = 0
            chunk = b"y" * min(65_536, limit)
            while sent <= 2 * limit:
                await h.send_raw(chunk)
                sent += len(chunk)
            await h.send_raw(b'"}}\n{"jsonrpc":"2.0","id":"next","method":"ping"}\n')
            refused = await h.recv()
            assert refused["id"] == 1  # read from the line's first bytes, not from a buffered line
            assert refused["error"]["code"] == INVALID_REQUEST
            data = refused["error"]["data"]
            assert slug_of(data) == "invalid-request"
            assert data["max_frame_bytes"] == limit  # docs/wire.md
            assert (await h.recv()) == {"jsonrpc": "2.0", "id": "next", "result": {}}


@pytest.mark.parametrize(
    ("head", "answer_id"),
    [
        (b'{"jsonrpc":"2.0","id":"late-\\"quote","method":"tools/call","params":{"pad":"', 'late-"quote'),
        (b'{"jsonrpc":"2.0","method":"ping","params":{"x":[1,{"id":5}]},"id":-7,"more":"', -7),
        # the id comes last, as the TypeScript SDKs write it: the line's last bytes have it
        (b'{"jsonrpc":"2.0","method":"ping","params":{"pad":"', 99),
        # no usable id at the start (true is not an id): the last member's is taken
        (b'{"jsonrpc":"2.0","id":true,"pad":"', 99),
    ],
)
async def test_an_oversized_line_is_answered_with_the_id_of_its_first_or_last_bytes(
    head: bytes, answer_id: Any
) -> None:
    with trio.fail_after(30):
        async with open_session(max_frame_bytes=4_096) as h:
            await h.initialize()
            await h.send_raw(head + b"q" * 10_000 + b'"},"id":99}\n')
            refused = await h.recv()
            assert refused["error"]["code"] == INVALID_REQUEST
            assert refused["error"]["data"]["max_frame_bytes"] == 4_096
            if answer_id is None:
                assert "id" not in refused
            else:
                assert refused["id"] == answer_id
            assert (await h.request("ping"))["result"] == {}


async def test_a_message_with_request_and_response_members_is_invalid_not_a_request() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            for extra in (b'"result":{}', b'"error":{"code":1,"message":"x"}'):
                await h.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"ping",' + extra + b"}\n")
                response = await h.recv()
                assert response["id"] == 3
                assert response["error"]["code"] == INVALID_REQUEST
                assert "method" in response["error"]["data"]["detail"]
            assert h.lines_seen == 3  # initialize and the two refusals: the ping was not served


async def test_a_line_of_exactly_the_limit_is_served() -> None:
    with trio.fail_after(30):
        async with open_session() as h:
            await h.initialize()
            head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
            tail = b'"}}'
            line = head + b"z" * (MAX_FRAME_BYTES - len(head) - len(tail)) + tail
            assert len(line) == MAX_FRAME_BYTES
            await h.send_raw(line + b"\r\n")
            assert (await h.recv()) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def _needs_sampling_opener() -> ToolOpener:
    """A ToolOpener serving `needs_sampling`, a tool with nothing to do without the client's model:
    a modern call that does not declare sampling ends with -32021 (missing-client-capability); and
    `asks`, a prompt that asks its client, which a handshake era refuses (-32600 client-cannot-ask)."""

    async def needs_sampling(args: NoArgs) -> NoResult:
        await trio.lowlevel.checkpoint()
        rounds = current_rounds()
        assert rounds is not None  # only called in the modern era here
        rounds.need(mrtr.SAMPLE)
        return NoResult()

    @contextlib.contextmanager
    def open_it(settings: Settings) -> Iterator[Toolset | None]:
        tool = ToolSpec(
            name="needs_sampling",
            title="Needs sampling",
            description="Refused without the client's sampling.",
            models=Lazy(lambda: (NoArgs, NoResult)),
            call=needs_sampling,
            scope=TEST_SCOPE,
        )
        prompt = Prompt("asks", "Asks", "Asks the user.", lambda arguments: [], asks=True)
        yield Toolset(tools=(tool,), prompts=(prompt,))

    return open_it


async def _provoke_every_error(h: Harness) -> list[dict[str, Any]]:
    """One of each kind of JSON-RPC error the server can send, in one session."""
    errors = []
    for line in (
        b"{oops",  # -32700
        b'{"jsonrpc":"2.0","id":"nx","method":"nope"}',  # -32601
        b'{"jsonrpc":"2.0","id":"early","method":"tools/list"}',  # -32600 session-not-initialized
    ):
        await h.send_raw(line + b"\n")
        errors.append(await h.recv())
    await h.initialize()
    for line in (
        b"[1]",  # -32600 invalid-request (batch)
        b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{}}',  # -32600 second initialize
        b'{"jsonrpc":"2.0","id":"tool","method":"tools/call","params":{"name":"nope"}}',  # -32602
        b'{"jsonrpc":"2.0","id":"cur","method":"tools/list","params":{"cursor":"abc"}}',  # -32602
        # -32602 malformed-meta: a modern request whose _meta lacks the per-request fields
        b'{"jsonrpc":"2.0","id":"meta","method":"server/discover","params":{"_meta":{"x":1}}}',
        b'{"jsonrpc":"2.0","id":"boom","method":"tools/call","params":{"name":"boom"}}',  # -32603
        # -32022: a modern request for a version that is not served per request
        b'{"jsonrpc":"2.0","id":"v","method":"tools/list","params":{"_meta":{'
        b'"io.modelcontextprotocol/protocolVersion":"1900-01-01",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
        # -32602 invalid-request-state and invalid-input-responses: a malformed modern retry
        b'{"jsonrpc":"2.0","id":"state","method":"tools/call","params":{"name":"echo","requestState":42,'
        b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
        b'{"jsonrpc":"2.0","id":"answers","method":"tools/call","params":{"name":"echo","inputResponses":null,'
        b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
        # -32021 missing-client-capability: a modern call whose tool needs an undeclared capability
        b'{"jsonrpc":"2.0","id":"cap","method":"tools/call","params":{"name":"needs_sampling",'
        b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
        # -32603 database-unavailable: a resource read (a tool's call is answered in-band)
        b'{"jsonrpc":"2.0","id":"down","method":"resources/read","params":{"uri":"test://down"}}',
        # -32603 role-refused: a resource read has no in-band channel
        b'{"jsonrpc":"2.0","id":"refused","method":"resources/read","params":{"uri":"test://refused"}}',
        # -32603 role-unaudited: the same, while no re-audit completes
        b'{"jsonrpc":"2.0","id":"unaudited","method":"resources/read","params":{"uri":"test://unaudited"}}',
        # -32600 client-cannot-ask: a legacy prompts/get of a prompt that asks (no in-band channel)
        b'{"jsonrpc":"2.0","id":"asks","method":"prompts/get","params":{"name":"asks"}}',
        # -32002 not-found: a legacy read of a resource nobody serves
        b'{"jsonrpc":"2.0","id":"gone","method":"resources/read","params":{"uri":"test://nowhere"}}',
    ):
        await h.send_raw(line + b"\n")
        errors.append(await h.recv())
    return errors


async def test_every_entry_of_the_error_table_is_seen_on_the_wire_and_agrees_with_it() -> None:
    with trio.fail_after(10):
        async with open_session(extra_tools=[refused_resource_opener(), _needs_sampling_opener()]) as h:
            errors = await _provoke_every_error(h)
    seen = {(slug_of(e["error"]["data"]), e["error"]["code"]) for e in errors}
    table = {(slug, code) for slug, codes in WIRE_CODES.items() for code in codes}
    # check_line already proved seen <= table; this proves the table has no entry the server never uses.
    # shutting-down needs a process told to stop: tests/e2e/test_runtime_shutdown.py sees it on the wire.
    # header-mismatch, insufficient-scope and the refusals made before a request reaches the session
    # core exist over HTTP only: tests/trio/test_http_app.py (audit-behind:
    # tests/e2e/test_http_log_flood.py). So does the schema resource's access-denied (a caller the
    # identity map does not map): tests/pg/test_http_identity_bodies.py.
    http_only = {
        ("header-mismatch", HEADER_MISMATCH),
        ("insufficient-scope", INVALID_REQUEST),
        ("access-denied", INVALID_REQUEST),
        ("authorization-unavailable", INTERNAL_ERROR),
        ("audit-behind", INTERNAL_ERROR),
        *(
            (slug, INVALID_REQUEST)
            for slug in (*HTTP_REFUSALS, "unsupported-content", "concurrency-limit", "not-found")
            if slug not in ("authorization-unavailable", "audit-behind")
        ),
    }
    assert seen == table - {("shutting-down", INTERNAL_ERROR)} - http_only
    assert {e["error"]["code"] for e in errors} == {
        PARSE_ERROR,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        INVALID_PARAMS,
        INTERNAL_ERROR,
        UNSUPPORTED_PROTOCOL_VERSION,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        RESOURCE_NOT_FOUND,
    }


async def test_every_response_line_is_ascii_even_for_non_ascii_input() -> None:
    text = "caf\u00e9 \u2028 \u2029 \U0001f600 \u05d0 \u0000?"
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            await h.send_raw(
                json.dumps({"jsonrpc": "2.0", "id": "\u00e9\u2028", "method": "ping"}).encode() + b"\n"
            )
            line = await h.recv_line()
            assert line is not None
            assert line == b'{"jsonrpc":"2.0","id":"\\u00e9\\u2028","result":{}}\n'
            await h.call("echo", {"text": text.replace("\u0000", "")}, request_id=2)
            echoed = await h.response(2)
            assert echoed["result"]["structuredContent"]["text"] == text.replace("\u0000", "")
            # A refused argument echoes (escaped) caller input in the detail.
            await h.call("echo", {"text": text}, request_id=3)
            refused = json.loads((await h.response(3))["result"]["content"][0]["text"])
            assert slug_of(refused) == "validation-error"


def _walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


async def test_tools_list_follows_the_schema_rules() -> None:
    with trio.fail_after(20):
        async with open_session(builtins=True) as h:
            await h.initialize()
            listed = (await h.request("tools/list"))["result"]
            assert set(listed) == {"tools"}  # one page: no nextCursor
            same = (await h.request("tools/list", {"cursor": ""}))["result"]
            assert same == listed
            bad = await h.request("tools/list", {"cursor": "page-2"})
            assert bad["error"]["code"] == INVALID_PARAMS

    tools = listed["tools"]
    assert {tool["name"] for tool in tools} >= {"system_metrics", "sleep", "echo"}
    for tool in tools:
        assert isinstance(tool["title"], str)
        assert tool["title"]
        assert isinstance(tool["description"], str)
        assert tool["description"]
        assert tool["annotations"] == {
            "title": tool["title"],
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            assert schema["type"] == "object", (tool["name"], key)
            jsonschema.Draft202012Validator.check_schema(schema)
            for node in _walk(schema):
                assert "$schema" not in node, (tool["name"], key)
                types = node.get("type")
                if types == "array" or (isinstance(types, list) and "array" in types):
                    assert "items" in node, (tool["name"], key, node)
        # Unknown keys are refused (extra="forbid" is advertised too).
        assert tool["inputSchema"].get("additionalProperties") is False, tool["name"]
    # The fixed-length tuple argument (prefixItems only, by default) got its `items`.
    echo = next(tool for tool in tools if tool["name"] == "echo")
    assert "pair" in echo["inputSchema"]["properties"]


def _longest_run(text: str, char: str) -> int:
    best = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        best = max(best, run)
    return best


async def test_details_echo_at_most_256_characters_of_caller_input() -> None:
    with trio.fail_after(20):
        async with open_session() as h:
            await h.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "M" * 5_000}).encode() + b"\n")
            details = [(await h.recv())["error"]["data"]["detail"]]
            await h.initialize()
            for name, arguments in (
                ("T" * 5_000, {}),
                ("echo", {"K" * 5_000: 1}),
                ("echo", {"text": "V" * 5_000 + "\u202e"}),
                ("echo", {"text": 1, "tags": ["W" * 5_000, 2]}),
                ("echo", {"text": "x", "X" * 60: "X" * 5_000}),
            ):
                response = await h.response(await h.call(name, arguments))
                if "error" in response:
                    details.append(response["error"]["data"]["detail"])
                else:
                    details.append(json.loads(response["result"]["content"][0]["text"])["detail"])
    for detail, char in zip(details, "MTKVWX", strict=True):
        assert _longest_run(detail, char) <= 256, detail
