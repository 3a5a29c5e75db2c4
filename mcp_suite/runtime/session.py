"""One MCP session over a pair of byte streams: reader → dispatcher → call tasks → single writer.

    stdin ─▶ reader ──frames──▶ dispatcher ──responses──▶ writer ─▶ stdout
                                   │  ▲
                          spawns   ▼  │ responses
                              tools/call tasks (one CancelScope each, by request id)

Both channels are bounded, so a flood, a client that never reads, or a never-ending line cannot
grow memory: back-pressure stops the reader instead. What to answer, to start or to cancel is decided
by `protocol.core.SessionCore`; this module only moves bytes and runs one task and cancel scope per
call (`runtime.calls.CallRunner`, shared with the HTTP transport, runs the call itself and is the one
exception boundary). What each answer leaves behind (audit record, span, metrics) is
`runtime.recorder`'s.
"""

from __future__ import annotations

import gc
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import trio

from mcp_suite.problems import ProblemError
from mcp_suite.protocol import mcp
from mcp_suite.protocol.catalogue import Catalogue
from mcp_suite.protocol.core import (
    Answer,
    CallRaised,
    CancelCall,
    IdKey,
    SessionCore,
    Shutdown,
    StartCall,
)
from mcp_suite.protocol.framing import Frame, LineDecoder, OversizedFrame
from mcp_suite.protocol.talk import ClientAnswered
from mcp_suite.runtime import early_signals
from mcp_suite.runtime.calls import SECRET_IDS, CallRunner, catalogue_of
from mcp_suite.runtime.limiter import CallLimiter, Ticket
from mcp_suite.runtime.log_sink import logger
from mcp_suite.runtime.recorder import NO_TELEMETRY, Recorder, Watcher
from mcp_suite.runtime.talk import CallTalk, Waiters
from mcp_suite.settings import MAX_FRAME_BYTES, Settings
from mcp_suite.tools.registry import Registry

__all__ = ["Session", "serve_session"]

_READ_CHUNK: Final = 65_536
_WRITE_BATCH_BYTES: Final = 262_144
# The least time the final flush of stdout gets. Shutdown waits are bounded (STYLE habit 2): a client
# that never reads stdout cannot hold the process after the drain, nor after a second signal.
_SHUTDOWN_FLUSH_S: Final = 1.0

Inbound = Frame | OversizedFrame
# Bytes for the writer, and whether the warm-up starts once they are written (the core marks the
# answer that opens the session: `Answer.warm_up`).
Outbound = tuple[bytes, bool]


class _Task:
    """The plumbing of one call: its cancel scope and its place at the limiter."""

    __slots__ = ("scope", "ticket")

    def __init__(self, scope: trio.CancelScope, ticket: Ticket | None) -> None:
        self.scope = scope
        self.ticket = ticket


@dataclass(slots=True)
class Session:
    """The task plumbing of one session around its `SessionCore`. Create with `serve_session`."""

    settings: Settings
    registry: Registry
    handle_signals: bool = False
    # The longest line read (docs/wire.md: the wire contract's; a test passes a shorter one).
    max_frame_bytes: int = MAX_FRAME_BYTES
    # Traces and metrics (`runtime.telemetry`) when configured; the recorder holds them.
    telemetry: Watcher = NO_TELEMETRY
    core: SessionCore = field(init=False)
    recorder: Recorder = field(init=False)
    runner: CallRunner = field(init=False)
    limiter: CallLimiter = field(init=False)
    # The running calls' tasks, by the core's id key (the core keeps the protocol side of each).
    in_flight: dict[IdKey, _Task] = field(default_factory=dict)
    all_idle: trio.Event = field(default_factory=trio.Event)
    catalogue: Catalogue = field(init=False)
    # The calls waiting for their client's answer to a request of the server's (`runtime.talk`).
    waiters: Waiters = field(default_factory=Waiters)
    _reader_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    _out_send: trio.MemorySendChannel[Outbound] | None = None
    _calls: trio.Nursery | None = None
    # Set by the writer once the answer that opens the session is written: the warm-up's cue.
    _opened: trio.Event = field(default_factory=trio.Event)
    # Set when the warm-up has ended, failed, or was abandoned at shutdown (tests wait on it).
    warmed_up: trio.Event = field(default_factory=trio.Event)
    # Set by the warm-up's thread itself when it returns (it may outlive an abandoned `warmed_up`).
    _warm_up_thread_done: threading.Event = field(default_factory=threading.Event)
    _warm_up_started: bool = False
    _served: bool = False

    def __post_init__(self) -> None:
        self.runner = CallRunner(self.settings, self.registry)
        self.recorder = Recorder("pipe", self.telemetry)
        self.limiter = self.runner.limiter
        self.catalogue = catalogue_of(self.registry)
        self.core = self.catalogue.core(
            self.catalogue.whole(), self.settings, SECRET_IDS.boundary, max_frame_bytes=self.max_frame_bytes
        )
        self.all_idle.set()

    def tool_descriptions(self) -> Sequence[mcp.ToolDescription]:
        """The advertised tools, built once (by the warm-up, or by the first `tools/list`): the
        models and their JSON Schemas are not needed to answer `initialize`. Thread-safe."""
        return self.catalogue.descriptions()

    # ---------------------------------------------------------------------------------------
    # warm-up

    async def _warm_up(self) -> None:
        """Once the `initialize` answer is written: build what calls need, in a worker thread.

        Every tool's models and the advertised schemas, then each toolset's own steps (the SQL
        policy's parsers). Nothing here is required: a call that comes first does its part itself.
        Cancellation: abandoned at shutdown (imports cannot be interrupted; nothing waits for them);
        a session that ends before it opens never starts it.
        """
        await self._opened.wait()
        self._warm_up_started = True
        try:
            await trio.to_thread.run_sync(self._warm_up_sync, abandon_on_cancel=True)
        finally:
            self.warmed_up.set()

    def join_warm_up(self, timeout_s: float) -> bool:
        """Blocking, outside the event loop: wait at most `timeout_s` for a warm-up thread still at
        work; True when none is. The CLI calls it after `trio.run` returns: a thread still inside a
        compiled extension (pydantic-core) when the interpreter exits is unwound there by force,
        which aborts the process ("FATAL: exception not rethrown", exit -6) instead of exit 0.
        """
        return not self._warm_up_started or self._warm_up_thread_done.wait(timeout_s)

    def _warm_up_sync(self) -> None:
        try:
            self._warm_up_steps()
        finally:
            self._warm_up_thread_done.set()

    def _warm_up_steps(self) -> None:
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
        frames_send, frames_recv = trio.open_memory_channel[list[Inbound]](self.settings.inbound_channel_size)
        out_send, out_recv = trio.open_memory_channel[Outbound](self.settings.outbound_channel_size)
        self._out_send = out_send
        try:
            async with trio.open_nursery() as root:
                if self.handle_signals:
                    root.start_soon(self._watch_signals, root.cancel_scope)
                # Waits for the session to open: what calls need loads off the handshake.
                root.start_soon(self._warm_up)
                # The tools' background tasks (the SQL role's re-audit) serve as long as the
                # session does; the cancel at the end of this block stops them.
                for serve_background in self.registry.background:
                    root.start_soon(serve_background)
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
        self, stdin: trio.abc.ReceiveStream, frames_send: trio.MemorySendChannel[list[Inbound]]
    ) -> None:
        """Read chunks, split them into frames, pass each chunk's frames on as one batch.

        Limits: a batch holds at most one chunk's worth of frames (64 KiB), or one oversized marker.
        """
        decoder = LineDecoder(self.max_frame_bytes)
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
                    batch = decoder.feed(chunk)
                    if batch:
                        await frames_send.send(batch)
        logger.debug("reader finished")

    # ---------------------------------------------------------------------------------------
    # writer

    async def _write(
        self,
        stdout: trio.abc.SendStream,
        out_recv: trio.MemoryReceiveChannel[Outbound],
        root_scope: trio.CancelScope,
    ) -> None:
        async with out_recv:
            async for first, warm_up in out_recv:
                batch = [first]
                size = len(first)
                while size < _WRITE_BATCH_BYTES:
                    try:
                        more, more_warm_up = out_recv.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                    batch.append(more)
                    size += len(more)
                    warm_up |= more_warm_up
                try:
                    await stdout.send_all(b"".join(batch))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    # The client is gone (docs/wire.md): nobody can receive anything any more.
                    logger.info("stdout closed by the client; shutting down")
                    root_scope.cancel()
                    return
                if warm_up:  # the `initialize` answer is out: the warm-up may start
                    self._opened.set()

    async def _send(self, frame: bytes, *, then_warm_up: bool = False) -> None:
        """Queue `frame` for the writer (and the warm-up, to start once it is written); waits while
        the outbound channel is full (back-pressure)."""
        assert self._out_send is not None
        try:
            await self._out_send.send((frame, then_warm_up))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The writer is gone and the session is ending; nobody can receive this.
            await trio.lowlevel.checkpoint()

    async def _say(self, frame: bytes) -> bool:
        """A call's notification or request, queued for the writer before its result."""
        await self._send(frame)
        return True

    # ---------------------------------------------------------------------------------------
    # signals

    async def _watch_signals(self, root_scope: trio.CancelScope) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            # Signals that arrived while the process was still starting count the same.
            for signum in early_signals.take():
                self._on_signal(signum, root_scope)
            async for signum in signals:
                self._on_signal(signum, root_scope)

    def _on_signal(self, signum: int, root_scope: trio.CancelScope) -> None:
        name = signal.Signals(signum).name
        if self.core.signal_received() is Shutdown.STOP_READING:
            logger.info("signal %s: draining", name)
            self._reader_scope.cancel()
            return
        logger.info("signal %s while draining: cancelling in-flight calls at once", name)
        self._cancel_all()
        # Their answers get one short flush; nothing (not even a writer blocked on a client that
        # never reads) holds the process longer.
        root_scope.deadline = min(root_scope.deadline, trio.current_time() + _SHUTDOWN_FLUSH_S)

    # ---------------------------------------------------------------------------------------
    # dispatcher

    async def _dispatch(self, frames_recv: trio.MemoryReceiveChannel[list[Inbound]]) -> None:
        async with trio.open_nursery() as calls:
            self._calls = calls
            async with frames_recv:
                async for batch in frames_recv:
                    if not self.recorder.admit():
                        # stderr is read more slowly than the server logs: the client waits (its
                        # frames stay unread) rather than a record be lost (watching.md).
                        await self.recorder.wait_room()
                    # Inline answers of one batch travel to the writer together, in arrival order.
                    handled = [self._handle(item) for item in batch]
                    out = b"".join(frame for frame, _ in handled)
                    if out:
                        await self._send(out, then_warm_up=any(warm_up for _, warm_up in handled))
            self.core.input_ended()
            # Drain: stop reading (done), let in-flight calls finish for the grace period.
            if self.in_flight:
                logger.info("draining %d in-flight call(s)", len(self.in_flight))
                with trio.move_on_after(self.settings.drain_grace_s):
                    await self.all_idle.wait()
                if self.in_flight:
                    logger.info("grace over: cancelling %d call(s)", len(self.in_flight))
                    self.core.grace_over()
                    self._cancel_all()

    def _handle(self, item: Inbound) -> Outbound:
        """One frame in; out, the bytes to write now (often none) and whether the warm-up starts once
        they are written. Never raises for client input."""
        started = time.perf_counter()
        event = self.core.receive(item.data) if isinstance(item, Frame) else self.core.receive_oversized(item)
        if isinstance(event, Answer):
            self.recorder.answered_over_pipe(event, started, self.core.legacy_version)
            return event.frame or b"", event.warm_up
        if isinstance(event, StartCall):
            return self._start(event, started), False
        if isinstance(event, CancelCall):
            task = self.in_flight.get(event.key)
            if task is not None:
                task.scope.cancel()
        elif isinstance(event, ClientAnswered):
            self.waiters.deliver(self.core.talk, event)
        return b"", False

    def _start(self, start: StartCall, started: float) -> bytes:
        """Take a place at the limiter (a tool) and spawn the call's task."""
        try:
            ticket = self.runner.reserve(start)  # a place in the FIFO line, after the sanitizer
        except ProblemError as exc:
            answer = self.core.call_finished(start.key, CallRaised(exc))
            self.recorder.answered_over_pipe(answer, started, start.protocol_version)
            return answer.frame or b""
        task = _Task(scope=trio.CancelScope(), ticket=ticket)
        self.in_flight[start.key] = task
        if self.all_idle.is_set():
            self.all_idle = trio.Event()
        assert self._calls is not None
        self._calls.start_soon(self._run_call, start, task, started)
        return b""

    async def _run_call(self, start: StartCall, task: _Task, started: float) -> None:
        try:
            # A call is served under the version it names (a legacy one only after `initialize`).
            record = self.recorder.call(start, started, self.recorder.asked_over_pipe(start.protocol_version))
            talk = CallTalk(
                self.core.talk,
                start.key,
                self._say,
                self.waiters,
                progress=start.progress_token is not None,
                interval_s=self.settings.progress_interval_s,
            )
            with record:
                outcome = await self.runner.run(start, task.ticket, task.scope, talk)
        finally:
            del self.in_flight[start.key]
            if not self.in_flight:
                self.all_idle.set()
        answer = self.core.call_finished(start.key, outcome)
        if answer.frame is None:
            await trio.lowlevel.checkpoint()
        elif self.core.stopping:
            # During shutdown a client that stopped reading must not hold the process: bound it.
            with trio.move_on_after(_SHUTDOWN_FLUSH_S):
                await self._send(answer.frame)
        else:
            await self._send(answer.frame)
        record.answered(answer)

    def _cancel_all(self) -> None:
        """Cancel every in-flight call; each still reports its end (and gets a shutdown answer)."""
        for task in list(self.in_flight.values()):
            task.scope.cancel()


async def serve_session(
    stdin: trio.abc.ReceiveStream,
    stdout: trio.abc.SendStream,
    *,
    settings: Settings,
    registry: Registry,
    handle_signals: bool = False,
    on_ready: Callable[[Session], None] | None = None,
    telemetry: Watcher = NO_TELEMETRY,
    max_frame_bytes: int = MAX_FRAME_BYTES,
) -> Session:
    """Serve one MCP session over the two streams until EOF (or a signal) and the drain end.

    Returns the session, whose warm-up thread may still be at work (`Session.join_warm_up`)."""
    session = Session(
        settings=settings,
        registry=registry,
        handle_signals=handle_signals,
        telemetry=telemetry,
        max_frame_bytes=max_frame_bytes,
    )
    if on_ready is not None:
        on_ready(session)
    await session.serve(stdin, stdout)
    return session
