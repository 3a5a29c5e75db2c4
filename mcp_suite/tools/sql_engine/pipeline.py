"""One call's statements as ONE pipelined round trip on libpq, with its memory bound.

libpq directly: psycopg's Pipeline object waits on the socket after every statement (bench_sql;
the figure is in docs/performance.md). The exchange is bounded in time and in bytes while the
rows arrive. Blocking (sync libpq); run in worker threads only.
"""

from __future__ import annotations

import fcntl
import select
import struct
import termios
import time
from typing import Any, Final

import psycopg
from psycopg import pq
from psycopg.pq.abc import PGresult

from mcp_suite.tools.sql_engine.result import too_large

__all__ = ["run_pipeline"]

_PIPELINE_SYNC: Final = pq.ExecStatus.PIPELINE_SYNC
_FATAL_ERROR: Final = pq.ExecStatus.FATAL_ERROR
_SQLSTATE: Final = pq.DiagnosticField.SQLSTATE
# Bytes read from the socket for one call before it is refused. libpq hands over a result only
# once all of it has arrived, so what arrives is counted while it arrives. A row's wire form is at
# most about 2.5 times its JSON (4-byte length words on tiny values); the slack covers the replies
# of the transaction statements and the row description.
_WIRE_FACTOR: Final = 4
_WIRE_SLACK: Final = 64 << 10


def _pending_bytes(fd: int) -> int:
    """Bytes waiting in the socket's receive queue (what the next read will take, at least)."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


def _wait_socket(conn: psycopg.Connection[Any], deadline: float, *, write: bool) -> None:
    """Block until the connection's socket is ready, at most until `deadline` (monotonic)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise psycopg.OperationalError("the database did not answer in time")
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLOUT if write else select.POLLIN)
    poller.poll(remaining * 1000)


def _within(size: int, limit: int, max_bytes: int) -> int:
    """`size`, or `result-too-large` (for a cap of `max_bytes`) once it passes `limit` bytes."""
    if size > limit:
        raise too_large(max_bytes)
    return size


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


def run_pipeline(
    conn: psycopg.Connection[Any],
    commands: list[bytes],
    *,
    max_bytes: int,
    timeout_s: float,
) -> list[PGresult]:
    """Send `commands` in one pipeline with one Sync; return one result per command.

    Limits: the whole exchange takes at most `timeout_s`; once the bytes libpq took off the socket
    pass `_WIRE_FACTOR` times `max_bytes` (plus slack), the connection is closed (the query dies
    with it) and the call gets `result-too-large`, so a result never holds more than that in
    memory while it arrives (plus what one read of libpq takes). The count is a lower bound (bytes
    that arrive during a read and are taken by it are not seen), so one value of hundreds of MB,
    which libpq reads whole, is stopped late.
    """
    pg = conn.pgconn
    deadline = time.monotonic() + timeout_s
    wire_limit = _WIRE_FACTOR * max_bytes + _WIRE_SLACK
    received = 0
    results: list[PGresult] = []
    with conn.lock:
        pg.enter_pipeline_mode()
        try:
            for command in commands:
                pg.send_query_params(command, None)
            pg.pipeline_sync()
            while pg.flush():
                _wait_socket(conn, deadline, write=True)
            while True:
                while pg.is_busy():
                    _wait_socket(conn, deadline, write=False)
                    # What libpq took off the socket this time: what was waiting before its read
                    # less what still waits after it. libpq may take only part of what waits, and
                    # the rest must not be counted again on the next pass.
                    waiting = _pending_bytes(pg.socket)
                    _consume(conn, results)
                    taken = waiting - _pending_bytes(pg.socket)
                    received = _within(received + max(taken, 0), wire_limit, max_bytes)
                result = pg.get_result()
                if result is None:  # the end of one command's results
                    continue
                if result.status == _PIPELINE_SYNC:
                    break
                results.append(result)
            pg.exit_pipeline_mode()
        except BaseException:
            conn.close()  # a half-read pipeline cannot be reused: the pool discards it
            raise
    if len(results) != len(commands):  # pragma: no cover  # libpq returns one per command
        conn.close()
        raise psycopg.OperationalError("unexpected pipeline results")
    return results
