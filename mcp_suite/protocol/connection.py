"""What the HTTP carrier decides about a connection itself, without I/O: whether its first bytes open
HTTP/2 (refused: the server speaks HTTP/1.1 only), what such a peer reads then, whether a write would
switch protocols (hypercorn's `101` to `Upgrade: h2c`, refused), a connection's admission under the
caps (per peer address and in all), and a refusal written before any request as HTTP/1.1 bytes.

`runtime.http_conn` carries it out. Must not import trio or hypercorn.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final

from mcp_suite.protocol.exchange import Reply

__all__ = [
    "H2_REFUSAL",
    "ConnectionStatistics",
    "ConnectionTable",
    "Opening",
    "opening_of",
    "response_bytes",
    "switches_protocol",
]

# RFC 9113 3.4: a client that knows the server speaks HTTP/2 starts with this preface; its first
# line is what hypercorn takes for an HTTP/2 connection.
_H2_PREFACE_LINE: Final = b"PRI * HTTP/2.0\r\n"
# What an HTTP/2 peer reads instead (RFC 9113 6.5, 6.8, 7): the server's (empty) SETTINGS, then
# GOAWAY with no stream processed and HTTP_1_1_REQUIRED, on which a client such as curl retries
# over HTTP/1.1.
H2_REFUSAL: Final = (
    b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # SETTINGS: length 0, no flags, stream 0
    b"\x00\x00\x08\x07\x00\x00\x00\x00\x00"  # GOAWAY: length 8, no flags, stream 0
    b"\x00\x00\x00\x00"  # last stream id: none
    b"\x00\x00\x00\x0d"  # HTTP_1_1_REQUIRED
)
# h11 writes an informational answer as `HTTP/1.1 101 ...` in a write of its own; the app never
# answers 101 (no WebSocket is served), so one is hypercorn switching to h2c.
_SWITCHING: Final = b"HTTP/1.1 101 "


class Opening(enum.Enum):
    """What a connection's first bytes open."""

    HTTP1 = "http/1.1"
    HTTP2 = "h2"
    UNDECIDED = "undecided"  # fewer bytes than the preface's first line, all of it so far


def opening_of(head: bytes) -> Opening:
    """The protocol the first bytes `head` of a connection open. h11 needs a blank line to see a
    request, so bytes given to it while this is UNDECIDED can never start HTTP/2."""
    if head.startswith(_H2_PREFACE_LINE):
        return Opening.HTTP2
    if _H2_PREFACE_LINE.startswith(head):
        return Opening.UNDECIDED
    return Opening.HTTP1


def switches_protocol(chunk: bytes) -> bool:
    """Whether a write is hypercorn's `101 Switching Protocols` (its answer to `Upgrade: h2c`)."""
    return chunk.startswith(_SWITCHING)


def response_bytes(reply: Reply) -> bytes:
    """`reply` as a whole HTTP/1.1 answer, for a connection no request was read from (or one
    hypercorn must not answer): its status, headers, a `content-length` and its body."""
    reason = HTTPStatus(reply.status).phrase.encode("ascii")
    lines = [b"HTTP/1.1 %d %s" % (reply.status, reason)]
    lines += [name + b": " + value for name, value in reply.headers]
    lines.append(b"content-length: %d" % len(reply.body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + reply.body


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """What `ConnectionTable.statistics()` returns: connections open, peer addresses holding them."""

    connections: int
    peers: int


class ConnectionTable:
    """The open connections, counted per peer address and in all, against their caps.

    Not thread-safe; the runtime calls it from the event loop only."""

    __slots__ = ("_by_peer", "_open", "per_peer", "total")

    def __init__(self, *, per_peer: int, total: int) -> None:
        self.per_peer = per_peer
        self.total = total
        self._by_peer: dict[str, int] = {}
        self._open = 0

    def statistics(self) -> ConnectionStatistics:
        return ConnectionStatistics(connections=self._open, peers=len(self._by_peer))

    def admit(self, peer: str) -> str | None:
        """Count a new connection from `peer`; or, over a cap, the reason it is refused (nothing
        counted)."""
        if self._open >= self.total:
            return f"the server holds its maximum of {self.total} connections"
        held = self._by_peer.get(peer, 0)
        if held >= self.per_peer:
            return f"at most {self.per_peer} connections at once from one address"
        self._by_peer[peer] = held + 1
        self._open += 1
        return None

    def release(self, peer: str) -> None:
        """A connection `admit` counted has closed."""
        left = self._by_peer[peer] - 1
        if left:
            self._by_peer[peer] = left
        else:
            del self._by_peer[peer]
        self._open -= 1
