"""One MCP session over a pair of byte streams: reader → dispatcher → call tasks → single writer.

    stdin ─▶ reader ──frames──▶ dispatcher ──responses──▶ writer ─▶ stdout
                                   │  ▲
                          spawns   ▼  │ responses
                              tools/call tasks (one CancelScope each, by request id)

Both channels are bounded, so a flood, a client that never reads, or a never-ending line cannot
grow memory: back-pressure stops the reader instead. The dispatcher is the one place where
exceptions become wire messages. EOF, the first SIGINT/SIGTERM, or a failed write start the drain
(docs/wire.md); a second signal cancels in-flight calls at once.
"""

from __future__ import annotations

import gc
import math
import signal
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import trio

from mcp_suite import SERVER_NAME, __version__
from mcp_suite.entry import take_early_signals
from mcp_suite.problems import (
    ExecutionTimeoutError,
    InternalServerError,
    InvalidArgumentsError,
    InvalidRequestError,
    ProblemError,
    echo,
)
from mcp_suite.protocol import mcp
from mcp_suite.protocol.framing import Frame, LineDecoder
from mcp_suite.protocol.jsonrpc import (
    ClientResponse,
    JsonRpcError,
    Notification,
    Request,
    RequestId,
    decode_message,
    encode_error,
    encode_result,
    encode_tool_success,
)
from mcp_suite.protocol.sanitize import sanitize_arguments
from mcp_suite.runtime.audit import AuditLog, logger
from mcp_suite.runtime.limiter import CallLimiter, Ticket
from mcp_suite.settings import Settings
from mcp_suite.tools.base import ResourceSpec, ToolSpec
from mcp_suite.tools.registry import Registry

if TYPE_CHECKING:
    import pydantic

__all__ = ["Session", "serve_session"]

_READ_CHUNK: Final = 65_536
_WRITE_BATCH_BYTES: Final = 262_144
# The least time the final flush of stdout gets. Shutdown waits are bounded (STYLE habit 2): a client
# that never reads stdout cannot hold the process after the drain, nor after a second signal.
_SHUTDOWN_FLUSH_S: Final = 1.0

IdKey = tuple[str, RequestId]


def _id_key(request_id: RequestId) -> IdKey:
    return ("i", request_id) if isinstance(request_id, int) else ("s", request_id)


def _lenient_keys(request_id: object) -> list[IdKey]:
    """`"7"` cancels 7 and 7 cancels `"7"` (docs/wire.md): exact form first, then the other one."""
    if isinstance(request_id, bool):
        return []
    if isinstance(request_id, int):
        return [("i", request_id), ("s", str(request_id))]
    if isinstance(request_id, str):
        keys: list[IdKey] = [("s", request_id)]
        text = request_id.strip()
        if text and (text.isdigit() or (text[0] == "-" and text[1:].isdigit())) and len(text) < 20:
            keys.append(("i", int(text)))
        return keys
    return []


class _InBand(Exception):  # noqa: N818  # a carrier, never raised past the session
    """Carries a tool's problem to the in-band (`isError: true`) result path."""

    def __init__(self, problem: ProblemError) -> None:
        super().__init__(problem.slug)
        self.problem = problem


@dataclass(eq=False, slots=True)
class _InFlight:
    request_id: RequestId
    scope: trio.CancelScope
    ticket: Ticket | None = None
    client_cancelled: bool = False


@dataclass(slots=True)
class Session:
    """State of one session. Create with `serve_session`; tests may build one directly."""

    settings: Settings
    registry: Registry
    handle_signals: bool = False
    audit: AuditLog = field(default_factory=AuditLog)
    lifecycle: mcp.Lifecycle = field(init=False)
    limiter: CallLimiter = field(init=False)
    in_flight: dict[IdKey, _InFlight] = field(default_factory=dict)
    all_idle: trio.Event = field(default_factory=trio.Event)
    _tool_descriptions: list[mcp.ToolDescription] = field(default_factory=list)
    _descriptions_lock: threading.Lock = field(default_factory=threading.Lock)
    _reader_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    _out_send: trio.MemorySendChannel[bytes] | None = None
    _root: trio.Nursery | None = None
    _warm_up_due: bool = False
    # Set when the warm-up has ended, failed, or was abandoned at shutdown (tests wait on it).
    warmed_up: trio.Event = field(default_factory=trio.Event)
    _stopping: bool = False
    _served: bool = False

    def __post_init__(self) -> None:
        self.lifecycle = mcp.Lifecycle(resources=bool(self.registry.resources))
        self.limiter = CallLimiter(
            slots=self.settings.max_concurrency,
            max_waiters=self.settings.max_queued_calls,
            wait_s=self.settings.queue_wait_s,
        )
        self.all_idle.set()

    def tool_descriptions(self) -> list[mcp.ToolDescription]:
        """The advertised tools, built once (by the warm-up, or by the first `tools/list`): the
        models and their JSON Schemas are not needed to answer `initialize`. Thread-safe."""
        if not self._tool_descriptions:
            with self._descriptions_lock:
                if not self._tool_descriptions:
                    self._tool_descriptions = [
                        mcp.ToolDescription(
                            name=tool.name,
                            title=tool.title,
                            description=tool.description,
                            input_schema=mcp.model_json_schema(tool.args_model),
                            output_schema=mcp.model_json_schema(tool.result_model),
                        )
                        for tool in self.registry.tools.values()
                    ]
        return self._tool_descriptions

    # ---------------------------------------------------------------------------------------
    # warm-up

    async def _warm_up(self) -> None:
        """After the `initialize` answer is written: build what calls need, in a worker thread.

        Every tool's models and the advertised schemas, then each toolset's own steps (the SQL
        policy's parsers). Nothing here is required: a call that comes first does its part itself.
        Cancellation: abandoned at shutdown (imports cannot be interrupted; nothing waits for them).
        """
        try:
            await trio.to_thread.run_sync(self._warm_up_sync, abandon_on_cancel=True)
        finally:
            self.warmed_up.set()

    def _warm_up_sync(self) -> None:
        started = time.perf_counter()
        try:
            for step in self.registry.warm_up:
                step()
            self.tool_descriptions()
        except Exception:  # noqa: BLE001  # a call that needs the failed step reports it itself
            if self._served:  # the session ended and closed the tools under it: nothing to report
                logger.debug("warm-up stopped: the session has ended")
            else:
                logger.warning("warm-up failed; calls will load what they need", exc_info=True)
            return
        # What the warm-up loaded lives as long as the process: out of the collector's view.
        gc.freeze()
        logger.debug("warm-up done in %.0f ms", (time.perf_counter() - started) * 1000)

    # ---------------------------------------------------------------------------------------
    # top level

    async def serve(self, stdin: trio.abc.ReceiveStream, stdout: trio.abc.SendStream) -> None:
        """Serve until EOF or a signal, then drain; returns when everything has been flushed.

        Limits: the final flush waits at most max(drain grace, 1 s) for a client that stopped reading,
        and a second signal ends everything within 1 s.

        Cancellation: cancelling the caller cancels everything at once (no drain).
        """
        frames_send, frames_recv = trio.open_memory_channel[list[Frame | JsonRpcError]](
            self.settings.inbound_channel_size
        )
        out_send, out_recv = trio.open_memory_channel[bytes](self.settings.outbound_channel_size)
        self._out_send = out_send
        try:
            async with trio.open_nursery() as root:
                self._root = root
                if self.handle_signals:
                    root.start_soon(self._watch_signals, root.cancel_scope)
                root.start_soon(self._read, stdin, frames_send)
                async with trio.open_nursery() as io:
                    io.start_soon(self._write, stdout, out_recv, root.cancel_scope)
                    async with out_send:
                        await self._dispatch(frames_recv)
                    # Flush what is left, but not for ever: the client may have stopped reading.
                    flush_s = max(self.settings.drain_grace_s, _SHUTDOWN_FLUSH_S)
                    io.cancel_scope.deadline = trio.current_time() + flush_s
                root.cancel_scope.cancel()  # the signal watcher, and a reader stopped mid-way
        finally:
            # Tools close once this returns; a warm-up still running (abandoned) may then fail
            # on a closed tool: that is expected, not worth a warning.
            self._served = True

    # ---------------------------------------------------------------------------------------
    # reader

    async def _read(
        self,
        stdin: trio.abc.ReceiveStream,
        frames_send: trio.MemorySendChannel[list[Frame | JsonRpcError]],
    ) -> None:
        """Read chunks, split them into frames, pass each chunk's frames on as one batch.

        Limits: a batch holds at most one chunk's worth of frames (64 KiB), or one oversized marker.
        """
        decoder = LineDecoder(self.settings.max_frame_bytes)
        async with frames_send:
            with self._reader_scope:
                while True:
                    try:
                        chunk = bytes(await stdin.receive_some(_READ_CHUNK))
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        chunk = b""
                    if not chunk:
                        decoder.feed_eof()
                        break
                    batch: list[Frame | JsonRpcError] = []
                    for event in decoder.feed(chunk):
                        if isinstance(event, Frame):
                            batch.append(event)
                        else:
                            batch.append(self._oversized())
                    if batch:
                        await frames_send.send(batch)
        logger.debug("reader finished")

    def _oversized(self) -> JsonRpcError:
        error = JsonRpcError(
            f"The message is longer than {self.settings.max_frame_bytes} bytes and was discarded; "
            "send one JSON-RPC message per line, each at most that long.",
            jsonrpc_code=-32600,
            request_id=None,
        )
        error.metadata["max_frame_bytes"] = self.settings.max_frame_bytes
        error.wire_data["max_frame_bytes"] = self.settings.max_frame_bytes  # docs/wire.md
        return error

    # ---------------------------------------------------------------------------------------
    # writer

    async def _write(
        self,
        stdout: trio.abc.SendStream,
        out_recv: trio.MemoryReceiveChannel[bytes],
        root_scope: trio.CancelScope,
    ) -> None:
        async with out_recv:
            async for first in out_recv:
                batch = [first]
                size = len(first)
                while size < _WRITE_BATCH_BYTES:
                    try:
                        more = out_recv.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                    batch.append(more)
                    size += len(more)
                try:
                    await stdout.send_all(b"".join(batch))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    # The client is gone (docs/wire.md): nobody can receive anything any more.
                    logger.info("stdout closed by the client; shutting down")
                    root_scope.cancel()
                    return
                if self._warm_up_due and self._root is not None:
                    # The `initialize` answer is out: now load what calls need (off the handshake).
                    self._warm_up_due = False
                    self._root.start_soon(self._warm_up)

    async def _send(self, frame: bytes) -> None:  # noqa: ASYNC910  # yields only when it must wait
        """Queue `frame` for the writer; waits only while the outbound channel is full."""
        assert self._out_send is not None
        try:
            try:
                # Most of the time there is room: no schedule point (a whole loop pass per call).
                self._out_send.send_nowait(frame)
            except trio.WouldBlock:
                await self._out_send.send(frame)  # back-pressure from a slow client
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The writer is gone and the session is ending; nobody can receive this.
            await trio.lowlevel.checkpoint()

    # ---------------------------------------------------------------------------------------
    # signals

    async def _watch_signals(self, root_scope: trio.CancelScope) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            seen = 0
            # Signals that arrived while the process was still starting count the same.
            for signum in take_early_signals():
                seen += 1
                self._on_signal(seen, signum, root_scope)
            async for signum in signals:
                seen += 1
                self._on_signal(seen, signum, root_scope)

    def _on_signal(self, seen: int, signum: int, root_scope: trio.CancelScope) -> None:
        if seen == 1:
            logger.info("signal %s: draining", signal.Signals(signum).name)
            self._reader_scope.cancel()
        else:
            logger.info("second signal: cancelling in-flight calls")
            self.cancel_all()
            # Their answers get one short flush; nothing (not even a writer blocked on a client
            # that never reads) holds the process longer.
            root_scope.deadline = min(root_scope.deadline, trio.current_time() + _SHUTDOWN_FLUSH_S)

    # ---------------------------------------------------------------------------------------
    # dispatcher

    async def _dispatch(self, frames_recv: trio.MemoryReceiveChannel[list[Frame | JsonRpcError]]) -> None:
        async with trio.open_nursery() as calls:
            async with frames_recv:
                async for batch in frames_recv:
                    # Inline answers of one batch travel to the writer together, in arrival order.
                    replies = [self._handle_frame(item, calls) for item in batch]
                    out = b"".join(reply for reply in replies if reply is not None)
                    if out:
                        await self._send(out)
            # Drain: stop reading (done), let in-flight calls finish for the grace period.
            if self.in_flight:
                logger.info("draining %d in-flight call(s)", len(self.in_flight))
                with trio.move_on_after(self.settings.drain_grace_s):
                    await self.all_idle.wait()
                if self.in_flight:
                    logger.info("grace over: cancelling %d call(s)", len(self.in_flight))
                    self.cancel_all()

    def _handle_frame(self, item: Frame | JsonRpcError, calls: trio.Nursery) -> bytes | None:
        """One frame in, at most one inline reply out. Never raises for anything the client sent."""
        started = time.perf_counter()
        if isinstance(item, JsonRpcError):
            self._audit_bad(item, started)
            return self._error_frame(None, item, item.jsonrpc_code or -32600)
        try:
            message = decode_message(item.data, max_depth=self.settings.max_json_depth)
        except JsonRpcError as exc:
            self._audit_bad(exc, started)
            return self._error_frame(exc.request_id, exc, exc.jsonrpc_code or -32600)
        if isinstance(message, ClientResponse):
            return None
        if isinstance(message, Notification):
            self._handle_notification(message)
            return None
        return self._handle_request(message, calls, started)

    def _audit_bad(self, problem: JsonRpcError, started: float) -> None:
        self.audit.request(
            request_id=problem.request_id,
            method="",
            outcome="error",
            problem=problem.slug,
            started=started,
        )

    def _handle_notification(self, note: Notification) -> None:
        if note.method == "notifications/cancelled":
            request_id = note.params.get("requestId")
            for key in _lenient_keys(request_id):
                entry = self.in_flight.get(key)
                if entry is not None:
                    entry.client_cancelled = True
                    entry.scope.cancel()
                    break
        # notifications/initialized is accepted; unknown notifications are ignored (docs/wire.md).

    def _handle_request(self, request: Request, calls: trio.Nursery, started: float) -> bytes | None:
        route = self.lifecycle.route(request.method)
        problem: ProblemError | None = None
        result: dict[str, Any] | None = None
        if route is mcp.Route.UNKNOWN:
            problem = mcp.unknown_method(request.method)
        elif route is mcp.Route.NOT_INITIALIZED:
            problem = mcp.not_initialized(request.method)
        elif route is mcp.Route.CALL:
            reply, _ = self._start_call(request, calls, started)
            return reply  # None: the task answers; otherwise already audited
        else:
            try:
                result = self._inline(request)
            except ProblemError as exc:
                problem = exc
        if problem is not None:
            reply = self._error_frame(request.id, problem, problem.jsonrpc_code or -32603)
        else:
            assert result is not None
            reply = encode_result(request.id, result)
        self.audit.request(
            request_id=request.id,
            method=request.method,
            outcome="error" if problem else "ok",
            problem=problem.slug if problem else None,
            started=started,
        )
        return reply

    def _error_frame(self, request_id: RequestId | None, problem: ProblemError, code: int) -> bytes:
        return encode_error(request_id, problem, code=code)

    # ---------------------------------------------------------------------------------------
    # inline methods

    def _inline(self, request: Request) -> dict[str, Any]:
        method = request.method
        if method == "ping":
            return {}
        if method == "initialize":
            version = self.lifecycle.initialize(request.params)
            self._warm_up_due = True
            return mcp.initialize_result(
                version=version,
                server_name=SERVER_NAME,
                server_version=__version__,
                resources=bool(self.registry.resources),
            )
        if method == "tools/list":
            return mcp.tools_list_result(self.tool_descriptions(), request.params)
        if method == "resources/list":
            return {"resources": [_resource_entry(r) for r in self.registry.resources.values()]}
        if method == "resources/templates/list":
            return {"resourceTemplates": []}
        raise mcp.unknown_method(method)  # pragma: no cover  # route() admits only the above

    async def _read_resource(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str) or uri not in self.registry.resources:
            raise InvalidArgumentsError(
                'resources/read needs the "uri" of a resource that resources/list shows.',
                invalid_params=["uri"],
                jsonrpc_code=-32602,
            )
        resource = self.registry.resources[uri]
        with trio.fail_after(self.settings.call_deadline_s):
            try:
                text = await resource.read()
            except ProblemError:
                raise
            except Exception as exc:  # noqa: BLE001  # the one exception → wire boundary
                raise self._incident(exc, f"resources/read {uri}") from None
        return {"contents": [{"uri": uri, "mimeType": resource.mime_type, "text": text}]}

    # ---------------------------------------------------------------------------------------
    # tools/call

    def _start_call(
        self, request: Request, calls: trio.Nursery, started: float
    ) -> tuple[bytes | None, str | None]:
        """Check the envelope, apply the synchronous guardrails and spawn the task.

        Returns the reply to send now (a JSON-RPC error, or an in-band refusal from the sanitizer or
        the limiter) or None when a task was spawned and will answer.
        """
        key = _id_key(request.id)
        if key in self.in_flight:
            problem: ProblemError = InvalidRequestError(
                "A call with this id is still running; use a new id for each request."
            )
            return self._refuse(request, problem, None, started, in_band=False), None
        if request.method == "resources/read":
            params = request.params
            rid = request.id

            async def read_resource(scope: trio.CancelScope) -> bytes:
                return encode_result(rid, await self._read_resource(params))

            self._spawn(calls, key, request, None, read_resource, None, None, started)
            return None, None
        try:
            call = mcp.parse_call_params(request.params)
        except ProblemError as exc:
            return self._refuse(request, exc, None, started, in_band=False), None
        tool = self.registry.tools.get(call.name)
        if tool is None:
            return self._refuse(request, mcp.unknown_tool(call.name), call.name, started, in_band=False), None
        excerpt = call.arguments  # the audit cuts its own excerpt, only when it logs
        settings = self.settings
        try:
            # 1. structural sanitizer, 2. a place in the FIFO line (docs/wire.md, in this order)
            sanitize_arguments(
                call.arguments, max_depth=settings.arg_max_depth, max_items=settings.arg_max_items
            )
            ticket = self.limiter.reserve()
        except ProblemError as exc:
            return self._refuse(request, exc, tool.name, started, in_band=True, excerpt=excerpt), tool.name

        request_id = request.id

        async def run_tool(scope: trio.CancelScope) -> bytes:
            try:
                return encode_tool_success(
                    request_id, await self._guarded_call(tool, call.arguments, ticket, scope)
                )
            except ProblemError as exc:
                if exc.jsonrpc_code is not None:
                    raise  # a fault of the infrastructure (database-unavailable): a JSON-RPC error
                # In-band: the tool ran or was refused because of what the caller asked (docs/wire.md).
                raise _InBand(exc) from None

        self._spawn(calls, key, request, tool.name, run_tool, excerpt, ticket, started)
        return None, tool.name

    def _refuse(
        self,
        request: Request,
        problem: ProblemError,
        tool_name: str | None,
        started: float,
        *,
        in_band: bool,
        excerpt: Any = None,
    ) -> bytes:
        if in_band:
            reply = encode_result(request.id, mcp.call_error_result(problem))
        else:
            reply = self._error_frame(request.id, problem, problem.jsonrpc_code or -32603)
        self.audit.request(
            request_id=request.id,
            method=request.method,
            tool=tool_name,
            outcome="error",
            problem=problem.slug,
            started=started,
            arguments=excerpt,
        )
        return reply

    def _spawn(
        self,
        calls: trio.Nursery,
        key: IdKey,
        request: Request,
        tool_name: str | None,
        work: Callable[[trio.CancelScope], Awaitable[bytes]],
        excerpt: Any,
        ticket: Ticket | None,
        started: float,
    ) -> None:
        entry = _InFlight(request_id=request.id, scope=trio.CancelScope(), ticket=ticket)
        self.in_flight[key] = entry
        if self.all_idle.is_set():
            self.all_idle = trio.Event()
        calls.start_soon(self._run_task, entry, key, request.method, tool_name, work, excerpt, started)

    async def _run_task(
        self,
        entry: _InFlight,
        key: IdKey,
        method: str,
        tool_name: str | None,
        work: Callable[[trio.CancelScope], Awaitable[bytes]],
        excerpt: Any,
        started: float,
    ) -> None:
        problem: ProblemError | None = None
        response: bytes | None = None
        outcome = "ok"
        try:
            with entry.scope:
                try:
                    response = await work(entry.scope)
                except _InBand as exc:
                    problem = exc.problem
                    response = encode_result(entry.request_id, mcp.call_error_result(problem))
                    outcome = "error"
                except ProblemError as exc:
                    problem = exc
                    response = encode_error(entry.request_id, exc, code=exc.jsonrpc_code or -32603)
                    outcome = "error"
                except Exception as exc:  # noqa: BLE001  # the one exception → wire boundary
                    problem = self._incident(exc, f"{method} {tool_name or ''}".strip())
                    response = encode_error(entry.request_id, problem, code=-32603)
                    outcome = "error"
            if entry.scope.cancelled_caught and response is None:
                if entry.client_cancelled:
                    outcome = "cancelled"  # no response at all (docs/wire.md)
                elif not self._stopping and trio.current_time() >= entry.scope.deadline:
                    # The call's deadline (docs/wire.md), set on this same scope by `_guarded_call`:
                    # in-band, like every refusal caused by what the caller asked for.
                    outcome = "error"
                    problem = self._timed_out()
                    response = encode_result(entry.request_id, mcp.call_error_result(problem))
                else:
                    outcome = "error"
                    problem = InternalServerError(
                        "The server shut down before this call finished; it was cancelled."
                    )
                    response = encode_error(entry.request_id, problem, code=-32603)
        finally:
            if entry.ticket is not None:
                self.limiter.release(entry.ticket)  # also when the task was cancelled before it ran
            del self.in_flight[key]
            if not self.in_flight:
                self.all_idle.set()
        if response is not None and self._stopping:
            # During shutdown a client that stopped reading must not hold the process: bound it.
            with trio.move_on_after(1.0):
                await self._send(response)
        elif response is not None:
            await self._send(response)
        else:
            await trio.lowlevel.checkpoint()
        self.audit.request(
            request_id=entry.request_id,
            method=method,
            tool=tool_name,
            outcome=outcome,
            problem=problem.slug if problem else None,
            started=started,
            arguments=excerpt,
            incident=problem.metadata.get("incident") if problem else None,
        )

    def cancel_all(self) -> None:
        """Cancel every in-flight call; each still gets a (shutdown) response."""
        self._stopping = True
        for entry in list(self.in_flight.values()):
            entry.scope.cancel()

    async def _guarded_call(
        self, tool: ToolSpec, arguments: Any, ticket: Ticket, scope: trio.CancelScope
    ) -> bytes:
        """The guardrails of docs/wire.md that wait: the slot (FIFO, bounded wait), the deadline, the schema.

        The sanitizer and the place in line were taken synchronously by the dispatcher. `scope` is
        the call's own cancel scope: the deadline is set on it, so a call has exactly one scope, and
        `_run_task` turns a deadline that fired into `execution-timeout`.
        """
        # 2. concurrency limiter: wait for our turn (_run_task releases the ticket)
        await self.limiter.wait(ticket)
        # 3. deadline, counted from the moment the call holds a slot
        scope.deadline = trio.current_time() + self.settings.call_deadline_s
        # 4. strict argument schema (models not loaded yet: load them off the event loop)
        if not tool.models_loaded:
            await trio.to_thread.run_sync(tool.load_models)
        args = _validate(tool, arguments)
        result = await tool.call(args)
        return mcp.structured_json(result)

    def _timed_out(self) -> ExecutionTimeoutError:
        deadline_s = self.settings.call_deadline_s
        return ExecutionTimeoutError(
            f"The call did not finish within {_seconds(deadline_s)}; ask for less work.",
            metadata={"deadline_s": deadline_s},
        )

    def _incident(self, exc: BaseException, where: str) -> InternalServerError:
        incident = uuid.uuid4().hex[:16]
        logger.error("incident %s in %s", incident, where, exc_info=exc)
        return InternalServerError(
            f"The server failed unexpectedly (incident {incident}); the details are in its log.",
            metadata={"incident": incident},
        )


def _validate(tool: ToolSpec, arguments: dict[str, Any]) -> pydantic.BaseModel:
    try:
        return tool.args_model.model_validate(arguments, strict=True)
    except Exception as exc:
        from pydantic import ValidationError  # loaded with the tool's models, never before

        if isinstance(exc, ValidationError):
            raise _argument_problem(exc) from None
        raise


def _argument_problem(exc: pydantic.ValidationError) -> InvalidArgumentsError:
    names: list[str] = []
    parts: list[str] = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = err.get("loc") or ()
        name = ".".join(str(part) for part in loc) or "arguments"
        root = str(loc[0]) if loc else "arguments"
        if root not in names:
            names.append(root)
        message = err.get("msg", "is not valid")
        if err.get("type") == "extra_forbidden":
            message = "is not an argument of this tool"
        parts.append(f"{echo(name, 64)}: {message}")
    detail = "The arguments do not match the tool's inputSchema: " + "; ".join(parts[:5])
    return InvalidArgumentsError(echo(detail, 512), invalid_params=names)


def _seconds(value: float) -> str:
    return f"{value:g} s" if math.isfinite(value) else "the deadline"


def _resource_entry(resource: ResourceSpec) -> dict[str, Any]:
    return {
        "uri": resource.uri,
        "name": resource.name,
        "title": resource.title,
        "description": resource.description,
        "mimeType": resource.mime_type,
    }


async def serve_session(
    stdin: trio.abc.ReceiveStream,
    stdout: trio.abc.SendStream,
    *,
    settings: Settings,
    registry: Registry,
    handle_signals: bool = False,
    on_ready: Callable[[Session], None] | None = None,
) -> None:
    """Serve one MCP session over the two streams until EOF (or a signal) and the drain end."""
    session = Session(settings=settings, registry=registry, handle_signals=handle_signals)
    if on_ready is not None:
        on_ready(session)
    await session.serve(stdin, stdout)
