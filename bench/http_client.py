"""The HTTP load generator of `bench_http`: keep-alive HTTP/1.1 connections over plain sockets,
driven by one thread through `selectors`, so that the client costs a few tens of µs per call and
is never what limits the server under test.

`ResponseReader` is the pure part (bytes in, whole responses out: `Content-Length` or chunked
bodies, nothing else); `drive` is the loop. Each client is closed-loop: it sends its next request
when the answer to the last one has arrived, so `clients` is the number of calls in flight.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = ["HttpResponse", "HttpRun", "ResponseReader", "drive", "post_request"]

MAX_HEAD_BYTES: Final = 64 * 1024
RECV_BYTES: Final = 256 * 1024


class HttpProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 response this client reads."""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes


def post_request(host: str, port: int, path: str, headers: Sequence[tuple[str, str]], body: bytes) -> bytes:
    """A keep-alive HTTP/1.1 POST of `body` as bytes, built once and sent as often as wanted."""
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}"]
    head += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


@dataclass(slots=True)
class ResponseReader:
    """Whole HTTP/1.1 responses out of a byte stream fed in any pieces (one connection's).

    A body has a `Content-Length` or is chunked (trailers are skipped); a response with neither
    (a body that runs to the connection's close) is refused: this client keeps connections open.
    """

    _buffer: bytearray = field(default_factory=bytearray)
    _head: tuple[int, dict[str, str]] | None = None

    def feed(self, data: bytes) -> list[HttpResponse]:
        self._buffer += data
        done = []
        while (response := self._next()) is not None:
            done.append(response)
        return done

    def _next(self) -> HttpResponse | None:
        if self._head is None:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD_BYTES:
                    raise HttpProtocolError("response headers over 64 KiB")
                return None
            self._head = parse_head(bytes(self._buffer[:end]))
            del self._buffer[: end + 4]
        status, headers = self._head
        if headers.get("transfer-encoding", "").lower() == "chunked":
            taken = chunked_body(self._buffer)
            if taken is None:
                return None
            body, used = taken
        elif "content-length" in headers:
            used = int(headers["content-length"])
            if len(self._buffer) < used:
                return None
            body = bytes(self._buffer[:used])
        elif status in (204, 304) or 100 <= status < 200:
            body, used = b"", 0
        else:
            raise HttpProtocolError(f"a {status} response with neither Content-Length nor chunks")
        del self._buffer[:used]
        self._head = None
        return HttpResponse(status, headers, body)


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status line and headers (without the blank line) -> (status, lower-case headers)."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise HttpProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise HttpProtocolError(f"a header line without a colon: {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    return int(code), headers


def chunked_body(buffer: bytearray) -> tuple[bytes, int] | None:
    """A chunked body at the start of `buffer` -> (the body, bytes it took), None if incomplete."""
    body = bytearray()
    at = 0
    while True:
        eol = buffer.find(b"\r\n", at)
        if eol < 0:
            return None
        size_text = bytes(buffer[at:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise HttpProtocolError(f"a bad chunk size: {size_text[:20]!r}") from None
        at = eol + 2
        if size == 0:
            while True:  # trailers, up to the empty line
                eol = buffer.find(b"\r\n", at)
                if eol < 0:
                    return None
                if eol == at:
                    return bytes(body), eol + 2
                at = eol + 2
        if len(buffer) < at + size + 2:
            return None
        body += buffer[at : at + size]
        if buffer[at + size : at + size + 2] != b"\r\n":
            raise HttpProtocolError("a chunk not followed by CRLF")
        at += size + 2


@dataclass(frozen=True, slots=True)
class HttpRun:
    """One timed series: every call's latency, the series' wall time and the client's CPU time."""

    latencies_ms: list[float]
    wall_s: float
    client_cpu_s: float


@dataclass(slots=True)
class _Client:
    sock: socket.socket
    request: bytes
    reader: ResponseReader
    sent_at: float = 0.0


def _send(sock: socket.socket, data: bytes) -> None:
    sent = sock.send(data)
    if sent < len(data):  # the send buffer was full: finish it blocking (not seen with small requests)
        sock.setblocking(True)
        sock.sendall(data[sent:])
        sock.setblocking(False)


def open_clients(address: tuple[str, int], clients: int) -> list[socket.socket]:
    socks = []
    for _ in range(clients):
        sock = socket.create_connection(address, timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(sock)
    return socks


def drive(
    address: tuple[str, int],
    requests: Sequence[bytes],
    clients: int,
    calls: int,
    check: Callable[[HttpResponse], None],
    timeout_s: float = 60.0,
) -> HttpRun:
    """`calls` requests from `clients` keep-alive connections, each sending its next request when
    its last answer is in; client `i` always sends `requests[i % len(requests)]` (one request for
    all, or one per client: its own token). Every connection first makes one call that is not
    timed (its warm-up); `check` sees every response and raises on a failed one.

    Limits: the whole series must end within `timeout_s` (TimeoutError otherwise).
    """
    socks = open_clients(address, clients)
    mine = [requests[i % len(requests)] for i in range(clients)]
    try:
        for sock, request in zip(socks, mine, strict=True):  # one untimed call each: set-up on both sides
            sock.sendall(request)
        for sock in socks:
            reader = ResponseReader()
            while not (answers := reader.feed(sock.recv(RECV_BYTES) or _closed())):
                pass
            check(answers[0])
        return _timed(socks, mine, calls, check, timeout_s)
    finally:
        for sock in socks:
            sock.close()


def _closed() -> bytes:
    raise HttpProtocolError("the server closed the connection")


def _timed(
    socks: list[socket.socket],
    requests: list[bytes],
    calls: int,
    check: Callable[[HttpResponse], None],
    timeout_s: float,
) -> HttpRun:
    latencies: list[float] = []
    selector = selectors.DefaultSelector()
    cpu = time.thread_time()
    start = time.perf_counter()
    deadline = start + timeout_s
    sent = 0
    try:
        for sock, request in list(zip(socks, requests, strict=True))[:calls]:
            sock.setblocking(False)
            client = _Client(sock, request, ResponseReader(), time.perf_counter())
            _send(sock, request)
            sent += 1
            selector.register(sock, selectors.EVENT_READ, client)
        while len(latencies) < calls:
            events = selector.select(timeout=max(0.0, deadline - time.perf_counter()))
            if not events:
                raise TimeoutError(f"{calls - len(latencies)} of {calls} calls unanswered in {timeout_s} s")
            for key, _ in events:
                client = key.data
                answers = client.reader.feed(client.sock.recv(RECV_BYTES) or _closed())
                if not answers:
                    continue
                now = time.perf_counter()
                if len(answers) != 1:
                    raise HttpProtocolError("more answers than requests on one connection")
                latencies.append((now - client.sent_at) * 1000)
                check(answers[0])
                if sent < calls:
                    client.sent_at = now
                    _send(client.sock, client.request)
                    sent += 1
        wall = time.perf_counter() - start
    finally:
        selector.close()
    return HttpRun(latencies, wall, time.thread_time() - cpu)
