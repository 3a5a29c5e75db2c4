"""A trio harness that serves one session in-process over in-memory byte streams (STYLE habit 8).

    async with open_session(transport="lockstep") as h:
        await h.initialize()
        request_id = await h.call("sleep", {"seconds": 1, "tag": 1})
        response = await h.response(request_id)

Transports: `memory` (trio's unbounded memory_stream_pair), `lockstep` (no buffering at all: every
send waits for the other side to receive, which is how back-pressure is tested) and `onebyte` (the
client's bytes reach the server a byte or two at a time). The test tools (`sleep`, `echo`, `deny`,
`boom`, `down`) come as a ToolOpener and record what they did in a `ToolLog`. Every line the server writes is
checked by `tests.support.wire.check_line`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

import trio
import trio.testing
from pydantic import Field

from mcp_suite.lazy import Lazy
from mcp_suite.problems import (
    AccessDeniedError,
    DatabaseUnavailableError,
    RoleRefusedError,
    RoleUnauditedError,
)
from mcp_suite.runtime.recorder import NO_TELEMETRY
from mcp_suite.runtime.session import Session, serve_session
from mcp_suite.settings import MAX_FRAME_BYTES, Settings
from mcp_suite.tools.base import ResourceSpec, Toolset, ToolSpec
from mcp_suite.tools.models import StrictModel
from mcp_suite.tools.registry import Registry, ToolOpener, open_registry
from tests.support.wire import check_line

if TYPE_CHECKING:
    from mcp_suite.runtime.telemetry import Telemetry

__all__ = [
    "Harness",
    "ToolLog",
    "Transport",
    "open_session",
    "ping_line",
    "refused_resource_opener",
    "tool_opener",
]

Transport = Literal["memory", "lockstep", "onebyte"]
TRANSPORTS: tuple[Transport, ...] = ("memory", "lockstep", "onebyte")
SECRET_IN_BOOM = "boom-secret-/etc/shadow-token"


# ------------------------------------------------------------------------------------------------
# test tools


@dataclass
class ToolLog:
    """What the test tools did, in order (tags are chosen by the test)."""

    started: list[int] = field(default_factory=list)
    start_times: dict[int, float] = field(default_factory=dict)
    finished: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)


class SleepArgs(StrictModel):
    seconds: float = Field(ge=0, le=3_600, description="How long to sleep")
    tag: int = Field(default=0, description="Recorded in the start order")


class SleepResult(StrictModel):
    tag: int
    slept: float


class EchoArgs(StrictModel):
    text: str = Field(description="Echoed back")
    tags: list[str] = Field(default_factory=list, description="Labels")
    pair: tuple[int, str] | None = Field(default=None, description="A fixed-length array")


class EchoResult(StrictModel):
    text: str
    tags: list[str]


class NoArgs(StrictModel):
    pass


class NoResult(StrictModel):
    pass


def built_models(
    args: type[StrictModel], result: type[StrictModel]
) -> Lazy[tuple[type[StrictModel], type[StrictModel]]]:
    """A test tool's models, built at once: its calls never wait for a thread to build them, which
    under `autojump_clock` would let virtual time run on."""
    models = Lazy(lambda: (args, result))
    models.get()
    return models


def _tools(log: ToolLog) -> tuple[ToolSpec, ...]:
    async def sleep(args: SleepArgs) -> SleepResult:
        log.started.append(args.tag)
        log.start_times[args.tag] = trio.current_time()
        try:
            await trio.sleep(args.seconds)
        except trio.Cancelled:
            log.cancelled.append(args.tag)
            raise
        log.finished.append(args.tag)
        return SleepResult(tag=args.tag, slept=args.seconds)

    async def echo(args: EchoArgs) -> EchoResult:
        await trio.lowlevel.checkpoint()
        return EchoResult(text=args.text, tags=args.tags)

    async def deny(args: NoArgs) -> NoResult:
        await trio.lowlevel.checkpoint()
        raise AccessDeniedError("This test tool refuses every call.", metadata={"why": "test"})

    async def boom(args: NoArgs) -> NoResult:
        await trio.lowlevel.checkpoint()
        raise RuntimeError(SECRET_IN_BOOM)

    async def down(args: NoArgs) -> NoResult:
        await trio.lowlevel.checkpoint()
        raise DatabaseUnavailableError(
            "This test tool's database is never there.", metadata={"retryable": True}
        )

    return (
        ToolSpec(
            name="sleep",
            title="Sleep",
            description="Sleeps for `seconds` (virtual time in trio tests).",
            models=built_models(SleepArgs, SleepResult),
            call=sleep,
            scope=TEST_SCOPE,
        ),
        ToolSpec(
            name="echo",
            title="Echo",
            description="Returns its text.",
            models=built_models(EchoArgs, EchoResult),
            call=echo,
            scope=TEST_SCOPE,
        ),
        ToolSpec(
            name="deny",
            title="Deny",
            description="Always refused in-band.",
            models=built_models(NoArgs, NoResult),
            call=deny,
            scope=TEST_SCOPE,
        ),
        ToolSpec(
            name="boom",
            title="Boom",
            description="Always crashes with a plain exception.",
            models=built_models(NoArgs, NoResult),
            call=boom,
            scope=TEST_SCOPE,
        ),
        ToolSpec(
            name="down",
            title="Down",
            description="Always fails as an unavailable database does.",
            models=built_models(NoArgs, NoResult),
            call=down,
            scope=TEST_SCOPE,
        ),
    )


def tool_opener(log: ToolLog) -> ToolOpener:
    """A ToolOpener (settings -> context manager yielding a Toolset) for the test tools."""

    @contextlib.contextmanager
    def open_test_tools(settings: Settings) -> Iterator[Toolset | None]:
        yield Toolset(tools=_tools(log))

    return open_test_tools


# The scope of the test tools and resources: their own, as every tool declares its family's.
TEST_SCOPE: Final = "test:call"
NOTES_URI: Final = "notes://test/readme"
NOTES_TEXT: Final = '{"hello":"world"}'


def resource_opener() -> ToolOpener:
    """A ToolOpener serving no tool and one JSON resource (`NOTES_URI`), for resource traffic."""

    async def read() -> str:
        await trio.lowlevel.checkpoint()
        return NOTES_TEXT

    @contextlib.contextmanager
    def open_notes(settings: Settings) -> Iterator[Toolset | None]:
        resource = ResourceSpec(
            uri=NOTES_URI,
            name="readme",
            title="Read me",
            description="A test resource.",
            mime_type="application/json",
            read=read,
            scope=TEST_SCOPE,
        )
        yield Toolset(tools=(), resources=(resource,))

    return open_notes


REFUSED_URI = "test://refused"
UNAUDITED_URI = "test://unaudited"
DOWN_URI = "test://down"


def refused_resource_opener() -> ToolOpener:
    """A ToolOpener serving two resources whose every read is refused as the SQL schema
    resource's is while a re-audit refuses the role (`REFUSED_URI`: `role-refused`, -32603),
    while no re-audit completes (`UNAUDITED_URI`: `role-unaudited`, -32603) and while the
    database is down (`DOWN_URI`: `database-unavailable`, -32603: a read has no in-band channel)."""

    async def read() -> str:
        await trio.lowlevel.checkpoint()
        raise RoleRefusedError(
            "This test resource's role is always refused.", metadata={"findings": ["test"]}
        )

    async def read_unaudited() -> str:
        await trio.lowlevel.checkpoint()
        raise RoleUnauditedError("This test resource's role is never audited.", metadata={"retryable": True})

    async def read_down() -> str:
        await trio.lowlevel.checkpoint()
        raise DatabaseUnavailableError(
            "This test resource's database is never there.", metadata={"retryable": True}
        )

    @contextlib.contextmanager
    def open_refused(settings: Settings) -> Iterator[Toolset | None]:
        resource = ResourceSpec(
            uri=REFUSED_URI,
            name="refused",
            title="Refused",
            description="A test resource that is always refused.",
            mime_type="application/json",
            read=read,
            scope=TEST_SCOPE,
        )
        unaudited = ResourceSpec(
            uri=UNAUDITED_URI,
            name="unaudited",
            title="Unaudited",
            description="A test resource whose role is never audited.",
            mime_type="application/json",
            read=read_unaudited,
            scope=TEST_SCOPE,
        )
        down = ResourceSpec(
            uri=DOWN_URI,
            name="down",
            title="Down",
            description="A test resource whose database is never there.",
            mime_type="application/json",
            read=read_down,
            scope=TEST_SCOPE,
        )
        yield Toolset(tools=(), resources=(resource, unaudited, down))

    return open_refused


# ------------------------------------------------------------------------------------------------
# transports

Pair = tuple[trio.StapledStream[Any, Any], trio.StapledStream[Any, Any]]


def _onebyte_pair() -> Pair:
    """Like memory_stream_pair, but client → server bytes trickle in one at a time."""
    client_send, server_recv = trio.testing.memory_stream_one_way_pair()
    server_send, client_recv = trio.testing.memory_stream_one_way_pair()

    async def trickle() -> None:
        await trio.lowlevel.checkpoint()
        while True:
            if not trio.testing.memory_stream_pump(client_send, server_recv, max_bytes=1):
                return
            await trio.lowlevel.checkpoint()  # let the server read this byte alone

    client_send.send_all_hook = trickle
    return trio.StapledStream(client_send, client_recv), trio.StapledStream(server_send, server_recv)


def _stream_pair(transport: Transport) -> Pair:
    if transport == "memory":
        return trio.testing.memory_stream_pair()
    if transport == "lockstep":
        return trio.testing.lockstep_stream_pair()
    return _onebyte_pair()


# ------------------------------------------------------------------------------------------------
# the client side


def ping_line(request_id: int | str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode() + b"\n"


@dataclass
class Harness:
    """The client end of one in-process session."""

    stream: trio.StapledStream[Any, Any]
    log: ToolLog
    settings: Settings
    session: Session | None = None
    server_done: trio.Event = field(default_factory=trio.Event)
    lines_seen: int = 0
    # Every line read, kept only when asked for (a flood test must not hold 100,000 lines).
    transcript: list[bytes] | None = None
    _buffer: bytearray = field(default_factory=bytearray)
    _eof: bool = False
    _input_closed: bool = False
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _pending: dict[Any, dict[str, Any]] = field(default_factory=dict)

    # -- sending --------------------------------------------------------------------------------
    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)

    async def send_request(
        self, method: str, params: Mapping[str, Any] | None = None, *, request_id: Any = None
    ) -> Any:
        rid = next(self._ids) if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)
        return rid

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, request_id: Any = None
    ) -> Any:
        """Send a tools/call; returns its id (the answer may come later and out of order)."""
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self.send_request("tools/call", params, request_id=request_id)

    async def close_input(self) -> None:
        """EOF on the server's stdin."""
        if self._input_closed:
            await trio.lowlevel.checkpoint()
            return
        self._input_closed = True
        await self.stream.send_eof()

    # -- receiving ------------------------------------------------------------------------------
    async def recv_line(self) -> bytes | None:
        """The next raw line, or None at EOF (the server ended the session)."""
        await trio.lowlevel.checkpoint()
        scanned = 0  # bytes of the buffer known to hold no newline: a long line is searched once
        while True:
            newline = self._buffer.find(b"\n", scanned)
            if newline != -1:
                line = bytes(self._buffer[: newline + 1])
                del self._buffer[: newline + 1]
                self.lines_seen += 1
                if self.transcript is not None:
                    self.transcript.append(line)
                return line
            if self._eof:
                assert not self._buffer, f"partial last line {bytes(self._buffer[:200])!r}"
                return None
            scanned = len(self._buffer)
            chunk = await self.stream.receive_some(65_536)
            if not chunk:
                self._eof = True
            self._buffer += chunk

    def raw_output(self) -> bytes:
        """Every byte the server wrote that the client has read so far (needs `keep_transcript`)."""
        assert self.transcript is not None, "open the session with keep_transcript=True"
        return b"".join(self.transcript)

    async def recv(self) -> dict[str, Any]:
        """The next message, checked against the wire contract."""
        line = await self.recv_line()
        assert line is not None, "the server closed its output"
        return check_line(line)

    async def response(self, request_id: Any) -> dict[str, Any]:
        """The response to `request_id`; others seen meanwhile are kept for later."""
        await trio.lowlevel.checkpoint()
        if request_id in self._pending:
            return self._pending.pop(request_id)
        while True:
            message = await self.recv()
            answered = message.get("id")  # an error for an unreadable id has none
            if answered == request_id and type(answered) is type(request_id):
                return message
            assert answered not in self._pending, f"two responses for {answered!r}"
            self._pending[answered] = message

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await self.response(await self.send_request(method, params))

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        response = await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "harness", "version": "0"},
            },
        )
        await self.notify("notifications/initialized")
        return response

    async def finish(self) -> list[dict[str, Any]]:
        """EOF, then read (and check) everything the server still writes until it closes its output."""
        await self.close_input()
        rest = list(self._pending.values())
        self._pending.clear()
        while (line := await self.recv_line()) is not None:
            rest.append(check_line(line))
        await self.server_done.wait()
        return rest


@contextlib.asynccontextmanager
async def open_session(
    *,
    transport: Transport = "memory",
    settings: Settings | None = None,
    builtins: bool = False,
    test_tools: bool = True,
    keep_transcript: bool = False,
    handle_signals: bool = False,
    extra_tools: Iterable[ToolOpener] = (),
    telemetry: Callable[[Registry], Telemetry] | None = None,
    max_frame_bytes: int = MAX_FRAME_BYTES,
) -> AsyncIterator[Harness]:
    """Serve one session in a nursery owned by this block; on a clean exit, EOF and drain it.
    `telemetry` makes the session's traces and metrics from its registry (None: off);
    `max_frame_bytes` is the longest line the session reads (a short one for a slow transport)."""
    settings = settings or Settings()
    log = ToolLog()
    client_stream, server_stream = _stream_pair(transport)
    extra = [*([tool_opener(log)] if test_tools else []), *extra_tools]
    harness = Harness(
        stream=client_stream, log=log, settings=settings, transcript=[] if keep_transcript else None
    )

    def ready(session: Session) -> None:
        harness.session = session

    with open_registry(settings, extra=extra, builtins=builtins) as registry:
        watching = telemetry(registry) if telemetry is not None else NO_TELEMETRY

        async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            task_status.started()
            try:
                await serve_session(
                    server_stream,
                    server_stream,
                    settings=settings,
                    registry=registry,
                    handle_signals=handle_signals,
                    on_ready=ready,
                    telemetry=watching,
                    max_frame_bytes=max_frame_bytes,
                )
            finally:
                with trio.CancelScope(shield=True):
                    await server_stream.send_eof()
                harness.server_done.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(serve)
            try:
                yield harness
            except BaseException:
                nursery.cancel_scope.cancel()
                raise
            if not harness.server_done.is_set():
                await harness.finish()
