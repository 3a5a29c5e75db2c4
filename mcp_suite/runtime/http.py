"""MCP over Streamable HTTP: an ASGI app served by hypercorn's trio worker, carrying the exchange.

    ASGI head ─▶ exchange.head ─▶ token verified ─▶ request.authenticated ─▶ body read (capped, timed)
              ─▶ request.body ─▶ Reply | RunCall (CallRunner, cancel scope, disconnect) ─▶ call_finished

Every HTTP decision (statuses, sessions, quotas, scopes and their wording) is `protocol.exchange`'s;
this module only moves bytes between hypercorn and the exchange, verifies tokens, runs calls in
their cancel scopes and watches the disconnect; `runtime.recorder` records each answer (audit
record, span, metrics), its record written before the answer goes out. A failure outside a call is
answered 500 as the house's internal error, with an incident id (its traceback on stderr).
"""

from __future__ import annotations

import functools
import logging
import signal
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import trio

from mcp_suite.caller import Caller, current_caller
from mcp_suite.problems import ProblemError
from mcp_suite.protocol.authz import ANONYMOUS, Identity, TokenRejectedError
from mcp_suite.protocol.core import Answer, CallOutcome, CallRaised
from mcp_suite.protocol.exchange import (
    CallRef,
    HttpExchange,
    HttpRequest,
    ReadBody,
    Reply,
    RunCall,
    internal_error_reply,
)
from mcp_suite.protocol.http import method_for_log
from mcp_suite.runtime import early_signals
from mcp_suite.runtime.calls import SECRET_IDS, CallRunner, catalogue_of, incident
from mcp_suite.runtime.http_auth import JwksFetcher, KeysUnavailableError, TokenVerifier, fetch_jwks
from mcp_suite.runtime.http_conn import serve_connections
from mcp_suite.runtime.log_sink import logger
from mcp_suite.runtime.recorder import NO_TELEMETRY, Asker, Recorder, Recording, Watcher
from mcp_suite.runtime.talk import CallTalk, Waiters
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import Registry

__all__ = ["HttpApp", "serve_http"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class HttpApp:
    """The ASGI application of `mcp-suite serve-http` (one per process)."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        verifier: TokenVerifier | None,
        telemetry: Watcher = NO_TELEMETRY,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.verifier = verifier
        # A caller's share of the call slots; without authorization every caller is one
        # (`anonymous`), who holds them all, as on stdio.
        share = settings.http_max_calls_per_identity if verifier is not None else None
        self.runner = CallRunner(settings, registry, per_caller=share)
        self.recorder = Recorder("tcp", telemetry)
        self.exchange = HttpExchange(
            settings,
            catalogue_of(registry),
            ids=SECRET_IDS,
            ready=registry.ready,
            authenticates=verifier is not None,
            audit_room=self.recorder.admit,
            sources=lambda: [(state.name, state.condition) for state in registry.source_states()],
        )
        # The cancel scopes of legacy sessions' calls in flight, by the exchange's name for each.
        self._calls: dict[CallRef, trio.CancelScope] = {}
        # The calls waiting for their client's answer to a request of the server's.
        self.waiters = Waiters()
        self.recorder.watch_http(
            lambda: self.exchange.statistics().sessions,
            lambda: self.exchange.statistics().callers_in_progress,
        )

    # -- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # noqa: ASYNC910  # a failure begun after the answer's start is only logged: that start was the checkpoint
        if scope["type"] != "http":  # websocket: not served
            await trio.lowlevel.checkpoint()
            return
        started = False

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self._http(scope, receive, tracked)
        except Exception as exc:  # noqa: BLE001  # the one exception → wire boundary of a request
            problem = incident(exc, f"HTTP {method_for_log(scope['method'])}")
            if not started:  # an answer begun cannot be taken back; the log has the incident
                await self._reply(send, internal_error_reply(problem))

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = self.exchange.head(scope["method"], scope["path"], scope["headers"])
        if isinstance(request, Reply):
            await self._reply(send, request)
            return
        identity = await self._authenticate(request)
        if isinstance(identity, Reply):
            await self._reply(send, identity)
            return
        asker = self.recorder.asked_over_http(identity.subject, request.headers)  # this task's
        # The identity map's input (the SQL tools read it): the verified subject and claims.
        current_caller.set(Caller(identity.subject, identity.claims))
        try:
            step = request.authenticated(identity, trio.current_time())
            if isinstance(step, ReadBody):
                body = await self._read_body(request, step, receive)
                if body is None:
                    return  # the client went away while sending
                if isinstance(body, Reply):
                    await self._reply(send, body)
                    return
                started = time.perf_counter()
                after = request.body(body, trio.current_time())
                if isinstance(after, Reply) and after.answered is not None:
                    assert request.core is not None  # the core matched the answer
                    self.waiters.deliver(request.core.talk, after.answered)
                if isinstance(after, RunCall):
                    await self._call(request, identity, after, started, asker, receive, send)
                    return
                await self._reply(send, request.sending(after), self.recorder.request(started, asker))
                return
            await self._reply(send, request.sending(step))
        finally:
            request.finished()

    async def _authenticate(self, request: HttpRequest) -> Identity | Reply:
        if self.verifier is None or request.token is None:
            await trio.lowlevel.checkpoint()
            return ANONYMOUS
        try:
            return await self.verifier.verify(request.token)
        except TokenRejectedError as exc:
            reply = request.token_rejected(str(exc))
        except KeysUnavailableError as exc:
            reply = request.keys_unavailable(str(exc))
        await trio.lowlevel.checkpoint()  # a token refused before `verify` awaited anything
        return reply

    async def _read_body(
        self, request: HttpRequest, read: ReadBody, receive: Receive
    ) -> bytes | Reply | None:
        """The request body, refused as soon as it passes `read.cap`, or when it is not all there
        within MCP_HTTP_BODY_TIMEOUT_S; None when the client went away."""
        chunks: list[bytes] = []
        size = 0
        with trio.move_on_after(self.settings.http_body_timeout_s):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > read.cap:
                    return request.too_large()
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        return request.timed_out()

    # -- calls -----------------------------------------------------------------------------------

    async def _call(
        self,
        request: HttpRequest,
        identity: Identity,
        run: RunCall,
        started: float,
        asker: Asker,
        receive: Receive,
        send: Send,
    ) -> None:
        start = run.start
        try:
            ticket = self.runner.reserve(start, identity.subject)
        except ProblemError as exc:
            await self._finished(request, CallRaised(exc), self.recorder.request(started, asker), send)
            return
        call_scope = trio.CancelScope()
        if run.ref is not None:
            self._calls[run.ref] = call_scope
        record = self.recorder.call(start, started, asker)
        stream = _EventStream(send, request.event_stream_headers())
        assert request.core is not None
        talk = CallTalk(
            request.core.talk,
            start.key,
            stream.send,
            self.waiters,
            progress=start.progress_token is not None,
            interval_s=self.settings.progress_interval_s,
        )
        try:
            async with trio.open_nursery() as watchers:
                if run.watch_disconnect:
                    watchers.start_soon(self._watch_disconnect, receive, request, call_scope)
                with record:
                    outcome = await self.runner.run(start, ticket, call_scope, talk)
                watchers.cancel_scope.cancel()
        finally:
            if run.ref is not None:
                self._calls.pop(run.ref, None)
        await self._finished(request, outcome, record, send, stream)

    async def _finished(
        self,
        request: HttpRequest,
        outcome: CallOutcome,
        record: Recording,
        send: Send,
        stream: _EventStream | None = None,
    ) -> None:
        reply = request.call_finished(outcome)
        if isinstance(reply, Answer):  # withdrawn by a closed connection: audited, nothing sent
            await self.recorder.wait_written(record.answered(reply))
            return
        # Counted against the caller's unread answer bytes until written (`request.finished`).
        reply = request.sending(reply)
        if stream is not None and stream.started:
            # The call said something before its result: the result is the stream's last event.
            # A result withheld by the unread-bytes bound (429) cannot be one event: the stream
            # ends without it, as a cancelled call's does.
            answer = reply.answer
            assert answer is not None  # a call's reply always carries its answer
            if reply.log is not None:
                logger.info("%s", reply.log)
            await self.recorder.wait_written(record.answered(answer))
            withheld = reply.body != (answer.frame or b"").rstrip(b"\n")
            await stream.end(b"" if withheld else reply.body)
            return
        await self._reply(send, reply, record)

    async def _watch_disconnect(
        self, receive: Receive, request: HttpRequest, call_scope: trio.CancelScope
    ) -> None:
        """The body has been read: the next message is the client going away, which withdraws
        the call (2026-07-28, "Cancellation": closing the stream cancels the request)."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if request.disconnected():
                    call_scope.cancel()
                return

    # -- writing ---------------------------------------------------------------------------------

    async def _reply(self, send: Send, reply: Reply, record: Recording | None = None) -> None:
        """Carry out a reply: cancel the calls of the sessions it ended, log its refusal, record
        its answer (`record`: the audit record written before the answer goes out, so an answer a
        client holds has its record even when the replica is killed right after), then send it."""
        for ref in reply.cancel:
            call_scope = self._calls.get(ref)
            if call_scope is not None:
                call_scope.cancel()
        if reply.log is not None:
            logger.info("%s", reply.log)
        if reply.answer is not None and record is not None:
            await self.recorder.wait_written(record.answered(reply.answer))
        fields = [*reply.headers, (b"content-length", str(len(reply.body)).encode("ascii"))]
        await send({"type": "http.response.start", "status": reply.status, "headers": fields})
        await send({"type": "http.response.body", "body": reply.body})


class _EventStream:
    """The event-stream answer to one call's POST, begun by the first thing the call says before
    its result (a client that does not take one hears nothing before the result)."""

    __slots__ = ("_head", "_send", "started")

    def __init__(self, send: Send, head: Sequence[tuple[bytes, bytes]] | None) -> None:
        self._send = send
        self._head = head
        self.started = False

    async def send(self, frame: bytes) -> bool:
        """`frame` as one event; False (nothing sent) when the client takes no event stream."""
        if self._head is None:
            await trio.lowlevel.checkpoint()
            return False
        if not self.started:
            self.started = True
            await self._send({"type": "http.response.start", "status": 200, "headers": list(self._head)})
        await self._send({"type": "http.response.body", "body": _event(frame), "more_body": True})
        return True

    async def end(self, frame: bytes) -> None:
        """The last event (the call's result; none for a call withdrawn), then the end of the answer."""
        await self._send({"type": "http.response.body", "body": _event(frame) if frame else b""})


def _event(frame: bytes) -> bytes:
    # One JSON-RPC message per event (a frame is one line of compact JSON: no newline inside).
    return b"event: message\ndata: " + frame.rstrip(b"\n") + b"\n\n"


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
    telemetry: Watcher = NO_TELEMETRY,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over HTTP until `shutdown` returns (SIGINT/SIGTERM), then let requests finish for
    MCP_DRAIN_GRACE_S. `task_status` gets the bound addresses.

    Limits: headers at most MCP_HTTP_MAX_HEADER_BYTES and complete within MCP_HTTP_IDLE_TIMEOUT_S
    of the connection (or of the previous answer); the body as `HttpApp` reads it; connections,
    HTTP/2 and writes as `serve_connections` bounds them.
    """
    from hypercorn.config import Config

    config = Config()
    host = f"[{settings.http_host}]" if ":" in settings.http_host else settings.http_host
    config.bind = [f"{host}:{settings.http_port}"]
    config.h11_max_incomplete_size = settings.http_max_header_bytes
    config.keep_alive_timeout = settings.http_idle_timeout_s
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
            functools.partial(serve_connections, app, config, settings, shutdown=shutdown),
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
