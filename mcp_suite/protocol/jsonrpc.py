"""Strict JSON decoding and JSON-RPC 2.0 envelope checks, and response encoding (docs/wire.md).

`decode_message(frame)` returns a `Request`, a `Notification` or a `ClientResponse`, or raises a
`JsonRpcError` (-32600; `JsonParseError`, -32700, when the line is not strict JSON) carrying the
request id when the line parsed far enough to find a valid one. Nothing here does I/O or knows about trio.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from mcp_suite.problems import (
    PARSE_ERROR,
    InvalidRequestError,
    MissingClientCapabilityError,
    ProblemError,
    render_problem,
)
from mcp_suite.protocol.untrusted import framed_text, with_boundary
from mcp_suite.settings import MAX_JSON_DEPTH

__all__ = [
    "ClientResponse",
    "JsonParseError",
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
    "quote_json_text",
    "sniff_id",
    "sniff_tail_id",
]

RequestId = str | int
_encode_string: Final = json.encoder.encode_basestring_ascii  # the C string escaper json.dumps uses
# Compact, ASCII-only, no NaN (docs/wire.md). Built once: `json.dumps` with options builds one per call.
_WIRE_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


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
    """A `result`/`error` message from the client: its answer to a request of the server's
    (`protocol.talk`), matched by `id` (None: unreadable). `result` or `error` is the object sent
    (None when absent or not an object)."""

    id: RequestId | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


Message = Request | Notification | ClientResponse


class JsonRpcError(InvalidRequestError):
    """An envelope problem (-32600) that knows the id to answer with (None → `"id": null`)."""

    def __init__(self, detail: str, *, request_id: RequestId | None) -> None:
        super().__init__(detail)
        self.request_id = request_id
        # Members added to `error.data` beside the problem document (e.g. `max_frame_bytes`).
        self.wire_data: dict[str, Any] = {}


class JsonParseError(JsonRpcError):
    """The line is not strict JSON (-32700): there is no id to answer with."""

    jsonrpc_code = PARSE_ERROR


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


def _parse_error(detail: str) -> JsonParseError:
    return JsonParseError(detail, request_id=None)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_json(frame: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
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


def decode_message(frame: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Message:
    value = parse_json(frame, max_depth=max_depth)
    if isinstance(value, list):
        raise JsonRpcError(
            "Batches are not supported; send one JSON-RPC object per line.",
            request_id=None,
        )
    if not isinstance(value, dict):
        raise JsonRpcError(
            "A JSON-RPC message must be a JSON object.",
            request_id=None,
        )
    raw_id = value.get("id")
    request_id = raw_id if _valid_id(raw_id) else None

    def invalid(detail: str) -> JsonRpcError:
        return JsonRpcError(detail, request_id=request_id)

    if value.get("jsonrpc") != "2.0":
        raise invalid('"jsonrpc" must be exactly "2.0".')
    is_response = "result" in value or "error" in value
    if "method" not in value:
        if is_response:
            result, error = value.get("result"), value.get("error")
            return ClientResponse(
                request_id,
                result if isinstance(result, dict) else None,
                error if isinstance(error, dict) else None,
            )
        raise invalid('The message has no "method".')
    if is_response:
        # JSON-RPC 2.0 section 4 and 5: a request has "method", a response "result" or "error";
        # a message with both kinds of members is neither.
        raise invalid('A message cannot carry "method" together with "result" or "error".')
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


def encode_tool_success(
    request_id: RequestId, structured_json: bytes, tail: bytes = b"", *, boundary: bytes | None = None
) -> bytes:
    """The frame of a successful `tools/call`, spliced from the result's JSON text (docs/wire.md).

    `structured_json` must be compact ASCII JSON of an object (see `mcp.structured_json`). It is used
    twice, verbatim: as `structuredContent` and, string-escaped, as the one text block, so the two
    are identical by construction. With a `boundary` (`untrusted.new_boundary`: the result carries data
    a tool read), the text block holds it inside the untrusted-data frame and `structuredContent`
    adds the boundary as its `untrusted_data` member (`protocol.untrusted`). Spliced, not encoded from a
    dict: encoding the result (a file's text, say) once instead of twice pays on every tool call
    (bench_fs). `tail` is compact JSON of more result members, each preceded by a comma (the modern
    era's `resultType` and `_meta`).
    """
    quoted = quote_json_text(structured_json)
    text: tuple[bytes | memoryview, ...] = (quoted,)
    structured: tuple[bytes | memoryview, ...] = (structured_json,)
    if boundary is not None:
        text = framed_text(quoted, boundary)
        structured = with_boundary(structured_json, boundary)
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            (str(request_id) if isinstance(request_id, int) else _encode_string(request_id)).encode("ascii"),
            b',"result":{"content":[{"type":"text","text":',
            *text,
            b'}],"structuredContent":',
            *structured,
            b',"isError":false',
            tail,
            b"}}\n",
        )
    )


def quote_json_text(text: bytes) -> bytes:
    """Compact ASCII JSON `text` as a JSON string literal, exactly as `_encode_string` writes it.

    JSON text holds no raw control character (strings escape them), so only backslash and quote
    need escaping: two `bytes.replace` do it, much faster than the general escaper (bench_fs). A raw
    DEL, which JSON allows and the general escaper writes as \\u007f, takes the general path.
    """
    if b"\x7f" in text:
        return _encode_string(text.decode("ascii")).encode("ascii")
    return b'"' + text.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def encode_error(
    request_id: RequestId | None,
    problem: ProblemError,
    *,
    omit_unknown_id: bool = False,
    data_extra: dict[str, Any] | None = None,
) -> bytes:
    """A JSON-RPC error whose `code` is the problem's, whose `data` is the problem document and whose
    `message` is the problem's title.

    An id that could not be read is written as `"id": null` (JSON-RPC 2.0), or left out when
    `omit_unknown_id` (the schemas of MCP 2025-11-25 and later make `id` optional there and do not
    allow null). `data_extra` adds members beside the problem document (`supported`, `requested`).
    """
    data = render_problem(problem)
    if isinstance(problem, (JsonRpcError, MissingClientCapabilityError)):
        data.update(problem.wire_data)
    if data_extra:
        data.update(data_extra)
    error = {"code": problem.jsonrpc_code, "message": problem.title, "data": data}
    if request_id is None and omit_unknown_id:
        return _dumps({"jsonrpc": "2.0", "error": error})
    return _dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


_JSON_WS: Final = b" \t\r\n"
_MAX_SNIFFED_ID: Final = 256


def sniff_id(head: bytes) -> RequestId | None:
    """The top-level `id` of a JSON object whose text begins with `head`, if `head` holds it whole.

    For a line too long to parse: the members before `id` are skipped by their brackets and quotes,
    without parsing them; anything unexpected, or `head` ending first, gives None. A top-level `id`
    that appears twice (a duplicate key) cannot be seen here, so the first one found is used.
    Limits: one pass over `head` (at most `framing.HEAD_BYTES`); ids up to 256 bytes.
    """
    text = head.lstrip(_JSON_WS)
    if not text.startswith(b"{"):
        return None
    index = 1
    size = len(text)
    while True:
        index = _skip_ws_bytes(text, index)
        if index >= size or text[index] != 0x22:  # '"': every member starts with its key
            return None
        key_end = _string_end(text, index)
        if key_end < 0:
            return None
        key = text[index:key_end]
        index = _skip_ws_bytes(text, key_end)
        if index >= size or text[index] != 0x3A:  # ':'
            return None
        index = _skip_ws_bytes(text, index + 1)
        if key == b'"id"':
            return _read_id(text, index)
        index = _value_end(text, index)
        if index < 0:
            return None
        index = _skip_ws_bytes(text, index)
        if index >= size or text[index] != 0x2C:  # ',' (a '}' means no id at all)
            return None
        index += 1


# The top-level `id` as the last member of an object: after a `,` or `{`, then only `}` and white
# space to the end. In valid JSON a nested object would need one more `}` or `]` after it, and a
# quote inside a string is escaped, so such an `id` can only be the top-level one.
_TAIL_ID: Final = re.compile(
    rb'[,{][ \t\r\n]*"id"[ \t\r\n]*:[ \t\r\n]*(-?[0-9]+|"(?:[^"\\]|\\.)*")[ \t\r\n]*\}[ \t\r\n]*\Z'
)


def sniff_tail_id(tail: bytes) -> RequestId | None:
    """The top-level `id` of a JSON object whose text ends with `tail`, when it is the object's last
    member (the TypeScript SDKs write it last); else None.

    For a line too long to parse, when `sniff_id` found no id at its start.
    Limits: one regular-expression search over `tail` (at most `framing.TAIL_BYTES`); ids up to 256 bytes.
    """
    found = _TAIL_ID.search(tail)
    if found is None or len(found.group(1)) > _MAX_SNIFFED_ID:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:  # a bad escape, a leading zero, bytes that are not UTF-8
        return None
    return value if _valid_id(value) else None


def _skip_ws_bytes(text: bytes, index: int) -> int:
    while index < len(text) and text[index] in _JSON_WS:
        index += 1
    return index


def _string_end(text: bytes, index: int) -> int:
    """Index just past the JSON string starting at `index` (a quote), or -1 if it is cut off."""
    index += 1
    while index < len(text):
        byte = text[index]
        if byte == 0x5C:  # backslash: skip the escaped byte
            index += 2
            continue
        if byte == 0x22:
            return index + 1
        index += 1
    return -1


def _value_end(text: bytes, index: int) -> int:
    """Index just past the JSON value starting at `index`, by brackets and quotes; -1 if cut off."""
    depth = 0
    while index < len(text):
        byte = text[index]
        if byte == 0x22:
            index = _string_end(text, index)
            if index < 0:
                return -1
            if depth == 0:
                return index
            continue
        if byte in b"[{":
            depth += 1
        elif byte in b"]}":
            depth -= 1
            if depth < 0:
                return -1
            if depth == 0:
                return index + 1
        elif depth == 0 and byte in b",}" + _JSON_WS:
            return index  # the end of a number, true, false or null
        index += 1
    return -1


def _read_id(text: bytes, index: int) -> RequestId | None:
    end = _value_end(text, index)
    if end < 0 or end - index > _MAX_SNIFFED_ID:
        return None
    try:
        value = json.loads(text[index:end])
    except ValueError:
        return None
    return value if _valid_id(value) else None
