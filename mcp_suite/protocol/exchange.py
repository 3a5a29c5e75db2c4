"""The Streamable HTTP exchange, without I/O (in the manner of h11's `Connection`): a request's head,
its verified caller, its body and its call's outcome in; each answered with what to send (`Reply`:
status, headers, body), "read the body" (`ReadBody`) or "run this call" (`RunCall`). It owns the
legacy session table (`SessionTable`: quotas per subject, idle expiry by the `now` passed in, 404
against 400), the per-caller counts (`CallerCounts`: requests in progress, unread answer bytes), the
scope check and its wording, and the status table. It takes values: the catalogue (what each caller
may see, `protocol.catalogue`) and the random values (`Ids`); it draws none of its own.

`runtime.http` carries it out: it reads and writes bytes, verifies tokens, runs calls and cancels
them. Must not import trio, a tool, hypercorn or joserfc; names no tool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from mcp_suite.problems import (
    AuditBehindError,
    AuthorizationUnavailableError,
    HeadersTooLargeError,
    HttpMethodNotAllowedError,
    HttpNotFoundError,
    InsufficientScopeError,
    InternalServerError,
    InvalidRequestError,
    InvalidRequestMetaError,
    NotAcceptableError,
    OriginNotAllowedError,
    ProblemError,
    RequestTimeoutError,
    RequestTooLargeError,
    SessionNotInitializedError,
    TooManyRequestsError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from mcp_suite.protocol import mcp
from mcp_suite.protocol.authz import (
    Identity,
    MalformedAuthorizationError,
    bearer_token,
    challenge,
    metadata_paths,
    protected_resource_metadata,
    the_authorization,
)
from mcp_suite.protocol.catalogue import Catalogue, Ids
from mcp_suite.protocol.core import (
    Answer,
    CallKind,
    CallOutcome,
    CallRaised,
    CancelCall,
    IdKey,
    SessionCore,
    StartCall,
)
from mcp_suite.protocol.http import (
    KNOWN_METHODS,
    HttpEra,
    SessionSeen,
    accepts_event_stream,
    accepts_json,
    admit_session,
    answer_to_cancelled_call,
    check_mirrored_headers,
    era_of,
    is_json_body,
    method_for_log,
    origin_allowed,
    path_for_log,
    repeated_singleton,
    status_of,
)
from mcp_suite.protocol.jsonrpc import Request, RequestId, encode_error, sniff_id
from mcp_suite.protocol.talk import ClientAnswered
from mcp_suite.settings import ECHO_MAX_CHARS, Settings

__all__ = [
    "CallRef",
    "CallerCounts",
    "ExchangeStatistics",
    "HttpExchange",
    "HttpRequest",
    "LegacySession",
    "ReadBody",
    "Reply",
    "RunCall",
    "SessionTable",
    "connection_refused",
    "internal_error_reply",
    "upgrade_refused",
]

Header = tuple[bytes, bytes]
# A call of a legacy session, as the runtime files its cancel scope: (session id, request id key).
CallRef = tuple[str, IdKey]

_JSON: Final = (b"content-type", b"application/json")
_SESSION_HEADER: Final = "mcp-session-id"
# Liveness and readiness (docs/operations/watching.md): unauthenticated, answered before anything
# else is looked at, and saying nothing but yes or no.
_PROBES: Final = frozenset({"/healthz", "/readyz"})
# The form of the ids this server gives (`Ids.session_id`, 43 URL-safe characters): the only ones
# it resumes.
_SESSION_ID: Final = re.compile(r"[A-Za-z0-9_-]{43}")
# The version of a legacy request without MCP-Protocol-Version (2025-06-18 and 2025-11-25 agree).
_UNNAMED_VERSION: Final = "2025-03-26"
_CLOSE: Final = (b"connection", b"close")
# The head of a body whose version is not served, searched for its id (a JSON-RPC id comes early).
_SNIFFED_BYTES: Final = 4096
# An answer this small is never withheld for unread bytes (a listing, a SQL result under the default
# cap, a refusal): counted, but sent, so a flood of unread answers leaves every other caller served.
# How many there can be is bounded by the connections (MCP_HTTP_MAX_CONNECTIONS x this).
_ALWAYS_SENT_BYTES: Final = 65_536


@dataclass(frozen=True, slots=True)
class Reply:
    """Send `status`, `headers` (a `content-length` is the runtime's) and `body`; audit `answer`
    first when there is one (a JSON-RPC answer of the core), log `log` when there is one (a refusal
    before the core), and cancel the calls `cancel` names (the sessions they belong to ended)."""

    status: int
    headers: tuple[Header, ...] = ()
    body: bytes = b""
    answer: Answer | None = None
    log: str | None = None
    cancel: tuple[CallRef, ...] = ()
    # The client's answer to a request of the server's: hand it to the call that waits for it.
    answered: ClientAnswered | None = None


@dataclass(frozen=True, slots=True)
class ReadBody:
    """Read the request's body, at most `cap` bytes (`HttpRequest.too_large` beyond), within the
    body timeout (`HttpRequest.timed_out` past it), then hand it to `HttpRequest.body`."""

    cap: int


@dataclass(frozen=True, slots=True)
class RunCall:
    """Run `start` (CallRunner) and report how it ended with `HttpRequest.call_finished`. `ref`: the
    legacy session's name for it (file its cancel scope under it; None in the modern era).
    `watch_disconnect`: a closed connection withdraws it (`HttpRequest.disconnected`)."""

    start: StartCall
    ref: CallRef | None
    watch_disconnect: bool


@dataclass(frozen=True, slots=True)
class ExchangeStatistics:
    """What `HttpExchange.statistics()` returns: legacy sessions open, callers with a request in
    progress, answer bytes being written that their clients have not taken yet."""

    sessions: int
    callers_in_progress: int
    unread_bytes: int = 0


@dataclass(slots=True)
class LegacySession:
    """A 2025-11-25-era session: its id, its core, who opened it, when it was last used, its calls
    in flight."""

    id: str
    core: SessionCore
    subject: str
    last_used: float
    in_flight: set[IdKey] = field(default_factory=set)

    def ref(self, key: IdKey) -> CallRef:
        """The name its call `key` is filed under (`RunCall.ref`, `Reply.cancel`)."""
        return (self.id, key)


class SessionTable:
    """The legacy sessions of one server, by id, with their bounds (per subject and in all) and
    idle expiry by the `now` passed in, and the ids of those their clients ended with DELETE.
    `new_id()`: the id of a session opened by `initialize` (the server's: `secrets`)."""

    __slots__ = ("_deleted", "_new_id", "_sessions", "_settings")

    def __init__(self, settings: Settings, new_id: Callable[[], str]) -> None:
        self._settings = settings
        self._new_id = new_id
        self._sessions: dict[str, LegacySession] = {}
        # The ids of the sessions their clients ended with DELETE (oldest first, as many as
        # sessions may be open): never resumed, so a terminated session is 404 as the transport
        # requires of one the server ended; an id that merely expired or made room is resumed.
        self._deleted: dict[str, None] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def lookup(self, session_id: str, now: float) -> tuple[LegacySession | None, tuple[CallRef, ...]]:
        """The session `session_id` names, unless it has been idle too long (then it ends here,
        with its calls in flight to cancel), or there is none."""
        session = self._sessions.get(session_id)
        if session is not None and now - session.last_used > self._settings.http_session_idle_s:
            return None, self.end(session_id)
        return session, ()

    def ended_by_client(self, session_id: str) -> bool:
        """Whether its client ended it with DELETE (so it is not resumed)."""
        return session_id in self._deleted

    def open(
        self, core: SessionCore, subject: str, now: float, session_id: str | None = None
    ) -> tuple[LegacySession | None, str, tuple[CallRef, ...]]:
        """A new session (None: refused, with the reason), after the sessions `admit_session`
        ends (whose calls to cancel come last). `session_id`: the id of a session resumed (see
        `HttpRequest._resume`), else a new one (`new_id`)."""
        settings = self._settings
        admission = admit_session(
            (SessionSeen(i, s.subject, s.last_used, bool(s.in_flight)) for i, s in self._sessions.items()),
            subject,
            now,
            idle_s=settings.http_session_idle_s,
            per_subject=settings.http_max_sessions_per_subject,
            total=settings.http_max_sessions,
        )
        cancel = tuple(ref for ended in admission.end for ref in self.end(ended))
        if admission.refusal is not None:
            return None, admission.refusal, cancel
        session = LegacySession(session_id or self._new_id(), core, subject, now)
        self._sessions[session.id] = session
        return session, "", cancel

    def end(self, session_id: str) -> tuple[CallRef, ...]:
        """End a session; the calls in flight the runtime must cancel."""
        session = self._sessions.pop(session_id)
        return tuple(session.ref(key) for key in session.in_flight)

    def delete(self, session_id: str, subject: str) -> tuple[CallRef, ...] | None:
        """DELETE by `subject`: its own session ended and remembered as ended by its client (the
        calls to cancel), or None when it holds no such session."""
        session = self._sessions.get(session_id)
        if session is None or session.subject != subject:
            return None
        self._deleted[session_id] = None
        if len(self._deleted) > self._settings.http_max_sessions:
            del self._deleted[next(iter(self._deleted))]
        return self.end(session_id)


class CallerCounts:
    """Per caller (by subject): its requests in progress, and the bytes of its answers being
    written that its client has not taken yet; those bytes in all. A caller with neither is not
    held."""

    __slots__ = ("_in_progress", "_unread", "unread_total")

    def __init__(self) -> None:
        self._in_progress: dict[str, int] = {}
        self._unread: dict[str, int] = {}
        self.unread_total = 0

    def in_progress(self, subject: str) -> int:
        return self._in_progress.get(subject, 0)

    def callers_in_progress(self) -> int:
        return len(self._in_progress)

    def began(self, subject: str) -> None:
        self._in_progress[subject] = self._in_progress.get(subject, 0) + 1

    def ended(self, subject: str) -> None:
        remaining = self._in_progress[subject] - 1
        if remaining:
            self._in_progress[subject] = remaining
        else:
            del self._in_progress[subject]

    def unread(self, subject: str) -> int:
        return self._unread.get(subject, 0)

    def sending(self, subject: str, size: int) -> None:
        self._unread[subject] = self._unread.get(subject, 0) + size
        self.unread_total += size

    def sent(self, subject: str, size: int) -> None:
        left = self._unread[subject] - size
        if left:
            self._unread[subject] = left
        else:
            del self._unread[subject]
        self.unread_total -= size


def _refusal(
    kind: type[ProblemError],
    detail: str,
    headers: Sequence[Header] = (),
    *,
    log: str,
    metadata: dict[str, Any] | None = None,
    cancel: tuple[CallRef, ...] = (),
) -> Reply:
    """An HTTP-level refusal before the core sees the request: its body is the JSON-RPC error of a
    `kind` problem (Streamable HTTP: it MAY be one without an id), its status that problem's, so the
    two always agree."""
    frame = encode_error(None, kind(detail[:ECHO_MAX_CHARS], metadata=metadata), omit_unknown_id=True)
    return Reply(
        kind.status,
        (_JSON, *headers),
        frame.rstrip(b"\n"),
        log=f"HTTP {kind.status} for {log}: {detail}",
        cancel=cancel,
    )


def _problem_reply(
    problem: ProblemError,
    request_id: RequestId | None,
    era: HttpEra,
    data_extra: dict[str, Any] | None = None,
) -> Reply:
    """A problem found before the core answers (an unsupported version, mirrored headers unlike the
    body): a JSON-RPC error with the request's id, not audited (the core never saw it)."""
    frame = encode_error(request_id, problem, omit_unknown_id=True, data_extra=data_extra)
    status = status_of(
        problem.jsonrpc_code,
        has_id=request_id is not None,
        era=era,
        malformed_meta=isinstance(problem, InvalidRequestMetaError),
    )
    return Reply(status, (_JSON,), frame.rstrip(b"\n"), log=f"HTTP {status}: {problem.slug}")


def connection_refused(detail: str, peer: str) -> Reply:
    """The answer to a connection over a cap (`protocol.connection`), before any request is read:
    429, and the connection closed."""
    return _refusal(
        TooManyRequestsError, detail, [(b"retry-after", b"1"), _CLOSE], log=f"a connection from {peer}"
    )


def upgrade_refused() -> Reply:
    """The answer to a request asking to switch to HTTP/2 (`Upgrade: h2c`), instead of hypercorn's
    `101`: HTTP/2 is not served (docs/operations/remote.md)."""
    return _refusal(
        InvalidRequestError,
        "this server speaks HTTP/1.1 only: send the request without Upgrade: h2c",
        [_CLOSE],
        log="an Upgrade: h2c request",
    )


def internal_error_reply(problem: InternalServerError) -> Reply:
    """The answer to a request that failed outside any call (the runtime logged the incident)."""
    frame = encode_error(None, problem, omit_unknown_id=True)
    return Reply(problem.status, (_JSON,), frame.rstrip(b"\n"))


def answer_reply(answer: Answer, era: HttpEra, extra: Sequence[Header] = ()) -> Reply:
    """A core's answer as HTTP: the status from the table (`status_of`), keyed by the answer's error
    code and problem class, never by reading the frame back."""
    status = status_of(
        answer.error_code,
        has_id=answer.request_id is not None,
        era=era,
        outside_session=isinstance(answer.problem, SessionNotInitializedError),
        malformed_meta=isinstance(answer.problem, InvalidRequestMetaError),
    )
    return Reply(status, (_JSON, *extra), (answer.frame or b"").rstrip(b"\n"), answer=answer)


class HttpExchange:
    """The HTTP side of one server (one per process): its sessions (`sessions`) and its callers'
    requests (`counts`).

    `catalogue`: what is served and what each caller may see of it (a request's core is built
    over its caller's view); `ids`: the random values (session ids, the cores' boundaries);
    `ready()`: the readiness probe's verdict; `sources()`: each data source's name and condition
    (`serving`, `refused`...), the probe's detail; `audit_room()`: whether the log sink has room
    for another request's audit record (`StderrSink.admit`); `authenticates`: tokens are required
    (MCP_HTTP_AUTH=jwt). Not thread-safe; the runtime calls it from the event loop only."""

    __slots__ = (
        "_logged_paths",
        "_metadata",
        "_metadata_paths",
        "_metadata_url",
        "_ready",
        "_scopes_served",
        "_source_conditions",
        "audit_room",
        "authenticates",
        "catalogue",
        "counts",
        "ids",
        "sessions",
        "settings",
    )

    def __init__(
        self,
        settings: Settings,
        catalogue: Catalogue,
        *,
        ids: Ids,
        ready: Callable[[], bool],
        authenticates: bool,
        audit_room: Callable[[], bool] = lambda: True,
        sources: Callable[[], Sequence[tuple[str, str]]] = tuple,
    ) -> None:
        self.settings = settings
        self.catalogue = catalogue
        self.ids = ids
        self.authenticates = authenticates
        self.audit_room = audit_room
        self._ready = ready
        self._source_conditions = sources
        self.sessions = SessionTable(settings, ids.session_id)
        self.counts = CallerCounts()
        scopes = catalogue.served.scopes()
        resource = settings.http_resource_uri
        if resource is not None:
            origin = urlsplit(resource)
            self._metadata_paths = metadata_paths(resource)
            self._metadata_url = f"{origin.scheme}://{origin.netloc}{self._metadata_paths[0]}"
            supported = catalogue.served.scopes_supported()
            document = protected_resource_metadata(resource, [settings.http_issuer or ""], supported)
            self._metadata = json.dumps(document, separators=(",", ":")).encode()
        else:
            self._metadata_paths = ()
            self._metadata_url = ""
            self._metadata = b""
        # What a 401 asks for (the scopes of what this server serves), and the paths a log may name.
        self._scopes_served = " ".join(scopes)
        self._logged_paths = frozenset((settings.http_path, *self._metadata_paths))

    def core_for(self, identity: Identity) -> SessionCore:
        """A session core showing what `identity` may see (a modern request's, a legacy session's)."""
        catalogue = self.catalogue
        return catalogue.core(catalogue.view(identity), self.settings, self.ids.boundary)

    def statistics(self) -> ExchangeStatistics:
        return ExchangeStatistics(
            sessions=len(self.sessions),
            callers_in_progress=self.counts.callers_in_progress(),
            unread_bytes=self.counts.unread_total,
        )

    def challenge(self, **params: str) -> bytes:
        """A `WWW-Authenticate: Bearer` value pointing at this server's metadata."""
        return challenge(self._metadata_url, **params).encode("latin-1")

    # -- the head --------------------------------------------------------------------------------

    def head(self, method: str, path: str, raw_headers: Sequence[Header]) -> Reply | HttpRequest:
        """A request's head: answered at once (a probe, the metadata, a refusal), or an `HttpRequest`
        whose `token` (None: none is required) the runtime verifies next."""
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw_headers}
        where = f"{method_for_log(method)} {path_for_log(path, self._logged_paths)}"
        if method not in KNOWN_METHODS:
            # Refused before anything else, and logged by its length only (`method_for_log`).
            allow = b"GET" if path in _PROBES or path in self._metadata_paths else b"POST, DELETE"
            return _refusal(
                HttpMethodNotAllowedError,
                "the method is not one this server knows",
                [(b"allow", allow)],
                log=where,
            )
        if path in _PROBES:
            return self._probe(path, method, where)
        # hypercorn bounds a header block that arrives in pieces; one that arrives whole in a
        # single read is measured here.
        limit = self.settings.http_max_header_bytes
        if sum(len(name) + len(value) + 4 for name, value in raw_headers) > limit:
            return _refusal(HeadersTooLargeError, f"the headers are longer than {limit} bytes", log=where)
        repeated = repeated_singleton(raw_headers)
        if repeated is not None:
            return _refusal(
                InvalidRequestError, f"the request carries more than one {repeated} header", log=where
            )
        if path in self._metadata_paths and self.authenticates:
            if method not in ("GET", "HEAD"):
                return _refusal(
                    HttpMethodNotAllowedError,
                    "the metadata is read with GET",
                    [(b"allow", b"GET")],
                    log=where,
                )
            return Reply(200, (_JSON, (b"cache-control", b"max-age=3600")), self._metadata)
        if path != self.settings.http_path:
            return _refusal(HttpNotFoundError, f"the MCP endpoint is {self.settings.http_path}", log=where)
        # Streamable HTTP, "Security": a present Origin that is not allowed is 403 (DNS rebinding).
        if not origin_allowed(headers.get("origin"), self.settings.http_allowed_origins):
            return _refusal(OriginNotAllowedError, "this Origin is not allowed to call the server", log=where)
        token: str | None = None
        if self.authenticates:
            authorization = [v.decode("latin-1") for n, v in raw_headers if n.lower() == b"authorization"]
            try:
                token = bearer_token(the_authorization(authorization))
            except MalformedAuthorizationError as exc:
                # RFC 6750 3.1: a malformed request is 400 `invalid_request`.
                value = self.challenge(error="invalid_request", description=str(exc))
                return _refusal(InvalidRequestError, str(exc), [(b"www-authenticate", value)], log=where)
            if token is None:
                # MCP authorization, "Scope Selection Strategy": the scopes a client should ask for.
                value = self.challenge(scope=self._scopes_served) if self._scopes_served else self.challenge()
                return _refusal(
                    UnauthorizedError, "a bearer token is required", [(b"www-authenticate", value)], log=where
                )
        return HttpRequest(self, method, headers, token, where)

    def _probe(self, path: str, method: str, where: str) -> Reply:
        """`/healthz`: the process serves. `/readyz`: the replica can serve what it is configured to
        serve (no data source, or at least one that serves: `ready()`), 200 or 503, then one line
        per source with its condition (`source shop: serving`), for a scraper; never a finding,
        a role or a reason (those are in the server's log)."""
        if method not in ("GET", "HEAD"):
            return _refusal(
                HttpMethodNotAllowedError, "a probe is read with GET", [(b"allow", b"GET")], log=where
            )
        headers = ((b"content-type", b"text/plain"), (b"cache-control", b"no-store"))
        if path == "/healthz":
            return Reply(200, headers, b"ok\n")
        ready = self._ready()
        lines = ["ok" if ready else "not ready"]
        lines.extend(f"source {name}: {condition}" for name, condition in self._source_conditions())
        return Reply(200 if ready else 503, headers, "".join(f"{line}\n" for line in lines).encode())


class HttpRequest:
    """One request's way through the exchange, after its head: its caller, its body, its call."""

    __slots__ = (
        "_counted",
        "_era",
        "_exchange",
        "_sending",
        "_session",
        "_start",
        "_where",
        "core",
        "headers",
        "identity",
        "method",
        "token",
    )

    def __init__(
        self, exchange: HttpExchange, method: str, headers: dict[str, str], token: str | None, where: str
    ) -> None:
        self._exchange = exchange
        self.method = method
        self.headers = headers  # lower-case names
        self.token = token
        self._where = where
        self._counted = False
        self._sending = 0
        self._era: HttpEra | ProblemError = HttpEra.LEGACY
        self._session: LegacySession | None = None
        self._start: StartCall | None = None
        self.core: SessionCore | None = None
        self.identity: Identity | None = None

    # -- the caller ------------------------------------------------------------------------------

    def token_rejected(self, reason: str) -> Reply:
        """The token does not verify (`TokenRejectedError`): 401 `invalid_token`."""
        value = self._exchange.challenge(error="invalid_token", description=reason)
        return _refusal(UnauthorizedError, reason, [(b"www-authenticate", value)], log=self._where)

    def keys_unavailable(self, reason: str) -> Reply:
        """The issuer's keys could not be had: 503, to retry."""
        return _refusal(
            AuthorizationUnavailableError,
            reason,
            [(b"retry-after", b"5")],
            log=self._where,
            metadata={"retryable": True},
        )

    def authenticated(self, identity: Identity, now: float) -> Reply | ReadBody:
        """Who calls (verified, or the anonymous caller): their request counted against their
        share (429 beyond it; `finished` gives it back), then the method's answer or its body."""
        exchange = self._exchange
        settings = exchange.settings
        counts = exchange.counts
        self.identity = identity
        if counts.in_progress(identity.subject) >= settings.http_max_requests_per_identity:
            return _refusal(
                TooManyRequestsError,
                f"at most {settings.http_max_requests_per_identity} requests at once per caller",
                [(b"retry-after", b"1")],
                log=self._where,
            )
        unread = counts.unread(identity.subject)
        if unread >= settings.http_max_unread_bytes_per_identity:
            return _refusal(
                TooManyRequestsError,
                f"this caller's earlier answers ({unread} bytes) are not read yet",
                [(b"retry-after", b"1")],
                log=self._where,
            )
        counts.began(identity.subject)
        self._counted = True
        if self.method == "DELETE":
            return self._delete(identity)
        if self.method != "POST":
            # No standalone SSE stream is offered (2025-11-25 lets a server say so with 405;
            # 2026-07-28 has none).
            return _refusal(
                HttpMethodNotAllowedError,
                "the MCP endpoint takes POST (and DELETE to end a session)",
                [(b"allow", b"POST, DELETE")],
                log=self._where,
            )
        if not accepts_json(self.headers.get("accept")):
            return _refusal(NotAcceptableError, "the server answers with application/json", log=self._where)
        if not is_json_body(self.headers.get("content-type")):
            return _refusal(UnsupportedMediaTypeError, "the body must be application/json", log=self._where)
        if not exchange.audit_room():
            # A POST is answered with its audit record written; while stderr is read more slowly
            # than the server logs, one that would have its record wait unboundedly is not served.
            return _refusal(
                AuditBehindError,
                "the server's audit log is behind (its stderr is read too slowly); retry later",
                [(b"retry-after", b"1")],
                log=self._where,
                metadata={"retryable": True},
            )
        self._era = era_of(self.headers.get("mcp-protocol-version"))
        cap = settings.http_max_body_bytes
        declared = self.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            return self.too_large()
        return ReadBody(cap)

    def sending(self, reply: Reply) -> Reply:
        """`reply` is about to be written: its body counted against its caller's unread answer bytes
        and the server's (`finished` gives them back), or, when either is already at its bound, a
        429 in its place. An answer goes whatever its size while there is room, so one caller holds
        at most its share and one answer, and the server its bound and one answer; one of at most
        `_ALWAYS_SENT_BYTES` always goes. The withheld answer is still audited (`answer`)."""
        settings = self._exchange.settings
        counts = self._exchange.counts
        assert self.identity is not None  # only an authenticated request's reply is counted
        subject = self.identity.subject
        size = len(reply.body)
        mine = counts.unread(subject)
        total = counts.unread_total
        if size <= _ALWAYS_SENT_BYTES:
            detail = ""
        elif mine >= settings.http_max_unread_bytes_per_identity:
            detail = f"this caller's earlier answers ({mine} bytes) are not read yet"
        elif total >= settings.http_max_unread_bytes:
            detail = "the server's answers being written are at their bound"
        else:
            detail = ""
        if not detail:
            counts.sending(subject, size)
            self._sending += size
            return reply
        refusal = _refusal(
            TooManyRequestsError,
            f"{detail}: an answer of {size} bytes was withheld; read the others, then try again",
            [(b"retry-after", b"1")],
            log=self._where,
        )
        return Reply(refusal.status, refusal.headers, refusal.body, reply.answer, refusal.log, reply.cancel)

    def finished(self) -> None:
        """The request is answered (or abandoned): its place in its caller's share is free, and
        so are the bytes of its answer (written, or its connection closed)."""
        counts = self._exchange.counts
        if self._sending:
            assert self.identity is not None
            counts.sent(self.identity.subject, self._sending)
            self._sending = 0
        if not self._counted:
            return
        self._counted = False
        counts.ended(self.identity.subject if self.identity is not None else "")

    def _delete(self, identity: Identity) -> Reply:
        session_id = self.headers.get(_SESSION_HEADER)
        if session_id is None:
            return _refusal(
                InvalidRequestError, "DELETE names the session to end in Mcp-Session-Id", log=self._where
            )
        cancel = self._exchange.sessions.delete(session_id, identity.subject)
        if cancel is None:
            return _refusal(HttpNotFoundError, "no such session", log=self._where)
        return Reply(204, cancel=cancel)

    # -- the body --------------------------------------------------------------------------------

    def too_large(self) -> Reply:
        cap = self._exchange.settings.http_max_body_bytes
        return _refusal(
            RequestTooLargeError, f"the body is longer than {cap} bytes", [_CLOSE], log=self._where
        )

    def timed_out(self) -> Reply:
        return _refusal(RequestTimeoutError, "the body did not arrive in time", [_CLOSE], log=self._where)

    def body(self, data: bytes, now: float) -> Reply | RunCall:
        """The whole body, decoded once: the mirrored headers and the core read the same message."""
        exchange = self._exchange
        identity = self.identity
        assert identity is not None  # `authenticated` came first
        era = self._era
        if isinstance(era, ProblemError):
            # Answered with the request's id, and the versions served beside the one asked for.
            data_extra = mcp.unsupported_version_data(self.headers.get("mcp-protocol-version") or "")
            return _problem_reply(era, sniff_id(data[:_SNIFFED_BYTES]), HttpEra.LEGACY, data_extra)
        if era is HttpEra.MODERN:
            core = exchange.core_for(identity)
            message = core.decode(data)
            # 2026-07-28: the headers mirror the body, and a session id is ignored.
            mismatch = check_mirrored_headers(message, self.headers)
            if mismatch is not None:
                assert isinstance(message, Request)  # only a request is compared
                return _problem_reply(mismatch, message.id, era)
        else:
            session_id = self.headers.get(_SESSION_HEADER)
            if session_id is not None:
                found = self._named_session(session_id, identity, now)
                if isinstance(found, Reply):
                    return found
                self._session = found
                core = found.core
            else:
                core = exchange.core_for(identity)
            message = core.decode(data)
        self.core = core
        event = core.receive_message(message)
        if isinstance(event, Answer):
            if self._session is None and era is HttpEra.LEGACY and core.legacy_version is not None:
                opened, refusal, cancel = exchange.sessions.open(core, identity.subject, now)
                if opened is None:
                    return _refusal(
                        TooManyRequestsError,
                        refusal,
                        [(b"retry-after", b"5")],
                        log=self._where,
                        cancel=cancel,
                    )
                reply = answer_reply(event, era, [(b"mcp-session-id", opened.id.encode("ascii"))])
                return Reply(reply.status, reply.headers, reply.body, answer=event, cancel=cancel)
            return answer_reply(event, era)
        if isinstance(event, StartCall):
            return self._start_call(event, identity, era)
        withdrawn: tuple[CallRef, ...] = ()
        if isinstance(event, CancelCall) and self._session is not None:
            withdrawn = (self._session.ref(event.key),)
        answered = event if isinstance(event, ClientAnswered) else None
        return Reply(202, cancel=withdrawn, answered=answered)  # a notification or a response: accepted

    def _named_session(self, session_id: str, identity: Identity, now: float) -> LegacySession | Reply:
        """The session a legacy request names: another caller's is 404, and so is one its client
        ended with DELETE; an unknown or expired one is resumed for this caller (`_resume`); a
        version header not the session's, 400."""
        sessions = self._exchange.sessions
        session, cancel = sessions.lookup(session_id, now)
        if session is None and not cancel and not sessions.ended_by_client(session_id):
            return self._resume(session_id, identity, now)
        if session is None or session.subject != identity.subject:
            return _refusal(
                HttpNotFoundError,
                "no such session; send initialize to open a new one",
                log=self._where,
                cancel=cancel,
            )
        version = self.headers.get("mcp-protocol-version")
        if version is not None and version != session.core.legacy_version:
            return _refusal(
                InvalidRequestError,
                "MCP-Protocol-Version is not the version this session negotiated",
                log=self._where,
            )
        session.last_used = now
        return session

    def _resume(self, session_id: str, identity: Identity, now: float) -> LegacySession | Reply:
        """A session this server does not hold (it expired, made room for its caller's newer one,
        or another replica or an earlier process opened it): opened again under the same id for
        this caller, at the version its header names (absent: 2025-03-26, as both revisions have
        it), with nothing of the old one (no call of it is in flight here). None of the official
        SDKs opens a new session on a 404 (every later call of theirs would fail until the host
        restarts), and a legacy session holds nothing a request needs besides its version and its
        owner. Quotas apply as to `initialize` (429); an id not of the server's form is 404.
        Security: the id is the client's own secret; it is resumed for the caller who sends it,
        and a session another caller holds here is still 404 to it."""
        exchange = self._exchange
        if not _SESSION_ID.fullmatch(session_id):
            return _refusal(
                HttpNotFoundError, "no such session; send initialize to open a new one", log=self._where
            )
        core = exchange.core_for(identity)
        core.legacy_version = self.headers.get("mcp-protocol-version") or _UNNAMED_VERSION
        # `admit_session` ends only sessions without a call in flight: nothing of theirs to cancel.
        opened, refusal, _ = exchange.sessions.open(core, identity.subject, now, session_id)
        if opened is None:
            return _refusal(TooManyRequestsError, refusal, [(b"retry-after", b"5")], log=self._where)
        return opened

    # -- the call --------------------------------------------------------------------------------

    def _start_call(self, start: StartCall, identity: Identity, era: HttpEra) -> Reply | RunCall:
        """The scope check (403 with the scope needed, worded here), then "run this call"."""
        grants = self._exchange.catalogue.grants()
        if start.kind is CallKind.TOOL:
            lacking = grants.tool(start.name).lacking(identity, start.arguments)
        elif start.kind is CallKind.PROMPT:
            lacking = None  # a prompt needs no scope, as prompts/get answered inline needs none
        else:
            lacking = grants.resource(start.name).lacking(identity)
        core = self.core
        assert core is not None
        self._start = start
        if lacking is not None:
            problem = InsufficientScopeError(
                f"This token's scopes do not cover {start.name!r}; it needs the scope {lacking!r}."
            )
            answer = core.call_finished(start.key, CallRaised(problem))
            value = self._exchange.challenge(
                error="insufficient_scope", scope=lacking, description=f"{start.name} needs {lacking}"
            )
            body = (answer.frame or b"").rstrip(b"\n")
            return Reply(
                InsufficientScopeError.status, (_JSON, (b"www-authenticate", value)), body, answer=answer
            )
        ref: CallRef | None = None
        if self._session is not None:
            self._session.in_flight.add(start.key)
            ref = self._session.ref(start.key)
        # 2026-07-28: closing the response stream cancels the request. (2025-11-25: a
        # disconnection SHOULD NOT be taken as cancellation; notifications/cancelled is.)
        return RunCall(start, ref, watch_disconnect=era is HttpEra.MODERN)

    def event_stream_headers(self) -> tuple[Header, ...] | None:
        """The head of an event-stream answer to this call's POST, when its client takes one: sent
        once the call has something to say before its result (a notification, a request), which
        then travels on it, the result last. None: the answer stays one JSON body, and nothing is
        said before it."""
        if not accepts_event_stream(self.headers.get("accept")):
            return None
        return ((b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"))

    def disconnected(self) -> bool:
        """The client closed the connection while its call ran: whether to cancel the call (the
        core withdraws it, and nothing is sent for it)."""
        assert self.core is not None
        assert self._start is not None
        return self.core.withdraw(self._start.key) is not None

    def call_finished(self, outcome: CallOutcome) -> Reply | Answer:
        """How the call ended: the reply to send, or (a call its client withdrew by closing the
        connection) only the answer to audit."""
        core, start = self.core, self._start
        assert core is not None
        assert start is not None
        if self._session is not None:
            self._session.in_flight.discard(start.key)
        answer = core.call_finished(start.key, outcome)
        era = self._era
        assert isinstance(era, HttpEra)
        if answer.frame is not None:
            return answer_reply(answer, era)
        if self._session is None:
            return answer  # the connection is closed: nothing can be sent
        # Cancelled by notifications/cancelled: no JSON-RPC message may go out for it, but the POST
        # still gets an HTTP answer in a form its transport allows.
        cancelled = answer_to_cancelled_call(self.headers.get("accept"))
        fields = tuple((name.encode("ascii"), value.encode("ascii")) for name, value in cancelled.headers)
        return Reply(cancelled.status, fields, b"", answer=answer)
