"""The HTTP server's connections: accepted under the caps, each carried by hypercorn's HTTP/1.1
connection over a guarded stream, and all of them ended by the drain's grace.

    accept ─▶ ConnectionTable.admit (429 and closed over a cap) ─▶ _GuardedStream ─▶ hypercorn TCPServer

The guarded stream refuses HTTP/2 (its preface is answered with GOAWAY HTTP_1_1_REQUIRED, and
hypercorn's `101` to `Upgrade: h2c` is replaced by a 400), and bounds every write in time: a client
that does not take an answer within MCP_HTTP_WRITE_TIMEOUT_S has its connection closed, whatever
hypercorn shields. Every decision is `protocol.connection`'s; this module only moves bytes, counts
and closes. hypercorn's own timers (MCP_HTTP_IDLE_TIMEOUT_S) bound a connection waiting for a
request; the app bounds the body and the call.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import trio

from mcp_suite.protocol.connection import (
    H2_REFUSAL,
    ConnectionTable,
    Opening,
    opening_of,
    response_bytes,
    switches_protocol,
)
from mcp_suite.protocol.exchange import connection_refused, upgrade_refused
from mcp_suite.runtime.log_sink import logger
from mcp_suite.settings import Settings

if TYPE_CHECKING:
    from hypercorn.config import Config

# An ASGI application, as `HttpApp` is one (hypercorn's own type is a union of its scopes' types).
AsgiApp = Callable[[Any, Any, Any], Awaitable[None]]

__all__ = ["serve_connections"]

# A refusal written before any request (a connection over a cap, HTTP/2) waits at most this long for
# the peer to take it: a few hundred bytes, which a socket's buffer holds at once.
_REFUSAL_WRITE_S: Final = 1.0


class _Refusals:
    """What the connections refused or cut off, counted by kind: the 1st, 2nd, 4th, 8th... of each is
    logged with the count so far, so a flood is a few lines, not one per connection."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def note(self, what: str, peer: str) -> None:
        count = self._counts.get(what, 0) + 1
        self._counts[what] = count
        if count & (count - 1) == 0:
            logger.info("HTTP: %s (%s; %d so far)", what, peer, count)


class _GuardedStream(trio.abc.HalfCloseableStream):
    """A connection's socket stream as hypercorn's TCPServer uses it (it reads `socket`), with HTTP/2
    refused and every write bounded in time. `abort()` closes it at once, waking a write in progress
    even inside hypercorn's shielded scope."""

    def __init__(
        self, stream: trio.SocketStream, peer: str, write_timeout: float, refusals: _Refusals
    ) -> None:
        from hypercorn.trio.worker_context import WorkerContext

        self._refusals = refusals
        self._stream = stream
        self.socket = stream.socket
        self._peer = peer
        self._write_timeout = write_timeout
        self._head: bytes | None = b""  # the first bytes, until they show the protocol
        # hypercorn's worker state, one per connection: `terminated` set ends its wait for the next
        # request at once and keeps it from taking another, which the drain wants for every
        # connection and a peer's close for its own (else the closed connection is counted until
        # MCP_HTTP_IDLE_TIMEOUT_S has passed).
        self.context = WorkerContext(None)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            data = await self._stream.receive_some(max_bytes)
        except (trio.BrokenResourceError, trio.ClosedResourceError):  # reset by the peer, or closed here
            await self.context.terminated.set()  # noqa: ASYNC120  # hypercorn's Event.set awaits nothing: no checkpoint can drop the exception
            raise
        if not data:
            await self.context.terminated.set()
        if self._head is not None:
            head = self._head + data
            opening = opening_of(head) if data else Opening.HTTP1
            if opening is Opening.HTTP2:
                await self._refuse(H2_REFUSAL, "refused an HTTP/2 preface (HTTP/1.1 only)")
                raise trio.BrokenResourceError("HTTP/2 is not served")
            self._head = head if opening is Opening.UNDECIDED else None
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if switches_protocol(bytes(data[:16])):
            await self._refuse(response_bytes(upgrade_refused()), "refused an Upgrade: h2c (HTTP/1.1 only)")
            raise trio.BrokenResourceError("HTTP/2 is not served")
        with trio.move_on_after(self._write_timeout) as timer:
            await self._stream.send_all(data)
        if timer.cancelled_caught:
            what = f"a client did not take a write within {self._write_timeout} s: connection closed"
            self._refusals.note(what, self._peer)
            self.abort()
            raise trio.BrokenResourceError("the client did not read in time")

    async def _refuse(self, answer: bytes, what: str) -> None:
        self._refusals.note(what, self._peer)
        await _write_and_close(self._stream, answer)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    def abort(self) -> None:
        """Close the socket now (no checkpoint): a task blocked writing or reading wakes with
        `trio.ClosedResourceError`."""
        self._stream.socket.close()

    async def aclose(self) -> None:
        await self._stream.aclose()


async def _write_and_close(stream: trio.SocketStream, answer: bytes) -> None:
    """Write a refusal (within `_REFUSAL_WRITE_S`), end the sending side, close."""
    try:
        with trio.move_on_after(_REFUSAL_WRITE_S):
            await stream.send_all(answer)
            await stream.send_eof()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the peer is gone: nothing to tell it
    await trio.aclose_forcefully(stream)


def _peer_of(stream: trio.SocketStream) -> str | None:
    """The peer's address, None when it has already gone."""
    try:
        address: Any = stream.socket.getpeername()
    except OSError:
        return None
    return str(address[0])


class _Connections:
    """The server's open connections: counted (`ConnectionTable`), each served by hypercorn over a
    `_GuardedStream`, and all closed when the drain's grace is over."""

    def __init__(self, app: AsgiApp, config: Config, settings: Settings) -> None:
        from hypercorn.app_wrappers import ASGIWrapper

        self._asgi = ASGIWrapper(app)
        self._config = config
        self._settings = settings
        self.table = ConnectionTable(
            per_peer=settings.http_max_connections_per_peer, total=settings.http_max_connections
        )
        self._open: set[_GuardedStream] = set()
        self._refusals = _Refusals()
        self._all_closed = trio.Event()
        self._draining = False

    async def serve(self, stream: trio.SocketStream) -> None:
        """One accepted connection, from its admission to its close."""
        from hypercorn.trio.tcp_server import TCPServer
        from hypercorn.typing import ConnectionState

        peer = _peer_of(stream)
        if peer is None:
            await stream.aclose()
            return
        refusal = self.table.admit(peer)
        if refusal is not None:
            self._refusals.note(f"refused a connection: {refusal}", peer)
            await _write_and_close(stream, response_bytes(connection_refused(refusal, peer)))
            return
        guarded = _GuardedStream(stream, peer, self._settings.http_write_timeout_s, self._refusals)
        self._open.add(guarded)
        try:
            if self._draining:  # accepted just before the drain began
                await guarded.context.terminated.set()
            await TCPServer(self._asgi, self._config, guarded.context, ConnectionState({}), guarded).run()  # type: ignore[arg-type]  # hypercorn types its stream as an SSLStream and reads only what a stream has
        finally:
            guarded.abort()  # hypercorn's own close may have been cancelled before it closed
            self._open.discard(guarded)
            self.table.release(peer)
            if self._draining and not self._open:
                self._all_closed.set()

    async def drain(self, connections: trio.CancelScope) -> None:
        """Stop: idle connections close at once, the others may finish for MCP_DRAIN_GRACE_S; then
        every connection still open is closed, whatever its client does, and `connections` cancelled."""
        self._draining = True
        if not self._open:
            self._all_closed.set()
        for guarded in list(self._open):
            await guarded.context.terminated.set()
        with trio.move_on_after(self._settings.drain_grace_s):
            await self._all_closed.wait()
        if self._open:
            logger.info("HTTP: closing %d connection(s) still open after the drain's grace", len(self._open))
        for guarded in list(self._open):
            guarded.abort()
        connections.cancel()


async def serve_connections(
    app: AsgiApp,
    config: Config,
    settings: Settings,
    *,
    shutdown: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `app` over HTTP/1.1 on `config.bind` until `shutdown` returns, then drain (`drain`).
    `task_status` gets the bound addresses (`http://host:port`).

    Limits: MCP_HTTP_MAX_CONNECTIONS in all and MCP_HTTP_MAX_CONNECTIONS_PER_PEER per peer address;
    each write within MCP_HTTP_WRITE_TIMEOUT_S; HTTP/2 refused; the drain within MCP_DRAIN_GRACE_S.
    """
    from hypercorn.utils import repr_socket_addr

    sockets = config.create_sockets().insecure_sockets
    listeners = []
    binds = []
    for sock in sockets:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))
        binds.append(f"http://{repr_socket_addr(sock.family, sock.getsockname())}")
    served = _Connections(app, config, settings)
    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            accepting.start_soon(
                functools.partial(trio.serve_listeners, served.serve, listeners, handler_nursery=connections)
            )
            task_status.started(binds)
            await shutdown()
            accepting.cancel_scope.cancel()
        for listener in listeners:
            await listener.aclose()
        await served.drain(connections.cancel_scope)
