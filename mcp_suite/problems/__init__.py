"""RFC 9457 problem documents: one exception class per problem type, one render function (docs/wire.md).

Tools and the protocol core raise these; only the dispatcher turns them into wire messages. Each class
carries its slug, title, HTTP-like status, stable code and JSON-RPC error code as class attributes.
Must not import trio, psycopg, psutil, sqlglot or anything that does I/O (from `settings`, only its
constants).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

from mcp_suite.settings import ECHO_MAX_CHARS

__all__ = [
    "ECHO_MAX_CHARS",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "PROBLEM_TYPES",
    "PROBLEM_URN_PREFIX",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "WIRE_CODES",
    "AccessDeniedError",
    "AuditBehindError",
    "AuthorizationUnavailableError",
    "CallsBusyError",
    "Channel",
    "ClientCannotAskError",
    "ClientRequestFailedError",
    "ConcurrencyLimitError",
    "ConflictError",
    "DatabaseUnavailableError",
    "ExecutionTimeoutError",
    "HeaderMismatchError",
    "HeadersTooLargeError",
    "HttpMethodNotAllowedError",
    "HttpNotFoundError",
    "IdentityChangedError",
    "InsufficientScopeError",
    "InternalServerError",
    "InvalidArgumentsError",
    "InvalidInputResponsesError",
    "InvalidParamsError",
    "InvalidRequestError",
    "InvalidRequestMetaError",
    "InvalidRequestStateError",
    "MethodNotFoundError",
    "MissingClientCapabilityError",
    "NotAcceptableError",
    "NotApprovedError",
    "NotFoundError",
    "OriginNotAllowedError",
    "ProblemError",
    "PromptCannotAskError",
    "QueryViolationError",
    "RequestTimeoutError",
    "RequestTooLargeError",
    "ResourceAccessDeniedError",
    "ResourceLimitError",
    "ResourceNotFoundError",
    "ResultTooLargeError",
    "RoleRefusedError",
    "RoleUnauditedError",
    "SessionNotInitializedError",
    "ShuttingDownError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnsupportedContentError",
    "UnsupportedMediaTypeError",
    "UnsupportedVersionError",
    "echo",
    "render_problem",
]

PROBLEM_URN_PREFIX: Final = "urn:mcp-suite:problem:"

# JSON-RPC 2.0 codes used on the wire.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# MCP 2026-07-28, basic/index "Error Codes": the request's protocol version is not served here.
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
# MCP 2026-07-28, Streamable HTTP "Server Validation": a mirrored header does not match the body.
HEADER_MISMATCH: Final = -32020
# MCP 2026-07-28, basic/index "Error Codes": serving the request needs a client capability the
# request's `_meta` clientCapabilities does not declare.
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
# MCP 2024-11-05 to 2025-11-25, server/resources "Error Handling": "Resource not found: -32002".
# 2026-07-28 answers -32602 instead (and asks clients to accept both).
RESOURCE_NOT_FOUND: Final = -32002


def echo(value: str, limit: int = ECHO_MAX_CHARS) -> str:
    """At most `limit` characters of caller input, marked when cut (docs/wire.md: never more than 256)."""
    if len(value) <= limit:
        return value
    return value[: max(0, limit - 1)] + "…"


class Channel(enum.Enum):
    """How a problem travels to the client."""

    RESULT = "result"  # in-band: a tools/call result with `isError: true` (what was asked is at fault)
    ERROR = "error"  # a JSON-RPC error response with the problem's `jsonrpc_code`


class ProblemError(Exception):
    """Base of every problem. Subclasses set the class attributes; instances carry the specifics.

    `channel` and `jsonrpc_code` are facts of the class, never of an instance: a problem that must
    travel differently is a subclass (`InvalidParamsError`, `protocol.jsonrpc.JsonParseError`).

    Security: `detail` is written for the caller. Never pass `str()` of a foreign exception, an
    absolute host path or more than `ECHO_MAX_CHARS` of caller input (use `echo`).
    """

    slug: ClassVar[str] = ""
    title: ClassVar[str] = ""
    status: ClassVar[int] = 500
    code: ClassVar[str] = ""
    channel: ClassVar[Channel] = Channel.RESULT
    # The code of the JSON-RPC error it travels as: on its own channel, or from a method that has no
    # in-band results (resources/read), where a problem of the RESULT channel is the server's fault.
    jsonrpc_code: ClassVar[int] = INTERNAL_ERROR
    # A refusal by a rule (the request is well formed; a rule of the server's says no): counted by
    # that rule (`refused_by`) in the server's metrics (docs/operations/watching.md).
    refusal: ClassVar[bool] = False

    def __init__(
        self,
        detail: str,
        *,
        invalid_params: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.invalid_params = tuple(invalid_params)
        self.metadata = dict(metadata or {})

    @property
    def type_uri(self) -> str:
        return PROBLEM_URN_PREFIX + self.slug

    @property
    def refused_by(self) -> str | None:
        """The rule that refused the request, when the class is a refusal: the `rule` its raiser
        named in its metadata (the SQL policy's, a definer function's), else the problem type."""
        if not self.refusal:
            return None
        rule = self.metadata.get("rule")
        return rule if isinstance(rule, str) else self.slug

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.detail!r})"


class InvalidArgumentsError(ProblemError):
    slug = "validation-error"
    title = "The arguments are not valid"
    status = 422
    code = "MCP_VALIDATION_ERROR"


class InvalidParamsError(InvalidArgumentsError):
    """A validation error in the request itself, not in a tool's arguments (a tools/call envelope,
    an unknown tool, a cursor, `params._meta`, a resource URI): a JSON-RPC error, -32602."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_PARAMS


class InvalidRequestMetaError(InvalidParamsError):
    """A 2026-07-28 request whose `params._meta` lacks a required per-request field or has one of
    the wrong type: malformed, -32602, and over HTTP a 400 (basic/index, "Per-request protocol
    fields": "On HTTP, the response status MUST be 400 Bad Request"). A type of its own, with the
    status 400 that HTTP answers, not `validation-error`'s 422: the document agrees with the
    status line."""

    slug = "malformed-meta"
    title = "The request's _meta is malformed"
    status = 400
    code = "MCP_MALFORMED_META"


class InvalidRequestStateError(InvalidParamsError):
    """A 2026-07-28 retry whose `requestState` this server cannot accept: not of its form, sealed by
    another process or for another request or caller, altered, or past its expiry
    (basic/patterns/mrtr: servers "MUST reject state that fails verification"). -32602: the
    request itself is at fault, whichever tool it names."""

    slug = "invalid-request-state"
    title = "The request state is not valid"
    status = 400
    code = "MCP_INVALID_REQUEST_STATE"


class InvalidInputResponsesError(InvalidParamsError):
    """A 2026-07-28 retry whose `inputResponses` is not a map of results, or whose answer to a
    question the server asked is not a result of that question's kind. -32602."""

    slug = "invalid-input-responses"
    title = "The input responses are not valid"
    status = 400
    code = "MCP_INVALID_INPUT_RESPONSES"


class NotApprovedError(ProblemError):
    """The person at the client was asked and did not approve (they said no, declined or dismissed
    the question). In-band; `metadata.action` is the client's answer."""

    slug = "not-approved"
    title = "The user did not approve"
    status = 403
    code = "MCP_NOT_APPROVED"


class AccessDeniedError(ProblemError):
    slug = "access-denied"
    refusal = True
    title = "Access denied"
    status = 403
    code = "MCP_ACCESS_DENIED"


class ResourceAccessDeniedError(AccessDeniedError):
    """The same refusal from a resource read (an unmapped caller, a privilege the database refused),
    which has no in-band result (no `isError`, in any era): the problem document as a JSON-RPC error
    whose code says it is the caller's, as insufficient-scope does, not -32603 (the server failed)."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class QueryViolationError(ProblemError):
    slug = "query-violation"
    refusal = True
    title = "The query is not allowed"
    status = 403
    code = "MCP_QUERY_VIOLATION"


class IdentityChangedError(QueryViolationError):
    """A call ended as someone else than it started as: `current_user` or `request.jwt.claims` was
    not what the server set (code the query ran switched them, or the login role's own settings
    make a session start as another role). No row of the call is returned; `metadata.finding`
    names what was seen (docs/tools/read_only_sql.md, "An identity nothing can change")."""


class ExecutionTimeoutError(ProblemError):
    slug = "execution-timeout"
    title = "The call ran out of time"
    status = 504
    code = "MCP_EXECUTION_TIMEOUT"


class ConcurrencyLimitError(ProblemError):
    slug = "concurrency-limit"
    title = "Too many calls at once"
    status = 429
    code = "MCP_CONCURRENCY_LIMIT"


class TooManyRequestsError(ConcurrencyLimitError):
    """Over HTTP: one caller has too many requests in progress (HTTP 429 with `Retry-After`), refused
    before the request is read: a JSON-RPC error without an id."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class CallsBusyError(ConcurrencyLimitError):
    """A request with no in-band channel (a completion that reads the database) refused at the call
    limiter, as a call would be: a JSON-RPC error, -32600 as over HTTP."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class ConflictError(ProblemError):
    """The database gave up on the call because of what others were doing (a hot standby replaying
    a change the query was in the way of, a deadlock): nothing is wrong with the call; retry it."""

    slug = "conflict"
    title = "The call met a conflict; it can be retried"
    status = 409
    code = "MCP_CONFLICT"


class NotFoundError(ProblemError):
    slug = "not-found"
    title = "Not found"
    status = 404
    code = "MCP_NOT_FOUND"


class ResourceNotFoundError(NotFoundError):
    """`resources/read` of a URI that `resources/list` does not show, in the legacy era: a JSON-RPC
    error with the code those specifications give it (the modern era answers `InvalidParamsError`)."""

    channel = Channel.ERROR
    jsonrpc_code = RESOURCE_NOT_FOUND


class HttpNotFoundError(NotFoundError):
    """Over HTTP: a path that is not the MCP endpoint, or a legacy session id that is unknown, expired
    or another caller's (HTTP 404): a JSON-RPC error without an id."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class UnsupportedContentError(ProblemError):
    slug = "unsupported-content"
    title = "The content is not supported"
    status = 415
    code = "MCP_UNSUPPORTED_CONTENT"


class UnsupportedMediaTypeError(UnsupportedContentError):
    """Over HTTP: a request body that is not `application/json` (HTTP 415): a JSON-RPC error without
    an id."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class ResultTooLargeError(ProblemError):
    slug = "result-too-large"
    title = "The result is too large"
    status = 413
    code = "MCP_RESULT_TOO_LARGE"


class ResourceLimitError(ProblemError):
    slug = "resource-limit"
    title = "The query needs more of the database's resources than allowed"
    status = 507
    code = "MCP_RESOURCE_LIMIT"


class SessionNotInitializedError(ProblemError):
    slug = "session-not-initialized"
    title = "The session is not initialized"
    status = 400
    code = "MCP_SESSION_NOT_INITIALIZED"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class InvalidRequestError(ProblemError):
    slug = "invalid-request"
    title = "The request is not valid"
    status = 400
    code = "MCP_INVALID_REQUEST"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class MethodNotFoundError(ProblemError):
    slug = "method-not-found"
    title = "The method does not exist"
    status = 404
    code = "MCP_METHOD_NOT_FOUND"
    channel = Channel.ERROR
    jsonrpc_code = METHOD_NOT_FOUND


class UnsupportedVersionError(ProblemError):
    slug = "unsupported-protocol-version"
    title = "Unsupported protocol version"
    status = 400
    code = "MCP_UNSUPPORTED_PROTOCOL_VERSION"
    channel = Channel.ERROR
    jsonrpc_code = UNSUPPORTED_PROTOCOL_VERSION


class HeaderMismatchError(ProblemError):
    """Over HTTP: a header that mirrors the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`)
    is missing, malformed or says something else than the body (HTTP 400)."""

    slug = "header-mismatch"
    title = "Header mismatch"
    status = 400
    code = "MCP_HEADER_MISMATCH"
    channel = Channel.ERROR
    jsonrpc_code = HEADER_MISMATCH


class InsufficientScopeError(ProblemError):
    """Over HTTP: the bearer token's scopes do not cover the tool or resource asked for (HTTP 403
    with `WWW-Authenticate: Bearer error="insufficient_scope"`, naming the scope it needs)."""

    slug = "insufficient-scope"
    refusal = True
    title = "Insufficient scope"
    status = 403
    code = "MCP_INSUFFICIENT_SCOPE"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class UnauthorizedError(ProblemError):
    """Over HTTP: no bearer token, or one that is not valid (HTTP 401 with `WWW-Authenticate`; for a
    token that was checked and refused, `error="invalid_token"`)."""

    slug = "unauthorized"
    title = "Authentication required"
    status = 401
    code = "MCP_UNAUTHORIZED"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class OriginNotAllowedError(ProblemError):
    """Over HTTP: a request whose `Origin` is not one the server allows (HTTP 403; Streamable HTTP,
    "Security": against DNS rebinding)."""

    slug = "origin-not-allowed"
    title = "The Origin is not allowed"
    status = 403
    code = "MCP_ORIGIN_NOT_ALLOWED"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class HttpMethodNotAllowedError(ProblemError):
    """Over HTTP: an HTTP method the path does not take (HTTP 405 with `Allow`). Not the JSON-RPC
    method of the body: that is `method-not-found`."""

    slug = "method-not-allowed"
    title = "The HTTP method is not allowed"
    status = 405
    code = "MCP_METHOD_NOT_ALLOWED"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class NotAcceptableError(ProblemError):
    """Over HTTP: an `Accept` header that does not take `application/json` (HTTP 406)."""

    slug = "not-acceptable"
    title = "The response type asked for is not served"
    status = 406
    code = "MCP_NOT_ACCEPTABLE"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class RequestTimeoutError(ProblemError):
    """Over HTTP: the request body did not all arrive within MCP_HTTP_BODY_TIMEOUT_S (HTTP 408,
    and the connection is closed). Not a call that ran out of time: that is `execution-timeout`."""

    slug = "request-timeout"
    title = "The request did not arrive in time"
    status = 408
    code = "MCP_REQUEST_TIMEOUT"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class RequestTooLargeError(ProblemError):
    """Over HTTP: a request body longer than MCP_HTTP_MAX_BODY_BYTES, declared or as it streams (HTTP
    413, and the connection is closed). Not a result over its cap: that is `result-too-large`."""

    slug = "request-too-large"
    title = "The request is too large"
    status = 413
    code = "MCP_REQUEST_TOO_LARGE"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class HeadersTooLargeError(ProblemError):
    """Over HTTP: a header block longer than MCP_HTTP_MAX_HEADER_BYTES (HTTP 431)."""

    slug = "headers-too-large"
    title = "The request's headers are too large"
    status = 431
    code = "MCP_HEADERS_TOO_LARGE"
    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class AuthorizationUnavailableError(ProblemError):
    """Over HTTP: the issuer's key set cannot be fetched and none is cached, so no token can be
    checked (HTTP 503 with `Retry-After`). A fault of the infrastructure, not of the request: it
    travels as -32603, like `database-unavailable`, with `metadata.retryable: true`."""

    slug = "authorization-unavailable"
    title = "Tokens cannot be checked now"
    status = 503
    code = "MCP_AUTHORIZATION_UNAVAILABLE"
    channel = Channel.ERROR
    jsonrpc_code = INTERNAL_ERROR


class AuditBehindError(ProblemError):
    """Over HTTP: stderr is read more slowly than the server logs, and the log lines not yet written
    fill MCP_LOG_BUFFER_BYTES; a request whose audit record could not be written is not served
    (HTTP 503 with `Retry-After`), rather than served unaudited. `metadata.retryable: true`."""

    slug = "audit-behind"
    title = "The audit log is behind"
    status = 503
    code = "MCP_AUDIT_BEHIND"
    channel = Channel.ERROR
    jsonrpc_code = INTERNAL_ERROR


class DatabaseUnavailableError(ProblemError):
    """The database cannot be reached or refuses the server's login: a fault of the infrastructure.

    In-band, like a refused role (issue 53): a tool result with `isError: true` the model reads and
    can act on (try again later, use another source or tool), where a JSON-RPC error makes the SDK
    clients raise and hides `metadata` from the model. `metadata.retryable` says whether trying
    again may help, `retry_after_s` when, `source` which database. A resource read has no in-band
    channel: there it is -32603.
    """

    slug = "database-unavailable"
    title = "The database is unavailable"
    status = 503
    code = "MCP_DATABASE_UNAVAILABLE"
    jsonrpc_code = INTERNAL_ERROR


class RoleRefusedError(ProblemError):
    """The database role failed a re-audit while serving: the SQL tools refuse every call until an
    operator fixes the role and a later re-audit passes. In-band: the caller can use other tools.
    `detail` names the finding(s); `metadata.findings` lists their kinds."""

    slug = "role-refused"
    refusal = True
    title = "The database role can do more than read"
    status = 503
    code = "MCP_ROLE_REFUSED"


class RoleUnauditedError(ProblemError):
    """No re-audit of the database role has completed for two intervals (the audit's own connection
    is lost and cannot be opened again, or the audit fails): the SQL tools refuse every call, as on a
    refusal, until a re-audit completes and passes. In-band: the caller can use other tools."""

    slug = "role-unaudited"
    title = "The database role could not be audited"
    status = 503
    code = "MCP_ROLE_UNAUDITED"


class ClientCannotAskError(ProblemError):
    """A tool asked the client (its user, its model, its roots) and the client cannot be asked: it
    did not declare the capability, its era or transport has no way to carry the request, or the
    call ended. Fail closed: the tool goes on without the answer, never with a silent yes."""

    slug = "client-cannot-ask"
    title = "The client cannot be asked"
    status = 412
    code = "MCP_CLIENT_CANNOT_ASK"


class PromptCannotAskError(ClientCannotAskError):
    """A prompt that asks its client, got in a handshake era (where only 2026-07-28's
    input-required results would carry its question): a request with no in-band channel, so a
    JSON-RPC error, -32600."""

    channel = Channel.ERROR
    jsonrpc_code = INVALID_REQUEST


class MissingClientCapabilityError(ProblemError):
    """A 2026-07-28 request that cannot be served without a client capability its `_meta`
    clientCapabilities does not declare (basic/index: `MissingRequiredClientCapabilityError`,
    -32021, HTTP 400): a tool that has nothing to do without the answer, where `client-cannot-ask`
    is for one that goes on without it. `error.data.requiredCapabilities` is a `ClientCapabilities`
    object naming what is missing (`{"sampling": {}}`)."""

    slug = "missing-client-capability"
    title = "The request needs a client capability it did not declare"
    status = 400
    code = "MCP_MISSING_CLIENT_CAPABILITY"
    channel = Channel.ERROR
    jsonrpc_code = MISSING_REQUIRED_CLIENT_CAPABILITY

    def __init__(
        self,
        detail: str,
        *,
        required: Mapping[str, Mapping[str, Any]] | None = None,
        invalid_params: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, invalid_params=invalid_params, metadata=metadata)
        # Members added to `error.data` beside the problem document, as the schema names them.
        self.wire_data: dict[str, Any] = {
            "requiredCapabilities": {name: dict(value) for name, value in (required or {}).items()}
        }


class ClientRequestFailedError(ProblemError):
    """The client answered a request of the server's with a JSON-RPC error."""

    slug = "client-request-failed"
    title = "The client refused the server's request"
    status = 502
    code = "MCP_CLIENT_REQUEST_FAILED"


class ShuttingDownError(ProblemError):
    """The server was told to stop (SIGTERM, SIGINT) and cancelled this call when its drain ended:
    not a fault, and the same call may be sent again to a server that is running."""

    slug = "shutting-down"
    title = "The server is shutting down"
    status = 503
    code = "MCP_SHUTTING_DOWN"
    channel = Channel.ERROR
    jsonrpc_code = INTERNAL_ERROR


class InternalServerError(ProblemError):
    slug = "internal-error"
    title = "Internal error"
    status = 500
    code = "MCP_INTERNAL_ERROR"
    channel = Channel.ERROR
    jsonrpc_code = INTERNAL_ERROR


PROBLEM_TYPES: Final[tuple[type[ProblemError], ...]] = (
    InvalidArgumentsError,
    InvalidRequestMetaError,
    InvalidRequestStateError,
    InvalidInputResponsesError,
    NotApprovedError,
    AccessDeniedError,
    QueryViolationError,
    ExecutionTimeoutError,
    ConcurrencyLimitError,
    ConflictError,
    NotFoundError,
    UnsupportedContentError,
    ResultTooLargeError,
    ResourceLimitError,
    SessionNotInitializedError,
    InvalidRequestError,
    MethodNotFoundError,
    UnsupportedVersionError,
    HeaderMismatchError,
    InsufficientScopeError,
    UnauthorizedError,
    OriginNotAllowedError,
    HttpMethodNotAllowedError,
    NotAcceptableError,
    RequestTimeoutError,
    RequestTooLargeError,
    HeadersTooLargeError,
    AuthorizationUnavailableError,
    AuditBehindError,
    DatabaseUnavailableError,
    RoleRefusedError,
    RoleUnauditedError,
    ClientCannotAskError,
    MissingClientCapabilityError,
    ClientRequestFailedError,
    ShuttingDownError,
    InternalServerError,
)

# The one mapping table: which JSON-RPC codes each problem type may travel under as `error.data`.
# A test enforces that every rendered error agrees with it.
WIRE_CODES: Final[Mapping[str, frozenset[int]]] = {
    "validation-error": frozenset({INVALID_PARAMS}),
    "malformed-meta": frozenset({INVALID_PARAMS}),
    "invalid-request-state": frozenset({INVALID_PARAMS}),
    "invalid-input-responses": frozenset({INVALID_PARAMS}),
    "session-not-initialized": frozenset({INVALID_REQUEST}),
    "invalid-request": frozenset({INVALID_REQUEST, PARSE_ERROR}),
    "method-not-found": frozenset({METHOD_NOT_FOUND}),
    "unsupported-protocol-version": frozenset({UNSUPPORTED_PROTOCOL_VERSION}),
    "header-mismatch": frozenset({HEADER_MISMATCH}),
    "missing-client-capability": frozenset({MISSING_REQUIRED_CLIENT_CAPABILITY}),
    # In-band for a tool; from prompts/get of a prompt that asks, in a handshake era.
    "client-cannot-ask": frozenset({INVALID_REQUEST}),
    "insufficient-scope": frozenset({INVALID_REQUEST}),
    # In-band for a tool; from a resource read, the caller's refusal (ResourceAccessDeniedError).
    "access-denied": frozenset({INVALID_REQUEST}),
    # Over HTTP only: a refusal before the request reaches the session core (HTTP 4xx/503).
    "unauthorized": frozenset({INVALID_REQUEST}),
    "origin-not-allowed": frozenset({INVALID_REQUEST}),
    "method-not-allowed": frozenset({INVALID_REQUEST}),
    "not-acceptable": frozenset({INVALID_REQUEST}),
    "request-timeout": frozenset({INVALID_REQUEST}),
    "request-too-large": frozenset({INVALID_REQUEST}),
    "headers-too-large": frozenset({INVALID_REQUEST}),
    "authorization-unavailable": frozenset({INTERNAL_ERROR}),
    "audit-behind": frozenset({INTERNAL_ERROR}),
    # In-band for a tool; over HTTP, refusals of the same meaning (HTTP 415, 429) travel as -32600.
    "unsupported-content": frozenset({INVALID_REQUEST}),
    "concurrency-limit": frozenset({INVALID_REQUEST}),
    # -32002: a legacy resources/read; -32600: over HTTP, an unknown path or session (HTTP 404).
    "not-found": frozenset({RESOURCE_NOT_FOUND, INVALID_REQUEST}),
    "database-unavailable": frozenset({INTERNAL_ERROR}),
    # In-band for a tool; a resource read has no in-band channel, so there it is -32603.
    "role-refused": frozenset({INTERNAL_ERROR}),
    "role-unaudited": frozenset({INTERNAL_ERROR}),
    "shutting-down": frozenset({INTERNAL_ERROR}),
    "internal-error": frozenset({INTERNAL_ERROR}),
}


def render_problem(problem: ProblemError) -> dict[str, Any]:
    """The RFC 9457 document for `problem` (a plain JSON-ready dict)."""
    return {
        "type": problem.type_uri,
        "title": problem.title,
        "status": problem.status,
        "detail": problem.detail,
        "code": problem.code,
        "invalid_params": list(problem.invalid_params),
        "metadata": dict(problem.metadata),
    }
