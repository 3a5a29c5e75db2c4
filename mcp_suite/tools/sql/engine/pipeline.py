"""One call's statements as ONE pipelined round trip on libpq, with its memory bound.

libpq directly: psycopg's Pipeline object waits on the socket after every statement (bench_sql;
the figure is in docs/performance.md). The exchange is bounded in time and in bytes while the
rows arrive. Blocking (sync libpq); run in worker threads only.
"""

from __future__ import annotations

import fcntl
import logging
import math
import select
import socket
import struct
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import psycopg
from psycopg import pq
from psycopg.pq.abc import PGresult

from mcp_suite.talk import current as current_talk
from mcp_suite.tools.sql.engine.result import too_large

__all__ = ["Bound", "PipelineResults", "run_pipeline"]

log = logging.getLogger("mcp_suite.tools.sql.engine.executor")

_PIPELINE_SYNC: Final = pq.ExecStatus.PIPELINE_SYNC
_SINGLE_TUPLE: Final = pq.ExecStatus.SINGLE_TUPLE
_TUPLES_CHUNK: Final = pq.ExecStatus.TUPLES_CHUNK
# The streamed command's rows come in results of this many (libpq's chunked mode; the last may
# hold fewer). Single rows doubled the CPU of a 100-row round trip; chunks of 8 cost about what one
# result does (docs/performance.md, the mechanisms table).
CHUNK_ROWS: Final = 8
_FATAL_ERROR: Final = pq.ExecStatus.FATAL_ERROR
_SQLSTATE: Final = pq.DiagnosticField.SQLSTATE
# Bytes read from the socket for one call before it is refused. libpq hands over a result only
# once all of it has arrived, so what arrives is counted while it arrives. A row's wire form is at
# most about 2.5 times its JSON (4-byte length words on tiny values); the slack covers the replies
# of the transaction statements and the row description.
_WIRE_FACTOR: Final = 4
# With a streamed command, room for one whole chunk of rows that each fit the cap (a chunk is
# handed over only once all its rows have arrived): `CHUNK_ROWS` times 2.5. Past it, some row of
# the chunk being read is larger than the cap, so the rows kept so far are the answer.
_STREAM_WIRE_FACTOR: Final = CHUNK_ROWS * 5 // 2
_WIRE_SLACK: Final = 64 << 10


@dataclass(frozen=True, slots=True)
class Bound:
    """A command with bound values (a curated tool's statement): its `$n` take `values` (text, or
    None for NULL) of the types `oids`, sent apart from the text (extended protocol)."""

    sql: bytes
    values: tuple[bytes | None, ...]
    oids: tuple[int, ...]


# Linux's `struct tcp_info` up to and including `tcpi_bytes_received` (a u64 at offset 128, 4.1+).
_TCP_INFO_BYTES: Final = 136


def _pending_bytes(fd: int) -> int:
    """Bytes waiting in the socket's receive queue (what the next read will take, at least)."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


def _tcp_socket(fd: int) -> socket.socket | None:
    """The connection's socket, when the kernel counts the bytes it received (TCP on Linux 4.1+);
    None otherwise (a Unix socket). Detach it before the connection closes (it does not own `fd`)."""
    sock = socket.socket(fileno=fd)
    try:
        if len(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)) >= _TCP_INFO_BYTES:
            return sock
    except OSError:
        pass
    sock.detach()
    return None


def _taken_so_far(sock: socket.socket) -> int:
    """Bytes read off the socket since it opened: what the kernel received less what still waits.
    Exact between two reads, whenever bytes arrive (nothing else reads this socket)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    return int(struct.unpack_from("Q", info, 128)[0]) - _pending_bytes(sock.fileno())


def _wait_socket(conn: psycopg.Connection[Any], deadline: float, *, write: bool) -> bool:
    """Block until the connection's socket is ready, at most until `deadline` (monotonic; `math.inf`:
    no bound). True when the deadline has passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return True
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLOUT if write else select.POLLIN)
    poller.poll(None if math.isinf(remaining) else remaining * 1000)
    return False


def _overdue(timeout_s: float) -> float:
    """The exchange outlived `timeout_s`: PostgreSQL has not stopped the statement at its timeout
    (work it does not interrupt). Say so once; from now on wait without a bound (`math.inf`)."""
    log.warning(
        "a query's backend has not answered %.1f s after the call's statements were sent, past"
        " the statement timeout: PostgreSQL is not interrupting its work. Its connection stays"
        " held (a database thread and a pool slot) until the backend answers, or the connection"
        " breaks",
        timeout_s,
    )
    return math.inf


def _consume(conn: psycopg.Connection[Any], results: list[PGresult]) -> None:
    """Read what arrived; when the server closed the connection, raise its own word about why.

    A backend that ends its session (pg_terminate_backend, a shutdown, a recovery conflict) sends
    a FATAL error as the running statement's result, then closes: libpq reports only the closed
    socket. That FATAL, with its SQLSTATE, says what happened (sqlstate.classify).
    """
    try:
        conn.pgconn.consume_input()
    except psycopg.OperationalError as lost:
        for result in results:
            if result.status == _FATAL_ERROR and result.error_field(_SQLSTATE):
                raise psycopg.errors.error_from_result(result, encoding=conn.info.encoding) from lost
        raise


@dataclass(frozen=True, slots=True)
class PipelineResults:
    """What one pipeline brought back.

    `results`: one per command, in order (fewer when `cut`: those that completed). `rows`: the
    streamed command's rows, in results of up to `CHUNK_ROWS` rows as they arrived, when a command
    was streamed. `cut`: the byte limit was passed while the streamed command's rows arrived; the
    connection was closed there (the query died with it), and `rows` holds the chunks that had
    arrived whole.
    """

    results: list[PGresult]
    rows: list[PGresult] = field(default_factory=list)
    cut: bool = False


def _detach(sock: socket.socket | None) -> None:
    if sock is not None:
        sock.detach()  # the connection owns the descriptor


def _refuse(max_bytes: int) -> NoReturn:
    raise too_large(max_bytes)


def _chunked_rows(pg: Any) -> bool:
    """Chunked-rows mode for the query whose results come next (libpq takes it only between two
    queries' results, before the first of them is read); False when libpq refuses it, or is older
    than 17 (the rows then come as one result, under the same byte limit)."""
    try:
        pg.set_chunked_rows_mode(CHUNK_ROWS)
    except (psycopg.OperationalError, psycopg.NotSupportedError):
        return False
    return True


def run_pipeline(
    conn: psycopg.Connection[Any],
    commands: Sequence[bytes | Bound],
    *,
    max_bytes: int,
    timeout_s: float,
    stream: int | None = None,
) -> PipelineResults:
    """Send `commands` in one pipeline with one Sync; return one result per command.

    `stream`: the index of the command whose rows are read in chunks of `CHUNK_ROWS` (libpq's
    chunked-rows mode), so that the chunks that arrived before the byte limit is passed are kept.
    Time: after `timeout_s` without the whole answer, the exchange is overdue: that is logged once,
    and the wait goes on, without a bound, until PostgreSQL answers or the connection breaks. Not
    closing it is the point (docs/tools/read_only_sql.md, "Work that cannot be stopped"): a backend
    busy with work PostgreSQL does not interrupt keeps running after its client is gone, so a
    closed connection would let the pool open another beside it, and a few such calls would fill
    the role's CONNECTION LIMIT. Held, it keeps counting against the pool (and its worker thread
    against the source's threads). A partition or a dead host breaks the connection within the
    liveness bound its TCP keepalives and `tcp_user_timeout` set (`connections.py`); a Unix
    socket cannot be partitioned. The caller does not wait for it: its call deadline answers it.
    Limits: once the bytes libpq took off the socket
    pass `_WIRE_FACTOR` times `max_bytes` (`_STREAM_WIRE_FACTOR` with a streamed command), plus
    slack, the connection is closed (the query dies with it): while the streamed command's rows
    arrive, the answer is the chunks that arrived whole (`cut`); otherwise the call gets
    `result-too-large`. So a result never holds more than that in
    memory while it arrives (plus what one read of libpq takes). Over TCP the count is exact (the
    kernel's count of bytes received, less those still waiting); over a Unix socket it is a lower
    bound (bytes that arrive during a read and are taken by it are not seen), so there one value of
    hundreds of MB, which libpq reads whole, is stopped late.
    """
    pg = conn.pgconn
    deadline = time.monotonic() + timeout_s
    wire_limit = (_WIRE_FACTOR if stream is None else _STREAM_WIRE_FACTOR) * max_bytes + _WIRE_SLACK
    received = 0
    results: list[PGresult] = []
    rows: list[PGresult] = []
    fetched = 0
    talk = current_talk()
    tcp = _tcp_socket(pg.socket)
    start = _taken_so_far(tcp) if tcp is not None else 0
    with conn.lock:
        pg.enter_pipeline_mode()
        try:
            for command in commands:
                if isinstance(command, Bound):
                    pg.send_query_params(command.sql, command.values, param_types=command.oids)
                else:
                    pg.send_query_params(command, None)
            pg.pipeline_sync()
            while pg.flush():
                if _wait_socket(conn, deadline, write=True):
                    deadline = _overdue(timeout_s)
            streaming = stream == 0 and _chunked_rows(pg)
            while True:
                while pg.is_busy():
                    if _wait_socket(conn, deadline, write=False):
                        deadline = _overdue(timeout_s)
                        continue
                    if tcp is not None:
                        _consume(conn, results)
                        received = _taken_so_far(tcp) - start
                    else:
                        # What libpq took off the socket this time: what was waiting before its
                        # read less what still waits after it (a lower bound). libpq may take only
                        # part of what waits, and the rest must not be counted again next time.
                        waiting = _pending_bytes(pg.socket)
                        _consume(conn, results)
                        received += max(waiting - _pending_bytes(pg.socket), 0)
                    if received > wire_limit:
                        if not (streaming and len(results) == stream):  # not amid the streamed rows
                            _refuse(max_bytes)
                        _detach(tcp)
                        conn.close()  # the query dies with it; the rows kept are the answer
                        return PipelineResults(results, rows, cut=True)
                result = pg.get_result()
                if result is None:  # the end of one command's results
                    if stream is not None and len(results) == stream and not streaming:
                        streaming = _chunked_rows(pg)
                    continue
                if result.status == _PIPELINE_SYNC:
                    break
                if result.status in (_TUPLES_CHUNK, _SINGLE_TUPLE):
                    rows.append(result)
                    fetched += result.ntuples
                    talk.note(rows=fetched)  # for the call's progress reports (when asked for)
                    continue
                results.append(result)
            pg.exit_pipeline_mode()
        except BaseException:
            _detach(tcp)
            conn.close()  # a half-read pipeline cannot be reused: the pool discards it
            raise
    _detach(tcp)
    if len(results) != len(commands):  # pragma: no cover  # libpq returns one per command
        conn.close()
        raise psycopg.OperationalError("unexpected pipeline results")
    return PipelineResults(results, rows)
