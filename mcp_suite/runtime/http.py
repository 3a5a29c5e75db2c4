"""MCP over Streamable HTTP: an ASGI app served by hypercorn's trio worker (no HTTP parsing here).

    POST /mcp ─▶ Origin ─▶ bearer token ─▶ per-identity limit ─▶ body (capped while read)
              ─▶ SessionCore.receive ─▶ Answer | StartCall (scope check ─▶ CallRunner) ─▶ JSON reply

A modern (2026-07-28) request gets a core of its own and leaves nothing behind; a legacy
`initialize` opens a session (`Mcp-Session-Id`) whose core later requests reuse, DELETE ends it.
What to answer is the core's (`protocol.core`), the HTTP rules are `protocol.http`'s, the
authorization decisions `protocol.authz`'s; this module reads, writes and cancels. A call's
request task owns its cancel scope; a closed connection withdraws the call (2026-07-28
"Cancellation").
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import logging
import secrets
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import trio

from mcp_suite.caller import Caller, current_caller
from mcp_suite.problems import (
    AuthorizationUnavailableError,
    HeadersTooLargeError,
    HttpMethodNotAllowedError,
    HttpNotFoundError,
    InsufficientScopeError,
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
    ANONYMOUS,
    Grants,
    Identity,
    MalformedAuthorizationError,
    TokenRejectedError,
    bearer_token,
    challenge,
    grants_of,
    metadata_paths,
    protected_resource_metadata,
    scoped_input_schema,
    the_authorization,
)
from mcp_suite.protocol.core import Answer, CallKind, CallRaised, CancelCall, IdKey, SessionCore, StartCall
from mcp_suite.protocol.http import (
    HttpEra,
    SessionSeen,
    accepts_json,
    admit_session,
    answer_to_cancelled_call,
    check_mirrored_headers,
    era_of,
    is_json_body,
    origin_allowed,
    path_for_log,
    status_of,
)
from mcp_suite.protocol.jsonrpc import encode_error, sniff_id
from mcp_suite.runtime import early_signals
from mcp_suite.runtime.calls import CallRunner, ToolCatalogue, new_core
from mcp_suite.runtime.http_auth import JwksFetcher, KeysUnavailableError, TokenVerifier, fetch_jwks
from mcp_suite.runtime.request_log import AuditLog, audit_subject, logger
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import Registry

if TYPE_CHECKING:
    from mcp_suite.runtime.telemetry import CallSpan, Telemetry

__all__ = ["HttpApp", "serve_http"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_JSON: Final = (b"content-type", b"application/json")
_SESSION_HEADER: Final = "mcp-session-id"
# Liveness and readiness (docs/operations/watching.md): unauthenticated, answered before anything
# else is looked at, and saying nothing but yes or no.
_PROBES: Final = frozenset({"/healthz", "/readyz"})
# The request's headers, for its span (set in the request's own task, like `audit_subject`).
_request_headers: Final[contextvars.ContextVar[dict[str, str]]] = contextvars.ContextVar("request_headers")


@dataclass(slots=True)
class _LegacySession:
    """A 2025-11-25-era session: its core, who opened it, its calls' scopes, when it was last used."""

    core: SessionCore
    subject: str
    last_used: float
    in_flight: dict[IdKey, trio.CancelScope] = field(default_factory=dict)


class _RefusalError(Exception):
    """An HTTP-level refusal before the core sees the request: its body is the JSON-RPC error of a
    `kind` problem, and its HTTP status is that problem's status, so the two always agree."""

    def __init__(
        self,
        kind: type[ProblemError],
        detail: str,
        headers: Iterable[tuple[bytes, bytes]] = (),
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.problem = kind(detail[:256], metadata=metadata)
        self.status = kind.status
        self.detail = detail
        self.headers = list(headers)


class HttpApp:
    """The ASGI application of `mcp-suite serve-http` (one per process)."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        verifier: TokenVerifier | None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.verifier = verifier
        # A caller's share of the call slots; without authorization every caller is one
        # (`anonymous`), who holds them all, as on stdio.
        share = settings.http_max_calls_per_identity if verifier is not None else None
        self.runner = CallRunner(settings, registry, per_caller=share)
        self.catalogue = ToolCatalogue(registry)
        self.audit = AuditLog()
        self.sessions: dict[str, _LegacySession] = {}
        self.in_progress: dict[str, int] = {}
        self.telemetry = telemetry
        if telemetry is not None:
            telemetry.watch_http(lambda: len(self.sessions), lambda: len(self.in_progress))
        # The scopes of what is served (what a 401 asks for, the metadata's list) need no arguments.
        scopes = grants_of(
            ((t.name, t.scope, {}) for t in registry.tools.values()), self._resources()
        ).scopes()
        resource = settings.http_resource_uri
        if resource is not None:
            origin = urlsplit(resource)
            self._metadata_paths = metadata_paths(resource)
            self._metadata_url = f"{origin.scheme}://{origin.netloc}{self._metadata_paths[0]}"
            self._metadata = json.dumps(
                protected_resource_metadata(resource, [settings.http_issuer or ""], scopes),
                separators=(",", ":"),
            ).encode()
        else:
            self._metadata_paths = ()
            self._metadata_url = ""
            self._metadata = b""
        # What a 401 asks for (the scopes of what this server serves), and the paths a log may name.
        self._scopes_served = " ".join(scopes)
        self._logged_paths = frozenset((settings.http_path, *self._metadata_paths))

    # -- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":  # websocket: not served
            await trio.lowlevel.checkpoint()
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        try:
            await self._http(scope, headers, receive, send)
        except _RefusalError as refusal:
            path = path_for_log(scope["path"], self._logged_paths)
            logger.info("HTTP %d for %s %s: %s", refusal.status, scope["method"], path, refusal.detail)
            await _send_refusal(send, refusal)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path in _PROBES:
            await self._probe(path, method, send)
            return
        # hypercorn bounds a header block that arrives in pieces; one that arrives whole in a
        # single read is measured here.
        limit = self.settings.http_max_header_bytes
        if sum(len(name) + len(value) + 4 for name, value in scope["headers"]) > limit:
            raise _RefusalError(HeadersTooLargeError, f"the headers are longer than {limit} bytes")
        if path in self._metadata_paths and self.verifier is not None:
            if method not in ("GET", "HEAD"):
                raise _RefusalError(
                    HttpMethodNotAllowedError, "the metadata is read with GET", [(b"allow", b"GET")]
                )
            await _send(send, 200, self._metadata, [_JSON, (b"cache-control", b"max-age=3600")])
            return
        if path != self.settings.http_path:
            raise _RefusalError(HttpNotFoundError, f"the MCP endpoint is {self.settings.http_path}")
        # Streamable HTTP, "Security": a present Origin that is not allowed is 403 (DNS rebinding).
        if not origin_allowed(headers.get("origin"), self.settings.http_allowed_origins):
            raise _RefusalError(OriginNotAllowedError, "this Origin is not allowed to call the server")
        authorization = [v.decode("latin-1") for n, v in scope["headers"] if n.lower() == b"authorization"]
        identity = await self._authenticate(authorization)
        audit_subject.set(identity.subject)  # this request's task only (and its worker threads)
        _request_headers.set(headers)
        # The identity map's input (the SQL tools read it): the verified subject and claims.
        current_caller.set(Caller(identity.subject, identity.claims))
        count = self.in_progress.get(identity.subject, 0)
        if count >= self.settings.http_max_requests_per_identity:
            raise _RefusalError(
                TooManyRequestsError,
                f"at most {self.settings.http_max_requests_per_identity} requests at once per caller",
                [(b"retry-after", b"1")],
            )
        self.in_progress[identity.subject] = count + 1
        try:
            if method == "POST":
                await self._post(identity, headers, receive, send)
            elif method == "DELETE":
                await self._delete(identity, headers, send)
            else:
                # No standalone SSE stream is offered (2025-11-25 lets a server say so with 405;
                # 2026-07-28 has none).
                raise _RefusalError(
                    HttpMethodNotAllowedError,
                    "the MCP endpoint takes POST (and DELETE to end a session)",
                    [(b"allow", b"POST, DELETE")],
                )
        finally:
            remaining = self.in_progress[identity.subject] - 1
            if remaining:
                self.in_progress[identity.subject] = remaining
            else:
                del self.in_progress[identity.subject]

    async def _probe(self, path: str, method: str, send: Send) -> None:
        """`/healthz`: the process serves. `/readyz`: every data source answered its last audit
        connection and its role passes the audit (`Registry.ready`). 200 or 503, no detail."""
        if method not in ("GET", "HEAD"):
            raise _RefusalError(HttpMethodNotAllowedError, "a probe is read with GET", [(b"allow", b"GET")])
        ready = path == "/healthz" or self.registry.ready()
        headers = [(b"content-type", b"text/plain"), (b"cache-control", b"no-store")]
        await _send(send, 200 if ready else 503, b"ok\n" if ready else b"not ready\n", headers)

    async def _authenticate(self, authorization: list[str]) -> Identity:
        if self.verifier is None:
            await trio.lowlevel.checkpoint()
            return ANONYMOUS
        try:
            token = bearer_token(the_authorization(authorization))
        except MalformedAuthorizationError as exc:
            # RFC 6750 3.1: a malformed request is 400 `invalid_request`.
            value = self._challenge(error="invalid_request", description=str(exc))
            raise _RefusalError(InvalidRequestError, str(exc), [(b"www-authenticate", value)]) from None
        if token is None:
            # MCP authorization, "Scope Selection Strategy": the scopes a client should ask for.
            value = self._challenge(scope=self._scopes_served) if self._scopes_served else self._challenge()
            raise _RefusalError(
                UnauthorizedError, "a bearer token is required", [(b"www-authenticate", value)]
            )
        try:
            return await self.verifier.verify(token)
        except TokenRejectedError as exc:
            value = self._challenge(error="invalid_token", description=str(exc))
            raise _RefusalError(UnauthorizedError, str(exc), [(b"www-authenticate", value)]) from None
        except KeysUnavailableError as exc:
            raise _RefusalError(
                AuthorizationUnavailableError, str(exc), [(b"retry-after", b"5")], {"retryable": True}
            ) from None

    def _challenge(self, **params: str) -> bytes:
        return challenge(self._metadata_url, **params).encode("latin-1")

    # -- POST ------------------------------------------------------------------------------------

    async def _post(self, identity: Identity, headers: dict[str, str], receive: Receive, send: Send) -> None:
        if not accepts_json(headers.get("accept")):
            raise _RefusalError(NotAcceptableError, "the server answers with application/json")
        if not is_json_body(headers.get("content-type")):
            raise _RefusalError(UnsupportedMediaTypeError, "the body must be application/json")
        version = headers.get("mcp-protocol-version")
        era = era_of(version)
        body = await self._read_body(headers, receive)
        if body is None:
            return  # the client went away while sending
        if isinstance(era, ProblemError):
            # Answered with the request's id, and the versions served beside the one asked for.
            data = mcp.unsupported_version_data(version or "")
            await self._send_problem(send, era, sniff_id(body[:4096]), HttpEra.LEGACY, data)
            return
        session: _LegacySession | None = None
        if era is HttpEra.MODERN:
            # 2026-07-28: the headers mirror the body, and a session id is ignored.
            mismatch = check_mirrored_headers(body, headers, max_depth=self.settings.max_json_depth)
            if mismatch is not None:
                await self._send_problem(send, mismatch, sniff_id(body[:4096]), era)
                return
            core = self._new_core(identity)
        else:
            session = self._session(identity, headers)
            core = session.core if session is not None else self._new_core(identity)
        started = time.perf_counter()
        event = core.receive(body)
        extra: list[tuple[bytes, bytes]] = []
        if isinstance(event, Answer):
            if session is None and era is HttpEra.LEGACY and core.legacy_version is not None:
                extra.append((b"mcp-session-id", self._open_session(core, identity).encode("ascii")))
            await self._audited(event, started, identity)
            await self._send_answer(send, event, era, extra)
        elif isinstance(event, StartCall):
            await self._call(
                identity, core, session, event, started, era, headers.get("accept"), receive, send
            )
        else:
            if isinstance(event, CancelCall) and session is not None:
                scope = session.in_flight.get(event.key)
                if scope is not None:
                    scope.cancel()
            await _send(send, 202, b"")  # a notification (or a client's response): accepted

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes | None:
        """The request body, refused with 413 as soon as it passes the cap (the declared length
        first), with 408 when it is not all there within MCP_HTTP_BODY_TIMEOUT_S."""
        cap = self.settings.http_max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _RefusalError(
                RequestTooLargeError, f"the body is longer than {cap} bytes", [(b"connection", b"close")]
            )
        chunks: list[bytes] = []
        size = 0
        with trio.move_on_after(self.settings.http_body_timeout_s):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > cap:
                    raise _RefusalError(
                        RequestTooLargeError,
                        f"the body is longer than {cap} bytes",
                        [(b"connection", b"close")],
                    )
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        raise _RefusalError(
            RequestTimeoutError, "the body did not arrive in time", [(b"connection", b"close")]
        )

    def _resources(self) -> list[tuple[str, str, str | None]]:
        return [(r.uri, r.scope, r.source) for r in self.registry.resources.values()]

    def _grants(self) -> Grants:
        """Each served tool's and resource's grant; a tool's sources are its advertised `source`
        argument's, so this builds the tools' descriptions (once per process: `ToolCatalogue`)."""
        tools = self.registry.tools
        return grants_of(
            ((d.name, tools[d.name].scope, d.input_schema) for d in self.catalogue.descriptions()),
            self._resources(),
        )

    def _new_core(self, identity: Identity) -> SessionCore:
        def visible_tools() -> list[mcp.ToolDescription]:
            grants = self._grants()
            return [
                dataclasses.replace(
                    d,
                    input_schema=scoped_input_schema(
                        d.input_schema, grants.tool(d.name).sources_allowed(identity)
                    ),
                )
                for d in self.catalogue.descriptions()
                if grants.tool(d.name).may_see(identity)
            ]

        return new_core(
            self.settings,
            self.registry,
            visible_tools,
            resource_uris=lambda uri: self._grants().resource(uri).lacking(identity) is None,
            per_caller_lists=not identity.unrestricted,
        )

    # -- legacy sessions -------------------------------------------------------------------------

    def _session(self, identity: Identity, headers: dict[str, str]) -> _LegacySession | None:
        """The session a legacy request names; None when it names none. An unknown or expired id,
        or another caller's, is 404 (the client then opens a new session)."""
        session_id = headers.get(_SESSION_HEADER)
        if session_id is None:
            return None
        session = self.sessions.get(session_id)
        now = trio.current_time()
        if session is not None and now - session.last_used > self.settings.http_session_idle_s:
            self._end_session(session_id)
            session = None
        if session is None or session.subject != identity.subject:
            raise _RefusalError(HttpNotFoundError, "no such session; send initialize to open a new one")
        version = headers.get("mcp-protocol-version")
        if version is not None and version != session.core.legacy_version:
            raise _RefusalError(
                InvalidRequestError, "MCP-Protocol-Version is not the version this session negotiated"
            )
        session.last_used = now
        return session

    def _open_session(self, core: SessionCore, identity: Identity) -> str:
        """A new session's id, after the sessions `admit_session` ends; 429 when it refuses."""
        now = trio.current_time()
        admission = admit_session(
            (SessionSeen(i, s.subject, s.last_used, bool(s.in_flight)) for i, s in self.sessions.items()),
            identity.subject,
            now,
            idle_s=self.settings.http_session_idle_s,
            per_subject=self.settings.http_max_sessions_per_subject,
            total=self.settings.http_max_sessions,
        )
        for session_id in admission.end:
            self._end_session(session_id)
        if admission.refusal is not None:
            raise _RefusalError(TooManyRequestsError, admission.refusal, [(b"retry-after", b"5")])
        session_id = secrets.token_urlsafe(32)
        self.sessions[session_id] = _LegacySession(core, identity.subject, now)
        return session_id

    def _end_session(self, session_id: str) -> None:
        session = self.sessions.pop(session_id)
        for scope in session.in_flight.values():
            scope.cancel()

    async def _delete(self, identity: Identity, headers: dict[str, str], send: Send) -> None:
        session_id = headers.get(_SESSION_HEADER)
        if session_id is None:
            raise _RefusalError(InvalidRequestError, "DELETE names the session to end in Mcp-Session-Id")
        session = self.sessions.get(session_id)
        if session is None or session.subject != identity.subject:
            raise _RefusalError(HttpNotFoundError, "no such session")
        self._end_session(session_id)
        await _send(send, 204, b"")

    # -- calls -----------------------------------------------------------------------------------

    async def _call(
        self,
        identity: Identity,
        core: SessionCore,
        session: _LegacySession | None,
        start: StartCall,
        started: float,
        era: HttpEra,
        accept: str | None,
        receive: Receive,
        send: Send,
    ) -> None:
        grants = self._grants()
        if start.kind is CallKind.TOOL:
            lacking = grants.tool(start.name).lacking(identity, start.arguments)
        else:
            lacking = grants.resource(start.name).lacking(identity)
        if lacking is not None:
            scope_needed = lacking
            problem = InsufficientScopeError(
                f"This token's scopes do not cover {start.name!r}; it needs the scope {scope_needed!r}."
            )
            answer = core.call_finished(start.key, CallRaised(problem))
            await self._audited(answer, started, identity)
            value = self._challenge(
                error="insufficient_scope",
                scope=scope_needed,
                description=f"{start.name} needs {scope_needed}",
            )
            await _send(send, 403, (answer.frame or b"").rstrip(b"\n"), [_JSON, (b"www-authenticate", value)])
            return
        try:
            ticket = self.runner.reserve(start, identity.subject)
        except ProblemError as exc:
            answer = core.call_finished(start.key, CallRaised(exc))
            await self._audited(answer, started, identity)
            await self._send_answer(send, answer, era)
            return
        call_scope = trio.CancelScope()
        if session is not None:
            session.in_flight[start.key] = call_scope
        span = self._open_span(start, started, identity)
        try:
            async with trio.open_nursery() as watchers:
                if era is HttpEra.MODERN:
                    # 2026-07-28: closing the response stream cancels the request. (2025-11-25: a
                    # disconnection SHOULD NOT be taken as cancellation; notifications/cancelled is.)
                    watchers.start_soon(self._watch_disconnect, receive, core, start.key, call_scope)
                if span is None or self.telemetry is None:
                    outcome = await self.runner.run(start, ticket, call_scope)
                else:
                    with self.telemetry.entered(span):
                        outcome = await self.runner.run(start, ticket, call_scope)
                watchers.cancel_scope.cancel()
        finally:
            if session is not None:
                session.in_flight.pop(start.key, None)
        answer = core.call_finished(start.key, outcome)
        await self._audited(answer, started, identity, span)
        if answer.frame is not None:
            await self._send_answer(send, answer, era)
        elif session is not None:
            # Cancelled by notifications/cancelled: no JSON-RPC message may go out for it, but
            # the POST still gets an HTTP answer in a form its transport allows (a closed
            # connection gets none).
            cancelled = answer_to_cancelled_call(accept)
            fields = [(name.encode("ascii"), value.encode("ascii")) for name, value in cancelled.headers]
            await _send(send, cancelled.status, b"", fields)

    async def _watch_disconnect(
        self, receive: Receive, core: SessionCore, key: IdKey, call_scope: trio.CancelScope
    ) -> None:
        """The body has been read: the next message is the client going away, which withdraws
        the call (2026-07-28, "Cancellation": closing the stream cancels the request)."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if core.withdraw(key) is not None:
                    call_scope.cancel()
                return

    # -- writing ---------------------------------------------------------------------------------

    async def _audited(
        self, answer: Answer, started: float, identity: Identity, span: CallSpan | None = None
    ) -> None:
        """Write the request's audit record and wait until it is on stderr: an answer a client
        holds has its record even when the replica is killed right after (a load balancer's
        replicas come and go). With telemetry on, the request's span and metrics first."""
        trace_id = None
        if self.telemetry is not None:
            headers = _request_headers.get({})
            trace_id = self.telemetry.answered(
                answer,
                started,
                transport="tcp",
                span=span,
                traceparent=headers.get("traceparent"),
                protocol_version=headers.get("mcp-protocol-version"),
                session_id=headers.get(_SESSION_HEADER),
                subject=identity.subject,
            )
        ticket = self.audit.answered(answer, started, subject=identity.subject, trace_id=trace_id)
        await self.audit.wait_written(ticket)

    def _open_span(self, start: StartCall, started: float, identity: Identity) -> CallSpan | None:
        """The call's span (telemetry on), its parent the `_meta` or header `traceparent`."""
        if self.telemetry is None:
            return None
        headers = _request_headers.get({})
        return self.telemetry.open_call(
            start,
            transport="tcp",
            started=started,
            traceparent=headers.get("traceparent"),
            session_id=headers.get(_SESSION_HEADER),
            subject=identity.subject,
        )

    async def _send_answer(
        self, send: Send, answer: Answer, era: HttpEra, extra: Iterable[tuple[bytes, bytes]] = ()
    ) -> None:
        frame = answer.frame or b""
        code: int | None = None
        has_id = True
        if answer.problem is not None and b'"error":' in frame:
            message = json.loads(frame)  # our own frame: which member it carries, and its code
            if "error" in message:
                code = message["error"]["code"]
                has_id = message.get("id") is not None
        status = status_of(
            code,
            has_id=has_id,
            era=era,
            outside_session=isinstance(answer.problem, SessionNotInitializedError),
            malformed_meta=isinstance(answer.problem, InvalidRequestMetaError),
        )
        await _send(send, status, frame.rstrip(b"\n"), [_JSON, *extra])

    async def _send_problem(
        self,
        send: Send,
        problem: ProblemError,
        request_id: Any,
        era: HttpEra,
        data_extra: dict[str, Any] | None = None,
    ) -> None:
        frame = encode_error(request_id, problem, omit_unknown_id=True, data_extra=data_extra)
        status = status_of(
            problem.jsonrpc_code,
            has_id=request_id is not None,
            era=era,
            malformed_meta=isinstance(problem, InvalidRequestMetaError),
        )
        logger.info("HTTP %d: %s", status, problem.slug)
        await _send(send, status, frame.rstrip(b"\n"), [_JSON])


async def _send(send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    fields = [*headers, (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})


async def _send_refusal(send: Send, refusal: _RefusalError) -> None:
    # Streamable HTTP: the body of a refusal MAY be a JSON-RPC error response without an id.
    frame = encode_error(None, refusal.problem, omit_unknown_id=True)
    await _send(send, refusal.status, frame.rstrip(b"\n"), [_JSON, *refusal.headers])


# -- serving ---------------------------------------------------------------------------------------


async def _wait_for_signal() -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        if early_signals.take():  # a signal that came while the server was starting
            await trio.lowlevel.checkpoint()
            return
        async for signum in signals:
            logger.info("signal %s: stopping", signal.Signals(signum).name)
            return


async def _serving_with(
    background: Sequence[Callable[[], Awaitable[object]]],
    serve: Callable[..., Awaitable[object]],
    *,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`serve(task_status=...)` with the tools' background tasks (the SQL role's re-audit) running
    beside it for as long as it serves (issue 40: over HTTP too, the audit runs while serving)."""
    async with trio.open_nursery() as tasks:
        for serve_background in background:
            tasks.start_soon(serve_background)
        bound = await tasks.start(_serve_then_cancel, serve, tasks.cancel_scope)
        task_status.started(bound)


async def _serve_then_cancel(
    serve: Callable[..., Awaitable[object]],
    scope: trio.CancelScope,
    *,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`serve` (started: its bound addresses are this task's), then cancel `scope` (the background
    tasks beside it) when it ends."""
    async with trio.open_nursery() as serving:
        task_status.started(await serving.start(serve))
    scope.cancel()


async def serve_http(
    settings: Settings,
    registry: Registry,
    *,
    fetch: JwksFetcher = fetch_jwks,
    shutdown: Callable[[], Awaitable[None]] = _wait_for_signal,
    telemetry: Telemetry | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over HTTP until `shutdown` returns (SIGINT/SIGTERM), then let requests finish for
    MCP_DRAIN_GRACE_S. `task_status` gets the bound addresses.

    Limits: headers at most MCP_HTTP_MAX_HEADER_BYTES and complete within MCP_HTTP_IDLE_TIMEOUT_S
    of the connection (or of the previous answer); the body as `HttpApp` reads it.
    """
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    host = f"[{settings.http_host}]" if ":" in settings.http_host else settings.http_host
    config.bind = [f"{host}:{settings.http_port}"]
    config.h11_max_incomplete_size = settings.http_max_header_bytes
    config.h2_max_header_list_size = settings.http_max_header_bytes
    config.keep_alive_timeout = settings.http_idle_timeout_s
    config.graceful_timeout = settings.drain_grace_s
    config.include_server_header = False
    config.accesslog = None
    config.errorlog = logging.getLogger("mcp_suite.http")
    async with trio.open_nursery() as nursery:
        # The verifier's key-set fetches run in this nursery, off every request's path.
        verifier = TokenVerifier(settings, nursery, fetch=fetch) if settings.http_auth == "jwt" else None
        app = HttpApp(settings, registry, verifier, telemetry)
        binds: list[str] = await nursery.start(
            _serving_with,
            registry.background,
            functools.partial(serve, app, config, shutdown_trigger=shutdown, mode="asgi"),  # type: ignore[arg-type]  # hypercorn's Framework union
        )
        auth = (
            f"bearer tokens of {settings.http_issuer}"
            if verifier is not None
            else "NONE (MCP_HTTP_AUTH=none, loopback only): every caller may call every tool"
        )
        logger.info(
            "serving over HTTP at %s with tools: %s; authorization: %s",
            ", ".join(b + settings.http_path for b in binds),
            ", ".join(registry.tools) or "(none)",
            auth,
        )
        task_status.started(binds)
