"""One call's statements as ONE pipelined round trip on libpq, with its memory bound.

libpq directly: psycopg's Pipeline object waits on the socket after every statement (bench_sql;
the figure is in docs/performance.md). The FETCH's rows arrive in chunks, and the exchange is
bounded in time and in bytes while they stream. Blocking (sync libpq); run in worker threads only.
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
from psycopg.pq.abc import PGconn, PGresult

from mcp_suite.tools.read_only_sql.result import too_large

__all__ = ["run_pipeline"]

_FATAL_ERROR: Final = pq.ExecStatus.FATAL_ERROR
_PIPELINE_SYNC: Final = pq.ExecStatus.PIPELINE_SYNC
_ROW_CHUNKS: Final = (pq.ExecStatus.TUPLES_CHUNK, pq.ExecStatus.SINGLE_TUPLE)
_CHUNK_ROWS: Final = 16
# The rows' text may reach this many times the result byte cap before the call is refused (JSON is
# never less than two thirds of it: jsonb loses its spaces, nothing loses more).
_TEXT_FACTOR: Final = 2
# Bytes read from the socket for one call before it is refused: libpq reads a long row whole before
# it hands over even a chunk, so the arriving bytes are counted too. A row's wire form is at most
# about 2.5 times its JSON (4-byte length words on tiny values); the slack covers the replies of
# the transaction statements.
_WIRE_FACTOR: Final = 4
_WIRE_SLACK: Final = 1 << 20


def _pending_bytes(fd: int) -> int:
    """Bytes waiting in the socket's receive queue (what the next read will take, at least)."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


def _stream_rows(pg: PGconn) -> None:
    """Have the next command's rows arrive in chunks (libpq 17+), or row by row (older libpq)."""
    try:
        pg.set_chunked_rows_mode(_CHUNK_ROWS)
    except psycopg.NotSupportedError:
        pg.set_single_row_mode()


def _text_size(result: PGresult, rows: int) -> int:
    """Bytes of text in the first `rows` rows of `result` (NULLs count zero)."""
    size = 0
    value_of = result.get_value
    columns = range(result.nfields)
    for row in range(min(rows, result.ntuples)):
        for column in columns:
            value = value_of(row, column)
            if value is not None:
                size += len(value)
    return size


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


def run_pipeline(
    conn: psycopg.Connection[Any],
    commands: list[bytes],
    *,
    rows_at: int,
    max_rows: int,
    max_bytes: int,
    timeout_s: float,
) -> tuple[list[PGresult], list[PGresult]]:
    """Send `commands` in one pipeline with one Sync; return one result per command, and the rows
    of the command at index `rows_at` (the FETCH), which arrive in chunks.

    Limits: the whole exchange takes at most `timeout_s`; libpq hands over a result only when all
    of it has arrived, so the rows come in chunks of `_CHUNK_ROWS`, and once the text of the first
    `max_rows` rows (an extra row only says `truncated`) passes `_TEXT_FACTOR` times `max_bytes`,
    or the bytes seen waiting on the socket pass `_WIRE_FACTOR` times it (plus slack), the
    connection is closed (the query dies with it) and the call gets `result-too-large`. The socket
    count is a lower bound (libpq may read more than was waiting), so one value of hundreds of MB,
    which libpq reads whole, is stopped late.
    """
    pg = conn.pgconn
    deadline = time.monotonic() + timeout_s
    text_limit = _TEXT_FACTOR * max_bytes
    wire_limit = _WIRE_FACTOR * max_bytes + _WIRE_SLACK
    received = 0
    text = 0
    counted = 0  # rows whose text has been counted
    results: list[PGresult] = []
    chunks: list[PGresult] = []
    with conn.lock:
        pg.enter_pipeline_mode()
        try:
            for command in commands:
                pg.send_query_params(command, None)
            pg.pipeline_sync()
            while pg.flush():
                _wait_socket(conn, deadline, write=True)
            ended = 0  # commands whose results are complete (libpq returned None after them)
            while True:
                while pg.is_busy():
                    _wait_socket(conn, deadline, write=False)
                    received = _within(received + _pending_bytes(pg.socket), wire_limit, max_bytes)
                    pg.consume_input()
                result = pg.get_result()
                if result is None:  # the end of one command's results
                    ended += 1
                    if ended == rows_at and all(r.status != _FATAL_ERROR for r in results):
                        _stream_rows(pg)  # before the FETCH's first result
                    continue
                if result.status == _PIPELINE_SYNC:
                    break
                if result.status in _ROW_CHUNKS:
                    text = _within(text + _text_size(result, max_rows - counted), text_limit, max_bytes)
                    counted += result.ntuples
                    chunks.append(result)
                    continue
                results.append(result)
            pg.exit_pipeline_mode()
        except BaseException:
            conn.close()  # a half-read pipeline cannot be reused: the pool discards it
            raise
    if len(results) != len(commands):  # pragma: no cover  # libpq returns one per command
        conn.close()
        raise psycopg.OperationalError("unexpected pipeline results")
    return results, chunks
