"""Checks every response line the tests see against the wire contract (docs/wire.md).

`check_line(line)` is applied by both test clients (the in-memory harness and the subprocess client)
to every line the server writes, so each test also checks, for free: ASCII-only JSON on one line, a
well-formed JSON-RPC response, problem documents with all their members and constant per-type values,
and a JSON-RPC code that the one mapping table (`WIRE_CODES`) allows for the problem's type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from mcp_suite.problems import PROBLEM_TYPES, PROBLEM_URN_PREFIX, WIRE_CODES, ProblemError
from mcp_suite.protocol.jsonrpc import JsonRpcError, Message, decode_message
from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.protocol.untrusted import FIELD, FRAMED

__all__ = [
    "PROBLEM_MEMBERS",
    "check_line",
    "check_problem",
    "initialize_request",
    "modern_tool_post",
    "slug_of",
    "unframe",
    "without_frame",
]

PROBLEM_MEMBERS: Final = frozenset(
    {"type", "title", "status", "detail", "code", "invalid_params", "metadata"}
)
# Problem types that travel only as JSON-RPC errors, never in-band (docs/wire.md, the "surface" column).
# The refusals of the HTTP transport before a request reaches the session core (a JSON-RPC error
# without an id); all but `authorization-unavailable` (-32603) travel as -32600.
HTTP_REFUSALS: Final = (
    "unauthorized",
    "origin-not-allowed",
    "method-not-allowed",
    "not-acceptable",
    "request-timeout",
    "request-too-large",
    "headers-too-large",
    "authorization-unavailable",
    "audit-behind",
)
_WIRE_ONLY: Final = frozenset(
    {"session-not-initialized", "invalid-request", "method-not-found", *HTTP_REFUSALS}
)
_BY_SLUG: Final[dict[str, type[ProblemError]]] = {cls.slug: cls for cls in PROBLEM_TYPES}
# A detail echoes at most 256 characters of caller input; with the fixed wording around it, a detail
# longer than this means something unbounded leaked in.
_MAX_DETAIL: Final = 1_024


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"the server wrote {name}, which is not JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    assert len(result) == len(pairs), f"duplicate keys in {pairs!r}"
    return result


def slug_of(document: Mapping[str, Any]) -> str:
    type_uri = document["type"]
    assert isinstance(type_uri, str)
    assert type_uri.startswith(PROBLEM_URN_PREFIX), type_uri
    return type_uri.removeprefix(PROBLEM_URN_PREFIX)


def check_problem(document: Any) -> dict[str, Any]:
    """A problem document has every member, with the type's constant title, status and code."""
    assert isinstance(document, dict), document
    missing = PROBLEM_MEMBERS - document.keys()
    assert not missing, f"problem document lacks {sorted(missing)}: {document}"
    slug = slug_of(document)
    assert slug in _BY_SLUG, f"unknown problem type {slug!r}"
    cls = _BY_SLUG[slug]
    assert document["title"] == cls.title, document
    assert document["status"] == cls.status, document
    assert document["code"] == cls.code, document
    detail = document["detail"]
    assert isinstance(detail, str), document
    assert detail, document
    assert len(detail) <= _MAX_DETAIL, document
    assert "Traceback" not in detail, document
    assert isinstance(document["invalid_params"], list), document
    assert all(isinstance(name, str) for name in document["invalid_params"]), document
    assert isinstance(document["metadata"], dict), document
    return document


def _check_error(message: Mapping[str, Any]) -> None:
    error = message["error"]
    assert isinstance(error, dict), message
    assert set(error) == {"code", "message", "data"}, message
    code = error["code"]
    assert isinstance(code, int), message
    assert not isinstance(code, bool), message
    problem = check_problem(error["data"])
    slug = slug_of(problem)
    # The one mapping table (docs/wire.md): the code must be one the problem's type may travel under.
    assert slug in WIRE_CODES, f"{slug!r} may not travel as a JSON-RPC error: {message}"
    assert code in WIRE_CODES[slug], f"{slug!r} must not travel as {code}: {message}"
    assert error["message"] == problem["title"], message


# The content block types of a tool result (server/tools, "Tool Result").
_BLOCK_TYPES: Final = frozenset({"text", "image", "audio", "resource", "resource_link"})


def _check_result(message: Mapping[str, Any], *, content_blocks: bool = False) -> None:
    result = message["result"]
    assert isinstance(result, dict), message
    if "isError" not in result:
        return
    content = result["content"]
    if content_blocks and "structuredContent" not in result:
        # A tool result of content blocks only (the conformance fixtures': `contents.ContentResult`).
        assert isinstance(content, list), message
        assert content, message
        assert all(isinstance(b, dict) and b.get("type") in _BLOCK_TYPES for b in content), message
        assert isinstance(result["isError"], bool), message
        return
    assert isinstance(content, list), message
    assert len(content) == 1, message
    assert content[0]["type"] == "text", message
    text = content[0]["text"]
    assert isinstance(text, str), message
    if result["isError"] is True:
        # In-band (docs/wire.md): one text block holding a problem document, no structuredContent.
        assert "structuredContent" not in result, message
        problem = check_problem(json.loads(text))
        assert slug_of(problem) not in _WIRE_ONLY, message
    else:
        assert result["isError"] is False, message
        structured = result["structuredContent"]
        if FIELD in structured:
            # Data a tool read: the text block frames the rest of structuredContent (docs/wire.md).
            assert json.loads(unframe(text, structured[FIELD])) == without_frame(structured), message
        else:
            # Success: structuredContent plus one text block holding the identical JSON (docs/wire.md).
            assert json.loads(text) == structured, message


def unframe(text: str, boundary: object) -> str:
    """The body of a framed text block: the frame's whole shape is checked, its boundary is
    `boundary` (structuredContent's), and nothing inside holds the boundary."""
    assert isinstance(boundary, str), boundary
    found = FRAMED.fullmatch(text)
    assert found is not None, f"not a framed text block: {text[:200]!r}"
    assert found["boundary"] == boundary, (found["boundary"], boundary)
    body = found["body"]
    assert boundary not in body, "the data holds the frame's boundary"
    assert "\n" not in body, "the body is compact JSON on one line"
    return body


def without_frame(structured: Mapping[str, Any]) -> dict[str, Any]:
    """structuredContent without the frame's member: what the framed text block holds."""
    return {key: value for key, value in structured.items() if key != FIELD}


# The only messages other than responses the server writes.
_SERVER_SENDS: Final = frozenset(
    {
        "notifications/progress",
        "notifications/message",
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
    }
)


def check_line(line: bytes, *, content_blocks: bool = False) -> dict[str, Any]:
    """Parse one line the server wrote and check it against the contract; returns the message.
    `content_blocks`: a tool result may also be content blocks without structuredContent (only the
    conformance fixture server's tools answer so; mcp-suite's never do)."""
    assert line.endswith(b"\n"), f"unterminated line {line[:200]!r}"
    body = line[:-1]
    assert b"\n" not in body, "one message per line"
    assert b"\r" not in body, f"stray CR in {line[:200]!r}"
    assert body.isascii(), f"non-ASCII output: {line[:200]!r}"
    message = json.loads(body, parse_constant=_reject_constant, object_pairs_hook=_pairs)
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    if "method" in message:
        # What a running call says to its client (docs/wire.md, "Progress, logging and questions to
        # the client"): a notification, or a request with an id of the server's.
        assert message["method"] in _SERVER_SENDS, message
        assert isinstance(message["params"], dict), message
        if message["method"].startswith("notifications/"):
            assert set(message) == {"jsonrpc", "method", "params"}, message
        else:
            assert set(message) == {"jsonrpc", "id", "method", "params"}, message
            assert isinstance(message["id"], str), message
        return message
    assert ("result" in message) != ("error" in message), message
    if "error" in message:
        # An error whose request id could not be read leaves `id` out (the 2025-11-25 and
        # 2026-07-28 schemas), or sends null (2025-06-18 and earlier); a result always has one.
        assert set(message) in ({"jsonrpc", "id", "error"}, {"jsonrpc", "error"}), message
        request_id = message.get("id")
        assert request_id is None or isinstance(request_id, str | int), message
    else:
        assert set(message) == {"jsonrpc", "id", "result"}, message
        request_id = message["id"]
        assert isinstance(request_id, str | int), message
    assert not isinstance(request_id, bool), message
    if "error" in message:
        _check_error(message)
    else:
        _check_result(message, content_blocks=content_blocks)
    return message


def decoded(body: bytes, *, max_depth: int = 64) -> Message | JsonRpcError:
    """A body as a transport decodes it once (`SessionCore.decode`): the message, or its problem."""
    try:
        return decode_message(body, max_depth=max_depth)
    except JsonRpcError as exc:
        return exc


def initialize_request(client: str, *, request_id: int = 1, version: str = "2025-06-18") -> dict[str, Any]:
    """An `initialize` request from a client named `client`, as a message (not yet a line)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


def modern_tool_post(name: str, arguments: dict[str, Any], *, token: str, request_id: int) -> dict[str, Any]:
    """The keyword arguments (`json`, `headers`) of an httpx POST that calls the tool `name` in the
    modern era, as `token`: no session, the version and capabilities in `_meta` and the headers."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return {"json": body, "headers": headers}
