"""The Streamable HTTP transport's decisions, without I/O: Origin, Accept, Content-Type, the era of a
POST, the headers that mirror the body, the HTTP status of an answer, the answer to a cancelled
legacy call, which legacy sessions a new one ends or whether it is refused, which headers a request
may carry only once, and what of a request's method and path a log line may carry (MCP 2026-07-28
and 2025-11-25).

Plain functions over header values and decoded messages; `protocol.exchange` applies them. Must not
import trio.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from mcp_suite.problems import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    HeaderMismatchError,
    InvalidRequestMetaError,
    MethodNotFoundError,
    ProblemError,
    UnsupportedVersionError,
    echo,
)
from mcp_suite.protocol import mcp
from mcp_suite.protocol.jsonrpc import JsonRpcError, Message, Request
from mcp_suite.settings import NAME_ECHO_CHARS

__all__ = [
    "CancelledAnswer",
    "HttpEra",
    "SessionAdmission",
    "SessionSeen",
    "accepts_event_stream",
    "accepts_json",
    "admit_session",
    "answer_to_cancelled_call",
    "check_mirrored_headers",
    "era_of",
    "is_json_body",
    "method_for_log",
    "origin_allowed",
    "path_for_log",
    "repeated_singleton",
    "status_of",
]

# An unknown path is logged by at most this many of its first characters (a client that puts a
# token in the path must not find it in the log).
LOGGED_PATH_CHARS: Final = 16

# The methods of RFC 9110 (9.3) and PATCH (RFC 5789): a log line names them as they are. Any other
# is refused before anything else is looked at, and a log line gives only its length: a method is
# a token of any length, and one of 15,000 characters is not 15 kB of log per refusal.
KNOWN_METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
)
# Fields this server reads as one value (RFC 9110 5.3: a field that is not a list is sent once; a
# W3C `traceparent` is one). A second one is a malformed request (400), whatever it holds: a
# gateway that reads the first and a server that read the last would see two requests. Accept and
# Content-Type included: a proxy's content checks read one value too. `Authorization` has its own
# refusal, with its RFC 6750 challenge (`authz.the_authorization`).
SINGLETON_HEADERS: Final = (
    "host",
    "content-length",
    "content-type",
    "accept",
    "origin",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "traceparent",
)

_B64_PREFIX: Final = "=?base64?"
_B64_SUFFIX: Final = "?="


class HttpEra(enum.Enum):
    MODERN = "modern"  # 2026-07-28: stateless, every POST carries its version header
    LEGACY = "legacy"  # 2025-11-25 and earlier: `initialize` opens a session (`Mcp-Session-Id`)


def _origin_key(origin: str) -> str | None:
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    port = port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port}"


def origin_allowed(origin: str | None, allowed: Collection[str]) -> bool:
    """Whether a request with this `Origin` may be served (DNS-rebinding protection).

    No `Origin` (a client that is not a browser) is served; a present one must be on the list,
    compared by scheme, host and port (the default port spelled or not); `null` never is.
    """
    if origin is None:
        return True
    key = _origin_key(origin)
    return key is not None and key in {_origin_key(entry) for entry in allowed}


def accepts_json(accept: str | None) -> bool:
    """Whether the client takes an `application/json` answer (no `Accept`: it takes anything)."""
    return _takes(accept, ("application/json", "application/*", "*/*"))


def accepts_event_stream(accept: str | None) -> bool:
    """Whether the client takes a `text/event-stream` answer to its POST (both revisions, "Sending
    Messages to the Server"): only then may a call's notifications and requests precede its result
    on that answer. No `Accept`: it takes anything."""
    return _takes(accept, ("text/event-stream", "text/*", "*/*"))


def _takes(accept: str | None, media_types: Collection[str]) -> bool:
    if accept is None:
        return True  # no Accept: the client takes anything
    for item in accept.split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        if media not in media_types:
            continue
        weights = [p[2:] for p in params if p.startswith("q=")]
        try:
            if not weights or float(weights[0]) > 0:
                return True
        except ValueError:
            continue
    return False


def is_json_body(content_type: str | None) -> bool:
    """Whether a POST's body is declared `application/json` (parameters such as `charset` aside).
    A body declared as nothing is not: it is refused with 415 like any other type, so that a
    proxy and the server never read one body two ways."""
    if content_type is None:
        return False
    return content_type.split(";")[0].strip().lower() == "application/json"


def era_of(version_header: str | None) -> HttpEra | ProblemError:
    """The era of a POST by its `MCP-Protocol-Version` header: the modern version, a legacy one
    (absent: 2025-03-26, as both revisions allow), or a version not served (400)."""
    if version_header == mcp.MODERN_VERSION:
        return HttpEra.MODERN
    if version_header is None or version_header in mcp.LEGACY_VERSIONS:
        return HttpEra.LEGACY
    return UnsupportedVersionError(
        f"This server does not serve protocol version {echo(version_header, NAME_ECHO_CHARS)!r}; it "
        f"serves {', '.join(mcp.ALL_VERSIONS)}.",
        metadata={"supported": list(mcp.ALL_VERSIONS)},
    )


def _decoded_name(value: str) -> str | None:
    if value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX) and len(value) >= 11:
        try:
            return base64.b64decode(value[len(_B64_PREFIX) : -len(_B64_SUFFIX)], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
    return value


def _mismatch(detail: str) -> HeaderMismatchError:
    return HeaderMismatchError(f"Header mismatch: {detail}.")


def check_mirrored_headers(
    message: Message | JsonRpcError, headers: dict[str, str]
) -> HeaderMismatchError | InvalidRequestMetaError | MethodNotFoundError | None:
    """A modern POST's headers against its body (Streamable HTTP, "Server Validation"):
    `MCP-Protocol-Version` equals the body's `_meta` version, `Mcp-Method` its method, `Mcp-Name`
    (base64 sentinel decoded) its tool name or resource URI. `headers` has lower-case names.

    `message` is the body as decoded once (`SessionCore.decode`), the core's input too.
    A body with no `_meta` version to compare is not a mismatch but a malformed request (-32602,
    HTTP 400), as the core would answer it were it not sent in the modern era. An `initialize`
    whose headers match is a method the modern revision removed (-32601, HTTP 404): the core
    takes every `initialize` as the legacy handshake, which over HTTP is one sent without the
    modern header. A body that is not a JSON-RPC request is left to the core, which answers it.
    """
    if not isinstance(message, Request):
        return None
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        return mcp.invalid_request_meta("needs params._meta with the per-request protocol fields")
    if mcp.PROTOCOL_VERSION_KEY not in meta:
        return mcp.invalid_request_meta(f"lacks {mcp.PROTOCOL_VERSION_KEY!r}")
    body_version = meta[mcp.PROTOCOL_VERSION_KEY]
    header_version = headers.get("mcp-protocol-version")
    if body_version != header_version:
        return _mismatch(
            f"MCP-Protocol-Version {echo(str(header_version), NAME_ECHO_CHARS)!r} is not the body's "
            f"{mcp.PROTOCOL_VERSION_KEY} {echo(str(body_version), NAME_ECHO_CHARS)!r}"
        )
    method = headers.get("mcp-method")
    if method != message.method:
        return _mismatch(
            f"Mcp-Method {echo(str(method), NAME_ECHO_CHARS)!r} is not the body's method "
            f"{echo(message.method, NAME_ECHO_CHARS)!r}"
        )
    name_field = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}.get(message.method)
    if name_field is not None:
        body_name: Any = message.params.get(name_field)
        header_name = headers.get("mcp-name")
        decoded = None if header_name is None else _decoded_name(header_name)
        if decoded is None or decoded != body_name:
            return _mismatch(f"Mcp-Name does not match params.{name_field} (or is missing or malformed)")
    if message.method == "initialize":
        return mcp.removed_method(message.method)
    return None


def status_of(
    jsonrpc_code: int | None,
    *,
    has_id: bool,
    era: HttpEra,
    outside_session: bool = False,
    malformed_meta: bool = False,
) -> int:
    """The HTTP status of a JSON-RPC answer (None: a result).

    2026-07-28: an unknown method is 404, an unsupported version, a header mismatch and a missing
    client capability (basic/index, MissingRequiredClientCapabilityError) are 400,
    and so is a request whose per-request `_meta` is malformed (`malformed_meta`: the answer is an
    `InvalidRequestMetaError`; basic/index, "Per-request protocol fields").
    2025-11-25: a request without `Mcp-Session-Id` that needs a session (`outside_session`: the
    core answered session-not-initialized) is 400. Both eras: a body that is not a request the
    server can read (no id to answer) is 400; every other answer, errors included, is a JSON-RPC
    response in a 200.
    """
    if jsonrpc_code is None:
        return 200
    if outside_session and era is HttpEra.LEGACY:
        return 400
    if malformed_meta or jsonrpc_code in (
        HEADER_MISMATCH,
        UNSUPPORTED_PROTOCOL_VERSION,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
    ):
        return 400
    if era is HttpEra.MODERN and jsonrpc_code == METHOD_NOT_FOUND:
        return 404
    if not has_id and jsonrpc_code in (PARSE_ERROR, INVALID_REQUEST):
        return 400
    return 200


# -- a cancelled call in a legacy session ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CancelledAnswer:
    """The HTTP answer to a legacy POST whose call `notifications/cancelled` withdrew: no JSON-RPC
    message may go out for it, so the body is empty."""

    status: int
    headers: tuple[tuple[str, str], ...]


def answer_to_cancelled_call(accept: str | None) -> CancelledAnswer:
    """2025-11-25, "Sending Messages to the Server": a POST carrying a request is answered with
    `application/json` (one JSON-RPC response) or `text/event-stream`; "Cancellation": no response
    is sent for a cancelled request. So an SSE stream closed without a message, for a client that
    takes one (a 2025-11-25 client MUST list it in `Accept`); an empty 204 otherwise, the only
    answer left without a message."""
    if accepts_event_stream(accept):
        return CancelledAnswer(200, (("content-type", "text/event-stream"), ("cache-control", "no-cache")))
    return CancelledAnswer(204, ())


# -- legacy sessions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionSeen:
    """A legacy session as the admission decision sees it."""

    session_id: str
    subject: str
    last_used: float
    busy: bool  # a call of it is in progress


@dataclass(frozen=True, slots=True)
class SessionAdmission:
    """What opening a new session for a subject takes: the sessions to end first, and whether the
    new one is refused (`refusal`, said to the client with 429) or admitted (None)."""

    end: tuple[str, ...]
    refusal: str | None = None


def admit_session(
    sessions: Iterable[SessionSeen],
    subject: str,
    now: float,
    *,
    idle_s: float,
    per_subject: int,
    total: int,
) -> SessionAdmission:
    """Room for a new legacy session of `subject`, never at another subject's expense.

    Sessions idle past `idle_s` with no call in progress end first, whoever holds them. A subject
    at its quota (`per_subject`, at most `total`) ends its own least recently used session with no
    call in progress: a client that went away without DELETE leaves sessions behind, and refusing
    the person's next client until those age out would punish them for their own leftovers, while
    ending their oldest affects no one else (its client gets 404 and opens another). A subject whose
    every session has a call in progress is refused. At `total`, a new session is refused: the
    global bound guards the server against many subjects, and ending another subject's session to
    make room is what one caller must not be able to do to another.
    """
    seen = list(sessions)
    expired = {s.session_id for s in seen if now - s.last_used > idle_s and not s.busy}
    live = [s for s in seen if s.session_id not in expired]
    own = sorted((s.last_used, s.session_id) for s in live if s.subject == subject and not s.busy)
    held = sum(1 for s in live if s.subject == subject)
    quota = min(per_subject, total)
    surplus = held - quota + 1
    if surplus > len(own):
        return SessionAdmission(
            tuple(sorted(expired)), f"this caller's {held} sessions all have calls in progress"
        )
    ended = [session_id for _, session_id in own[: max(surplus, 0)]]
    if len(live) - len(ended) >= total:
        return SessionAdmission(
            tuple(sorted(expired)), f"the server holds its maximum of {total} sessions; retry later"
        )
    return SessionAdmission((*sorted(expired), *ended))


# -- logs ------------------------------------------------------------------------------------------


def repeated_singleton(raw_headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The first of `SINGLETON_HEADERS` the request carries more than once (lower case), or None."""
    seen: set[bytes] = set()
    for name, _value in raw_headers:
        key = name.lower()
        if key in seen:
            text = key.decode("latin-1")
            if text in SINGLETON_HEADERS:
                return text
        seen.add(key)
    return None


def method_for_log(method: str) -> str:
    """A request's method as a log line may carry it: one of `KNOWN_METHODS` as it is, any other
    as "an unknown method" and its length."""
    if method in KNOWN_METHODS:
        return method
    return f"an unknown method ({len(method)} characters)"


def path_for_log(path: str, served: Collection[str]) -> str:
    """A request's path as a log line may carry it: a path the server serves (its endpoint, the
    metadata) as it is; any other as "an unknown path" with at most `LOGGED_PATH_CHARS` of its first
    characters, printable ASCII only. ASGI's path never holds the query string, which is never
    logged either."""
    if path in served:
        return path
    head = "".join(c if " " < c < "\x7f" else "?" for c in path[:LOGGED_PATH_CHARS])
    cut = "…" if len(path) > LOGGED_PATH_CHARS else ""
    return f"an unknown path {head!r}{cut} ({len(path)} characters)"
