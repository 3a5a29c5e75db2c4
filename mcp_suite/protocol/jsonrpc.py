"""Strict JSON decoding and JSON-RPC 2.0 envelope checks (docs/wire.md), and response encoding.

`decode_message(frame)` returns a `Request`, a `Notification` or a `ClientResponse`, or raises
`InvalidRequestError` carrying the JSON-RPC code (-32700 or -32600) and the request id when the line
parsed far enough to find a valid one. Nothing here does I/O or knows about trio.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from mcp_suite.problems import (
    INVALID_REQUEST,
    PARSE_ERROR,
    InvalidRequestError,
    ProblemError,
    render_problem,
)

__all__ = [
    "ClientResponse",
    "JsonRpcError",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "compact_json",
    "decode_message",
    "encode_error",
    "encode_result",
    "encode_tool_success",
]

RequestId = str | int
_encode_string: Final = json.encoder.encode_basestring_ascii  # the C string escaper json.dumps uses
# Compact, ASCII-only, no NaN (docs/wire.md). Built once: `json.dumps` with options builds one per call.
_WIRE_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
MAX_DEPTH_DEFAULT: Final = 64


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ClientResponse:
    """A `result`/`error` message from the client; the server issues no requests, so it is ignored."""


Message = Request | Notification | ClientResponse


class JsonRpcError(InvalidRequestError):
    """An envelope problem that knows the id to answer with (None → `"id": null`)."""

    def __init__(self, detail: str, *, jsonrpc_code: int, request_id: RequestId | None) -> None:
        super().__init__(detail, jsonrpc_code=jsonrpc_code)
        self.request_id = request_id
        # Members added to `error.data` beside the problem document (e.g. `max_frame_bytes`).
        self.wire_data: dict[str, Any] = {}


class _DuplicateKeyError(ValueError):
    pass


class _ConstantError(ValueError):
    pass


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKeyError
    return result


def _reject_constant(name: str) -> Any:
    raise _ConstantError(name)


_DECODER: Final = json.JSONDecoder(object_pairs_hook=_pairs_hook, parse_constant=_reject_constant)


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Iterative nesting check: True when containers nest deeper than `limit`."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node  # type: ignore[assignment]  # both are iterables of JSON values
        else:
            continue
        if depth > limit:
            return True
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


def _parse_error(detail: str) -> JsonRpcError:
    return JsonRpcError(detail, jsonrpc_code=PARSE_ERROR, request_id=None)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_json(frame: bytes, *, max_depth: int = MAX_DEPTH_DEFAULT) -> Any:
    """Strict UTF-8, strict JSON: no BOM, no duplicate keys, no NaN/Infinity, bounded nesting."""
    if frame.startswith(b"\xef\xbb\xbf"):
        raise _parse_error("The message starts with a byte order mark; send plain UTF-8.")
    try:
        text = frame.decode("utf-8")
    except UnicodeDecodeError:
        raise _parse_error("The message is not valid UTF-8.") from None
    try:
        value, end = _DECODER.raw_decode(text, _skip_ws(text))
    except _DuplicateKeyError:
        raise _parse_error("The message has an object with a duplicate key.") from None
    except _ConstantError:
        raise _parse_error("NaN and Infinity are not JSON; the message uses one.") from None
    except RecursionError:
        raise _parse_error(f"The message nests deeper than {max_depth} levels.") from None
    except ValueError:
        raise _parse_error("The message is not valid JSON.") from None
    if text[end:].strip(" \t\r\n"):
        raise _parse_error("The message has data after the JSON value.")
    # Nesting deeper than max_depth needs more than max_depth opening brackets; most frames have
    # far fewer, and counting bytes is much cheaper than walking the value.
    if frame.count(b"[") + frame.count(b"{") > max_depth and _depth_exceeds(value, max_depth):
        raise _parse_error(f"The message nests deeper than {max_depth} levels.")
    return value


def _skip_ws(text: str) -> int:
    index = 0
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def decode_message(frame: bytes, *, max_depth: int = MAX_DEPTH_DEFAULT) -> Message:
    value = parse_json(frame, max_depth=max_depth)
    if isinstance(value, list):
        raise JsonRpcError(
            "Batches are not supported; send one JSON-RPC object per line.",
            jsonrpc_code=INVALID_REQUEST,
            request_id=None,
        )
    if not isinstance(value, dict):
        raise JsonRpcError(
            "A JSON-RPC message must be a JSON object.",
            jsonrpc_code=INVALID_REQUEST,
            request_id=None,
        )
    raw_id = value.get("id")
    request_id = raw_id if _valid_id(raw_id) else None

    def invalid(detail: str) -> JsonRpcError:
        return JsonRpcError(detail, jsonrpc_code=INVALID_REQUEST, request_id=request_id)

    if value.get("jsonrpc") != "2.0":
        raise invalid('"jsonrpc" must be exactly "2.0".')
    if "method" not in value:
        if "result" in value or "error" in value:
            return ClientResponse()
        raise invalid('The message has no "method".')
    method = value["method"]
    if not isinstance(method, str) or not method:
        raise invalid('"method" must be a non-empty string.')
    params = value.get("params", {})
    if "params" in value and not isinstance(params, dict):
        raise invalid('"params" must be an object when present.')
    if "id" not in value:
        return Notification(method=method, params=params)
    if request_id is None:
        raise invalid('"id" must be a string or an integer.')
    return Request(id=request_id, method=method, params=params)


def _dumps(payload: dict[str, Any]) -> bytes:
    # ASCII-only, one line (docs/wire.md). allow_nan=False: a NaN that slipped through is a bug, not JSON.
    return (compact_json(payload) + "\n").encode("ascii")


def compact_json(value: Any) -> str:
    """`value` as compact, ASCII-only JSON on one line; NaN or Infinity raise ValueError."""
    return _WIRE_ENCODER.encode(value)


def encode_result(request_id: RequestId, result: dict[str, Any]) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_tool_success(request_id: RequestId, structured_json: bytes) -> bytes:
    """The frame of a successful `tools/call`, spliced from the result's JSON text (docs/wire.md).

    `structured_json` must be compact ASCII JSON of an object (see `mcp.structured_json`). It is used
    twice, verbatim: as `structuredContent` and, string-escaped, as the one text block, so the two
    are identical by construction and the result is encoded once, not twice.
    """
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            (str(request_id) if isinstance(request_id, int) else _encode_string(request_id)).encode("ascii"),
            b',"result":{"content":[{"type":"text","text":',
            _quote_json_text(structured_json),
            b'}],"structuredContent":',
            structured_json,
            b',"isError":false}}\n',
        )
    )


def _quote_json_text(text: bytes) -> bytes:
    """Compact ASCII JSON `text` as a JSON string literal, exactly as `_encode_string` writes it.

    JSON text holds no raw control character (strings escape them), so only backslash and quote
    need escaping, which two `bytes.replace` do in a third of the general escaper's time. A raw
    DEL, which JSON allows and the general escaper writes as \\u007f, takes the general path.
    """
    if b"\x7f" in text:
        return _encode_string(text.decode("ascii")).encode("ascii")
    return b'"' + text.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def encode_error(request_id: RequestId | None, problem: ProblemError, *, code: int) -> bytes:
    """A JSON-RPC error whose `data` is the problem document; `message` is the problem's title."""
    data = render_problem(problem)
    if isinstance(problem, JsonRpcError):
        data.update(problem.wire_data)
    return _dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": problem.title, "data": data}}
    )
