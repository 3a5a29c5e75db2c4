"""The read-only executor: sync psycopg work for `read_only_sql` (docs/tools/read_only_sql.md).

Owns the psycopg_pool pool, one call's transaction (BEGIN READ ONLY, its settings and timeouts set
inside it so that a transaction-pooling PgBouncer may sit in between, the query through a
server-side named cursor, at most `max_rows + 1` rows, always rolled back, session state reset)
sent as ONE pipelined round trip, the result byte cap (on the rows' text as they arrive in chunks,
then exactly on the JSON), JSON arrays for user-defined array types, the SQLSTATE → problem mapping
and the `CallTicket` that lets another thread cancel the running query (`cancel_safe`). Runs in
worker threads only: no trio here.
Connection and server failures raise the `database-unavailable` problem (-32603), through
`Availability` (one log line per change of state, a bounded back-off between attempts).
"""

from __future__ import annotations

import fcntl
import logging
import math
import select
import struct
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, TypeVar

import psycopg
from psycopg import pq
from psycopg.adapt import Transformer
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq.abc import PGconn, PGresult
from psycopg.sql import quote as sql_quote
from psycopg_pool import ConnectionPool, PoolTimeout

from mcp_suite.problems import (
    AccessDeniedError,
    ConflictError,
    DatabaseUnavailableError,
    ExecutionTimeoutError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    ResourceLimitError,
    ResultTooLargeError,
    echo,
)
from mcp_suite.settings import Settings
from mcp_suite.tools.read_only_sql.audit import (
    audit_connection,
    format_findings,
    format_warning,
    refusals,
)
from mcp_suite.tools.read_only_sql.availability import Availability
from mcp_suite.tools.read_only_sql.convert import array_loader, json_size, register_loaders, to_json_value
from mcp_suite.tools.read_only_sql.definers import DefinerGuard
from mcp_suite.tools.read_only_sql.naming import APPLICATION_NAME
from mcp_suite.tools.read_only_sql.ticket import CallTicket

if TYPE_CHECKING:
    from mcp_suite.tools.read_only_sql.policy import VettedQuery

__all__ = [
    "CURSOR_NAME",
    "CallCancelledError",
    "CallTicket",
    "Column",
    "DatabaseUnavailableError",
    "Executor",
    "ExplainMode",
    "QueryResult",
    "problem_from_sqlstate",
]

log = logging.getLogger(__name__)
# The pool would log every failed background attempt; `Availability` logs each change of state once.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

T = TypeVar("T")

CURSOR_NAME: Final = "mcp_suite_query"
_IDLE: Final = pq.TransactionStatus.IDLE

# After ROLLBACK, what could still survive into the next call: session advisory locks (the only
# session state a single read-only cursor query can leave behind; GUC changes, even set_config(...,
# false), roll back with the transaction, and LISTEN/PREPARE/temp tables cannot be reached through
# DECLARE). UNLISTEN is cheap belt and braces; both travel in the same pipeline as the query.
_RESET_STATEMENTS: Final = (b"SELECT pg_advisory_unlock_all()", b"UNLISTEN *")

# What every transaction of ours runs with, set inside it: RESET ALL first (what another client of
# a transaction-pooling PgBouncer left on the backend it lends us, such as a search_path, is gone),
# then these (`set_config(..., true)` is SET LOCAL). Both roll back with the transaction, so the
# session itself is never changed, and nothing is sent in the startup packet (PgBouncer refuses
# `options`). Values print the way convert.py expects; the timeouts and application_name (which
# RESET ALL would clear behind a pooler) are added per executor.
_TRANSACTION_SETTINGS: Final = (
    ("DateStyle", "ISO, YMD"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("bytea_output", "hex"),
    ("extra_float_digits", "1"),
    # The policy reads string literals as standard SQL does (a backslash is an ordinary character).
    # A server configured otherwise would read `'x\' , pg_sleep(10) --'` as code; pin it per call.
    ("standard_conforming_strings", "on"),
)


# Every type's display name and, for an array of a user-defined type (oid >= FirstNormalObjectId),
# its element type (a domain's base type) and delimiter: psycopg has array loaders only for the
# built-in types, so the executor adds one per user-defined array type it meets.
_TYPE_INFO_SQL: Final = (
    "SELECT t.oid::int8, format_type(t.oid, NULL),"
    " CASE WHEN t.oid >= 16384 AND t.typcategory = 'A' AND t.typelem <> 0"
    " THEN (CASE WHEN e.typtype = 'd' THEN e.typbasetype ELSE e.oid END)::int8 END,"
    " t.typdelim::text"
    " FROM pg_catalog.pg_type t LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem"
)

# `explain_sql`: what replaces the FETCH (the statement is the vetted text, after the cursor's DECLARE).
ExplainMode = Literal["plan", "analyze"]
_EXPLAIN: Final[dict[str, bytes]] = {
    "plan": b"EXPLAIN (FORMAT JSON) ",
    "analyze": b"EXPLAIN (ANALYZE, FORMAT JSON) ",
}

_FATAL_ERROR: Final = pq.ExecStatus.FATAL_ERROR
_PIPELINE_SYNC: Final = pq.ExecStatus.PIPELINE_SYNC
_ROW_CHUNKS: Final = (pq.ExecStatus.TUPLES_CHUNK, pq.ExecStatus.SINGLE_TUPLE)
_FETCH: Final = 4  # the FETCH's place in a call's pipeline: its rows arrive in chunks
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
    for row in range(min(rows, result.ntuples)):
        for column in range(result.nfields):
            value = result.get_value(row, column)
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


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[Column, ...]
    rows: list[list[Any]]
    truncated: bool


class CallCancelledError(Exception):
    """The call was cancelled before it reached the database (its result is discarded)."""


# A denied or unknown table, column or schema: the next step is to look at what the role may read
# (`sql_schema` is served with every SQL tool). 42P01 undefined_table (also for an unknown schema
# in a table name), 42703 undefined_column.
_SCHEMA_HINT: Final = " sql_schema lists the tables and columns this role may read."
_UNKNOWN_NAME_STATES: Final = frozenset({"42P01", "42703"})


def problem_from_sqlstate(exc: psycopg.Error, *, timeout_ms: int) -> ProblemError | None:
    """The caller-facing problem for a database error, or None for a server/connection failure.

    The table is docs/tools/read_only_sql.md, "SQLSTATE → problem": 57014 → execution-timeout;
    25006 → query-violation; 42501 → access-denied; classes 21, 22, 42, 0A, 54 → validation-error;
    40001, 40P01 → conflict (retryable); 53400 → resource-limit; everything else is not the
    caller's to fix (-32603).
    Security: the detail holds PostgreSQL's primary message cut to 256 characters (it names the
    caller's own tables, columns and values), never str(exc), hints, context or positions.
    """
    state = exc.sqlstate
    if not state:
        return None
    message = echo(exc.diag.message_primary or "")
    meta = {"sqlstate": state}
    if state == "57014":
        return ExecutionTimeoutError(
            f"The query was stopped in the database after the statement timeout ({timeout_ms} ms)"
            " or by a cancel request; ask for less work (filter, aggregate, fewer rows).",
            metadata={**meta, "statement_timeout_ms": timeout_ms},
        )
    if state == "55P03":  # lock_not_available: waited too long for a lock (decision in docs/)
        return ExecutionTimeoutError(
            "The query waited too long for a lock held by another session.", metadata=meta
        )
    if state == "53400":  # configuration_limit_exceeded: temp_file_limit, set for the role
        return ResourceLimitError(
            "The query needed more temporary disk space than the database allows this role"
            " (temp_file_limit): it sorts, hashes or materialises too much. Aggregate or filter"
            " first (WHERE, GROUP BY, a LIMIT inside a subquery) so less data is sorted.",
            metadata=meta,
        )
    if state in {"40001", "40P01"}:
        # serialization_failure (on a hot standby: a recovery conflict, the query was in the way of
        # replaying the primary's changes) and deadlock_detected: the call itself is fine.
        return ConflictError(
            "The database cancelled the query because of a conflict with other work (on a"
            " replica: with replaying the primary's changes). Send the same call again.",
            metadata={**meta, "retryable": True},
        )
    if state[:2] == "25":
        # 25006 read_only_sql_transaction, and the rest of class 25 (for example 25001 from
        # set_config('transaction_read_only', 'off', ...)): the query tried to change the
        # transaction it runs in, which is the caller's doing, not a server failure.
        return QueryViolationError(
            "The database refused this inside the read-only transaction: " + message,
            metadata=meta,
        )
    if state == "42501":
        return AccessDeniedError(
            f"The database role may not do this: {message}.{_SCHEMA_HINT}", metadata=meta
        )
    if state[:2] in {"21", "22", "42", "0A", "54"}:
        hint = _SCHEMA_HINT if state in _UNKNOWN_NAME_STATES else ""
        return InvalidArgumentsError(
            f"The database rejected the query: {message}{'.' if hint else ''}{hint}",
            invalid_params=("sql",),
            metadata=meta,
        )
    return None


def _transaction_settings(settings: Settings, dsn: str) -> bytes:
    """One statement that sets, for the current transaction only, everything a call relies on."""
    values = (
        *_TRANSACTION_SETTINGS,
        ("statement_timeout", str(int(settings.sql_statement_timeout_ms))),
        ("idle_in_transaction_session_timeout", str(_idle_in_tx_ms(settings))),
        ("application_name", str(conninfo_to_dict(dsn).get("application_name") or APPLICATION_NAME)),
    )
    calls = ", ".join(f"pg_catalog.set_config('{name}', {sql_quote(value)}, true)" for name, value in values)
    return f"SELECT {calls}".encode()


def _idle_in_tx_ms(settings: Settings) -> int:
    # A transaction of ours is never idle for long; if this process stalls, the server ends it.
    return max(1_000, math.ceil(settings.call_deadline_s * 1000))


class Executor:
    """A pool plus the per-call transaction. Thread-safe; every public method blocks (run it in a
    worker thread). Limits: pool min/max, connect timeout, statement timeout, max rows, max bytes,
    all from `Settings`.
    """

    def __init__(self, settings: Settings, dsn: str, *, availability: Availability | None = None) -> None:
        self._settings = settings
        self._availability = availability or Availability(max_backoff_s=settings.sql_reconnect_max_s)
        self._dsn = dsn
        self._timeout_ms = settings.sql_statement_timeout_ms
        self._max_bytes = settings.sql_max_result_bytes
        self._type_names: dict[int, str] = {}
        self._array_elements: dict[int, tuple[int, str]] = {}  # array oid -> (element oid, delimiter)
        self._type_lock = threading.Lock()
        self._audit_lock = threading.Lock()
        self._audited = False
        self._refusal: str | None = None
        self._definers = DefinerGuard(
            accepted=settings.sql_accept_definer_functions, cache_s=settings.sql_function_cache_s
        )
        self.round_trips = 0  # network exchanges made by calls (read by tests and the benchmark)
        self._set_local = _transaction_settings(settings, dsn)
        # The whole exchange of one call: the statement timeout, plus time for the server to
        # notice it, plus a connect timeout's worth of network slack.
        self._exchange_timeout_s = (
            self._timeout_ms / 1000 + settings.sql_cancel_grace_s + settings.sql_connect_timeout_s
        )
        self._kwargs: dict[str, Any] = {
            "autocommit": True,  # we send BEGIN READ ONLY ourselves, in the pipeline
            "prepare_threshold": None,  # no server-side prepared statements build up
            "connect_timeout": max(1, math.ceil(settings.sql_connect_timeout_s)),
            # The DBA's handle in pg_stat_activity; an application_name in the DSN wins.
            "fallback_application_name": APPLICATION_NAME,
        }
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            dsn,
            kwargs=self._kwargs,
            min_size=settings.sql_pool_min_size,
            max_size=settings.sql_pool_max_size,
            open=False,
            configure=self._configure,
            timeout=settings.sql_connect_timeout_s,
            max_waiting=4 * settings.sql_pool_max_size,
            # A failing background attempt gives up soon; the next call starts a fresh one.
            reconnect_timeout=max(1.0, 2 * settings.sql_connect_timeout_s),
            name="mcp-suite-sql",
        )

    @property
    def pool_size(self) -> int:
        return self._settings.sql_pool_max_size

    @property
    def pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        return self._pool

    def open(self) -> None:
        """Start the pool; connections are made in the background (a down database is no error)."""
        self._pool.open(wait=False)

    def close(self) -> None:
        self._pool.close(timeout=self._settings.sql_connect_timeout_s)

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        register_loaders(conn.adapters)

    # --- the role audit gate ------------------------------------------------------------------
    def mark_audited(self) -> None:
        with self._audit_lock:
            self._audited = True

    def _ensure_audited(self, conn: psycopg.Connection[Any]) -> None:
        """When the database was down at start-up, the audit runs before the first query."""
        if self._audited:
            return
        with self._audit_lock:
            if self._refusal is None and not self._audited:
                findings = audit_connection(conn, accepted=self._settings.sql_accept_definer_functions)
                if refusals(findings):
                    self._refusal = format_findings(findings)
                    log.critical("%s", self._refusal)
                else:
                    for finding in findings:
                        log.warning("%s", format_warning(finding))
                    self._audited = True
            if self._refusal is not None:
                raise DatabaseUnavailableError(
                    "The database role can do more than read, so no query is run. Retrying will not "
                    "help until an operator fixes the role; the server's log says how.",
                    metadata={"retryable": False},
                )

    # --- one call ------------------------------------------------------------------------------
    @property
    def definers(self) -> DefinerGuard:
        return self._definers

    def run_vetted(
        self,
        query: VettedQuery,
        *,
        max_rows: int,
        ticket: CallTicket,
        explain: ExplainMode | None = None,
    ) -> QueryResult:
        """Run a query the policy vetted, after refusing it (`QueryViolationError`) when it names a
        SECURITY DEFINER function (`definers.DefinerGuard`). Blocking; otherwise as `run`."""
        ticket.started = True

        def work(conn: psycopg.Connection[Any]) -> QueryResult:
            self._definers.check(conn, query.functions, query.operators)
            return self._run_on(conn, query.sql, max_rows=max_rows, ticket=ticket, explain=explain)

        return self._with_connection(ticket, work)

    def run(
        self, sql: str, *, max_rows: int, ticket: CallTicket, explain: ExplainMode | None = None
    ) -> QueryResult:
        """Run one query as it is (no policy, no definer check: `run_vetted` is the tools' path;
        layer tests call this one); blocking. Raises a ProblemError, DatabaseUnavailableError, or
        `CallCancelledError` when the ticket was cancelled before the query started.

        With `explain` ("plan" or "analyze", for `explain_sql`) the same transaction declares the
        cursor (so PostgreSQL still accepts only one SELECT/VALUES), then, in place of the FETCH,
        runs `EXPLAIN (FORMAT JSON)` of the same text, or `EXPLAIN (ANALYZE, FORMAT JSON)`, which
        executes it under the same timeout; the result is that one row.
        Cancellation: `ticket.cancel()` from another thread stops the query in PostgreSQL; the
        connection is rolled back and reset before it returns to the pool.
        Limits: at most `max_rows + 1` rows are fetched; the JSON size is capped.
        """
        ticket.started = True
        return self._with_connection(
            ticket, lambda conn: self._run_on(conn, sql, max_rows=max_rows, ticket=ticket, explain=explain)
        )

    def _with_connection(self, ticket: CallTicket, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        # A connection found broken (the server restarted since it was last used) makes us check
        # the whole pool and retry the call once: every statement we run is read-only and rolled
        # back. When the pool has no connection to give (it reconnects with back-off after an
        # outage), one direct connection serves the call, so recovery does not wait for the pool.
        self._availability.check()
        for attempt in (1, 2):
            if ticket.cancelled:
                raise CallCancelledError
            try:
                with self._pool.connection(timeout=self._settings.sql_pool_wait_s) as conn:
                    self._availability.succeeded()
                    self._ensure_audited(conn)
                    try:
                        return work(conn)
                    except psycopg.OperationalError:
                        if not (conn.broken and attempt == 1 and not ticket.cancelled):
                            raise
                log.info("a database connection was lost; checking the pool, retrying once")
                self._pool.check()
            except PoolTimeout:
                return self._with_direct_connection(work)
            except psycopg.OperationalError as exc:
                if exc.sqlstate and problem_from_sqlstate(exc, timeout_ms=self._timeout_ms):
                    raise
                raise self._availability.failed(exc) from None
        raise DatabaseUnavailableError(
            "The database connection failed twice in a row. Retrying in a little while may help.",
            metadata={"retryable": True},
        )

    def _with_direct_connection(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        try:
            conn = psycopg.Connection.connect(self._dsn, **self._kwargs)
        except psycopg.OperationalError as exc:
            # Down, or refusing this role: the log says which and why, once per change.
            raise self._availability.failed(exc) from None
        self._availability.succeeded()
        try:
            self._configure(conn)
            self._ensure_audited(conn)
            return work(conn)
        except psycopg.OperationalError as exc:
            if exc.sqlstate and problem_from_sqlstate(exc, timeout_ms=self._timeout_ms):
                raise
            raise self._availability.failed(exc) from None
        finally:
            conn.close()

    def _run_on(
        self,
        conn: psycopg.Connection[Any],
        sql: str,
        *,
        max_rows: int,
        ticket: CallTicket,
        explain: ExplainMode | None = None,
    ) -> QueryResult:
        if conn.info.transaction_status != _IDLE:  # never expected: the pool returns clean ones
            self._exchange(conn, b"ROLLBACK")
        if not ticket.attach(conn):
            raise CallCancelledError
        fetch = f'FETCH FORWARD {int(max_rows) + 1} FROM "{CURSOR_NAME}"'.encode()
        if explain is not None:
            fetch = _EXPLAIN[explain] + sql.encode()
        declare = f'DECLARE "{CURSOR_NAME}" NO SCROLL CURSOR FOR {sql}'.encode()
        commands = [b"BEGIN READ ONLY", b"RESET ALL", self._set_local, declare, fetch, b"ROLLBACK"]
        commands.extend(_RESET_STATEMENTS)
        try:
            # One pipeline, one Sync, one round trip. Every statement uses the extended protocol,
            # so PostgreSQL itself accepts exactly one statement in DECLARE ... FOR <query>.
            results, chunks = self._pipeline(conn, commands, max_rows=max_rows)
            self.round_trips += 1
            failed = next((r for r in results if r.status == _FATAL_ERROR), None)
            if failed is not None:
                raise psycopg.errors.error_from_result(failed, encoding=conn.info.encoding)
            description = self._description(conn, results[_FETCH])
        except psycopg.Error as exc:
            self._fail(conn, exc, ticket)
        finally:
            ticket.detach()
        if ticket.cancelled:
            # A cancel may have raced the end of the pipeline: make sure the reset really ran.
            self._restore(conn)
        columns = tuple(Column(name=name, type=self._type_name(conn, oid)) for name, oid in description)
        rows = self._load_rows(conn, chunks, [oid for _, oid in description])
        truncated = len(rows) > max_rows
        return QueryResult(
            columns=columns, rows=self._json_rows(rows[:max_rows], columns), truncated=truncated
        )

    def _pipeline(
        self, conn: psycopg.Connection[Any], commands: list[bytes], *, max_rows: int
    ) -> tuple[list[PGresult], list[PGresult]]:
        """Send `commands` in one pipeline with one Sync; return one result per command, and the
        FETCH's rows, which arrive in chunks.

        libpq directly (psycopg's Pipeline object waits on the socket after every statement,
        which costs four times the CPU). Limits: the whole exchange is bounded in time (statement
        timeout plus margins) and in size: libpq hands over a result only when all of it has
        arrived, so the rows come in chunks of `_CHUNK_ROWS`, and once the text of the first
        `max_rows` rows (the extra row only says `truncated`) passes `_TEXT_FACTOR` times the
        result byte cap, or the bytes seen waiting on the socket pass `_WIRE_FACTOR` times it
        (plus slack), the connection is closed (the query dies with it) and the call gets
        `result-too-large`. The socket count is a lower bound (libpq may read more than was
        waiting), so one value of hundreds of MB, which libpq reads whole, is stopped late.
        """
        pg = conn.pgconn
        deadline = time.monotonic() + self._exchange_timeout_s
        text_limit = _TEXT_FACTOR * self._max_bytes
        wire_limit = _WIRE_FACTOR * self._max_bytes + _WIRE_SLACK
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
                        received = self._within_limit(received + _pending_bytes(pg.socket), wire_limit)
                        pg.consume_input()
                    result = pg.get_result()
                    if result is None:  # the end of one command's results
                        ended += 1
                        if ended == _FETCH and all(r.status != _FATAL_ERROR for r in results):
                            _stream_rows(pg)  # before the FETCH's first result
                        continue
                    if result.status == _PIPELINE_SYNC:
                        break
                    if result.status in _ROW_CHUNKS:
                        size = _text_size(result, max_rows - counted)
                        text = self._within_limit(text + size, text_limit)
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

    @staticmethod
    def _description(conn: psycopg.Connection[Any], result: PGresult) -> list[tuple[str, int]]:
        encoding = conn.info.encoding
        return [
            ((result.fname(i) or b"").decode(encoding, "replace"), result.ftype(i))
            for i in range(result.nfields)
        ]

    def _load_rows(
        self, conn: psycopg.Connection[Any], chunks: list[PGresult], oids: list[int]
    ) -> list[tuple[Any, ...]]:
        """The fetched rows as Python values (no I/O: the chunks are in memory). Columns of a
        user-defined array type first get that type's array loader on this connection."""
        adapters = conn.adapters
        for oid in oids:
            element = self._array_elements.get(oid)
            if element is not None and adapters.get_loader(oid, pq.Format.TEXT) is None:
                loader = array_loader(*element)
                if loader is not None:
                    adapters.register_loader(oid, loader)
        rows: list[tuple[Any, ...]] = []
        transformer = Transformer(conn)
        for chunk in chunks:
            transformer.set_pgresult(chunk)
            rows.extend(transformer.load_rows(0, chunk.ntuples, tuple))
        return rows

    def _within_limit(self, size: int, limit: int) -> int:
        """`size`, or `result-too-large` once it passes `limit` bytes."""
        if size > limit:
            raise self._too_large()
        return size

    def _too_large(self) -> ResultTooLargeError:
        return ResultTooLargeError(
            f"The result is larger than {self._max_bytes} bytes of JSON. Select fewer or"
            " shorter values: fewer columns, a smaller max_rows, left(col, 200) for long"
            " text, or an aggregate.",
            metadata={"max_result_bytes": self._max_bytes},
        )

    def _exchange(self, conn: psycopg.Connection[Any], statement: bytes) -> None:
        self.round_trips += 1
        conn.execute(statement)

    def _fail(self, conn: psycopg.Connection[Any], exc: psycopg.Error, ticket: CallTicket) -> NoReturn:
        """After a failed statement: clean the connection, then raise the caller's problem (for
        what the caller asked) or the database error itself (for a server or connection failure)."""
        ticket.detach()  # no cancel request may reach the clean-up below
        self._restore(conn)
        problem = problem_from_sqlstate(exc, timeout_ms=self._timeout_ms)
        if problem is not None and not conn.broken:
            raise problem from None
        raise exc

    def _restore(self, conn: psycopg.Connection[Any]) -> None:
        """Roll back and reset after a failure; a connection that cannot be reset is closed (the
        pool then discards it)."""
        if conn.broken or conn.closed:
            return
        try:
            # One simple-query message: ROLLBACK (when a transaction is open) and the reset.
            statements = list(_RESET_STATEMENTS)
            if conn.info.transaction_status != _IDLE:
                statements.insert(0, b"ROLLBACK")
            self._exchange(conn, b"; ".join(statements))
        except psycopg.Error:
            log.warning("could not reset a database connection; closing it", exc_info=True)
            conn.close()

    def _json_rows(self, rows: list[tuple[Any, ...]], columns: tuple[Column, ...]) -> list[list[Any]]:
        """JSON-ready rows, or ResultTooLargeError past the byte cap.

        Limits: at most `max_rows` rows arrive here (already in memory); their compact ASCII JSON
        plus the column list must fit `MCP_SQL_MAX_RESULT_BYTES`.
        """
        out = [[to_json_value(value) for value in row] for row in rows]
        # A cheap lower bound first (string lengths): a huge result is refused before it is
        # serialised, so the one exact json.dumps below stays within a few times the cap.
        floor = sum(len(value) for row in out for value in row if isinstance(value, str))
        if floor <= self._max_bytes:
            size = json_size([{"name": c.name, "type": c.type} for c in columns]) + json_size(out)
        if floor > self._max_bytes or size + 64 > self._max_bytes:
            raise self._too_large()
        return out

    # --- column type names ---------------------------------------------------------------------
    def _type_name(self, conn: psycopg.Connection[Any], oid: int) -> str:
        name = self._type_names.get(oid)
        if name is not None:
            return name
        with self._type_lock:
            if oid not in self._type_names:
                self.round_trips += 1
                row = conn.execute(_TYPE_INFO_SQL + " WHERE t.oid = %s::oid", (oid,)).fetchone()
                name = str(row[1]) if row and row[1] else f"oid {oid}"
                if len(self._type_names) >= 10_000:  # bounded cache
                    return name
                self._type_names[oid] = name
                if row and row[2] is not None:
                    self._array_elements[oid] = (int(row[2]), str(row[3]))
            return self._type_names[oid]

    def load_type_names(self, conn: psycopg.Connection[Any]) -> None:
        """Preload every type's name and array element (one query): no extra round trip later."""
        rows = conn.execute(_TYPE_INFO_SQL).fetchall()
        with self._type_lock:
            self._type_names.update({int(oid): str(name) for oid, name, _, _ in rows if name})
            self._array_elements.update(
                {
                    int(oid): (int(element), str(delim))
                    for oid, _, element, delim in rows
                    if element is not None
                }
            )

    def preload_type_names(self) -> None:
        """`load_type_names` on a pooled connection (blocking: waits for the pool's first one)."""
        with self._pool.connection(timeout=self._settings.sql_connect_timeout_s) as conn:
            self.load_type_names(conn)

    # --- catalogue reads (sql_schema and the schema resource) ---------------------------------
    def read_catalogue(self, work: Callable[[psycopg.Connection[Any]], T], *, ticket: CallTicket) -> T:
        """Run `work(conn)`, fixed catalogue queries, inside a read-only transaction with the
        call's statement timeout, always rolled back; blocking. Cancellation and failures as `run`.
        """
        ticket.started = True

        def on_connection(conn: psycopg.Connection[Any]) -> T:
            if not ticket.attach(conn):
                raise CallCancelledError
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute(b"SET TRANSACTION READ ONLY")
                    conn.execute(self._set_local)
                    return work(conn)
            except psycopg.Error as exc:
                self._fail(conn, exc, ticket)
            finally:
                ticket.detach()

        return self._with_connection(ticket, on_connection)
