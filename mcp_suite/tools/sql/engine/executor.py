"""The read-only executor: the pool and one call's transaction for `read_only_sql` (docs/tools/).

Owns the psycopg_pool pool and its hygiene (the pool's `reset` hook cleans a connection a call
could not clean itself), the role-audit gate, and one call: BEGIN READ ONLY, its pinned settings and
timeouts (set once per connection and checked by every call on a direct connection; set inside
every call behind a transaction-pooling PgBouncer, `MCP_SQL_POOLER=transaction`), the query
through a server-side named cursor, at most `max_rows + 1` rows, always rolled back, session state
reset, sent as one round trip (`pipeline.py`); `result.py` shapes the rows, `type_names.py` names
the types, `sqlstate.py` maps errors. Runs in worker threads only: no trio here.
Only a failure of the connection itself raises the `database-unavailable` problem (-32603) through
`Availability` (one log line per change of state, a bounded back-off between attempts); a query's
error is its problem, whatever psycopg class carries it (`sqlstate.classify`).
"""

from __future__ import annotations

import logging
import math
import secrets
import select
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, TypeVar

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.sql import quote as sql_quote
from psycopg_pool import ConnectionPool, PoolTimeout

from mcp_suite.problems import DatabaseUnavailableError, ProblemError
from mcp_suite.protocol.identity import CLAIMS_SETTING, CallRole
from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.availability import Availability
from mcp_suite.tools.sql.engine.convert import register_loaders
from mcp_suite.tools.sql.engine.definers import DefinerGuard
from mcp_suite.tools.sql.engine.names import NameGuard
from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from mcp_suite.tools.sql.engine.pipeline import run_pipeline
from mcp_suite.tools.sql.engine.result import (
    Column,
    QueryResult,
    description,
    json_rows,
    load_rows,
    plan_json,
    too_large,
)
from mcp_suite.tools.sql.engine.role_audit.audit import audit_with_settings
from mcp_suite.tools.sql.engine.role_audit.connect import POOLER_IN_FRONT, connect_timeout, pooler_in_front
from mcp_suite.tools.sql.engine.role_audit.finding import refusals
from mcp_suite.tools.sql.engine.role_audit.login import reachable_roles
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate
from mcp_suite.tools.sql.engine.sqlstate import Fault, classify, problem_from_sqlstate
from mcp_suite.tools.sql.engine.ticket import CallTicket
from mcp_suite.tools.sql.engine.type_names import TypeNames

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.policy import VettedQuery

__all__ = [
    "CURSOR_NAME",
    "CallCancelledError",
    "CallTicket",
    "Column",
    "DatabaseUnavailableError",
    "Executor",
    "ExecutorStatistics",
    "ExplainMode",
    "QueryResult",
    "problem_from_sqlstate",
]

log = logging.getLogger(__name__)
# The pool would log every failed background attempt; `Availability` logs each change of state once.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

T = TypeVar("T")

CURSOR_NAME: Final = "mcp_suite_query"


# After ROLLBACK, what a function can leave in the session that the ROLLBACK does not take back
# (docs/tools/read_only_sql.md, "What a call can leave behind", lists every kind and why the others
# cannot matter): prepared statements (`EXECUTE 'PREPARE ...'` in a function), session advisory locks
# and the random seed (`setseed()`), which the next call must not be able to predict, so it is drawn
# afresh here for every reset. Two statements: DEALLOCATE is a utility statement (no function does
# it), the rest is one SELECT. `DISCARD ALL` is not used: it does not reseed, and the rest of what it
# does either rolled back already or would cost every next call its cached plans (DISCARD PLANS).
# A call sends the reset in its own pipeline; `_restore` sends it when that pipeline did not get
# that far.
def _reset_statements() -> tuple[bytes, bytes]:
    seed = secrets.randbits(52) / (1 << 52) * 2 - 1  # setseed takes [-1, 1]
    return (
        b"DEALLOCATE ALL",
        f"SELECT pg_catalog.pg_advisory_unlock_all(), pg_catalog.setseed({seed!r})".encode(),
    )


# What every transaction of ours runs with (values print the way convert.py expects; the timeouts,
# application_name and the search path are added per executor). Where they are set depends on
# `MCP_SQL_POOLER` (docs/tools/read_only_sql.md, "Settings of a call"):
# - "transaction" (a transaction-pooling PgBouncer lends us any backend for each transaction):
#   inside every call, RESET ALL first (what another client left on the backend, such as a
#   search_path, is gone), then `set_config(..., true)` (SET LOCAL), all rolled back with it;
# - "none" (each pooled connection is its own backend): once per connection (`set_config(...,
#   false)`, a session setting), after making sure no pooler answers for the backend. A call
#   cannot change them for the next: every call rolls back, and a SET rolls back with its
#   transaction. Every call checks, in its transaction and before its query, that its backend is
#   the one pinned and was not reset since (`_pin_check`); otherwise the call is refused.
# Nothing is sent in the startup packet (PgBouncer refuses `options`).
_PINNED_SETTINGS: Final = (
    ("DateStyle", "ISO, YMD"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("bytea_output", "hex"),
    ("extra_float_digits", "1"),
    # The policy reads string literals as standard SQL does (a backslash is an ordinary character).
    # A server configured otherwise would read `'x\' , pg_sleep(10) --'` as code; pin it per call.
    ("standard_conforming_strings", "on"),
)

# `pg_catalog` first in the search path, then the role's own (what RESET ALL just restored: ALTER
# ROLE/DATABASE ... SET search_path), so tables resolve as the DBA set them up, but a same-named
# function, aggregate or operator in another schema can never take a built-in's place
# (`ALTER ROLE ... SET search_path = util, pg_catalog` would otherwise let `util.max` run for
# `max(x)`). Only schema-qualified calls and no operator: this statement is itself parsed under the
# role's search path.
_PINNED_SEARCH_PATH: Final = (
    "pg_catalog.set_config('search_path',"
    " pg_catalog.textcat('pg_catalog, ', pg_catalog.current_setting('search_path')), true)"
)

# `explain_sql`: what replaces the FETCH (the statement is the vetted text, after the cursor's DECLARE).
ExplainMode = Literal["plan", "analyze"]
_EXPLAIN: Final[dict[str, bytes]] = {
    "plan": b"EXPLAIN (FORMAT JSON) ",
    "analyze": b"EXPLAIN (ANALYZE, FORMAT JSON) ",
}

_FATAL_ERROR: Final = pq.ExecStatus.FATAL_ERROR
_SQLSTATE: Final = pq.DiagnosticField.SQLSTATE
_MOVE: Final = f'MOVE FORWARD 1 IN "{CURSOR_NAME}"'.encode()
# Every call's transaction (explain_sql's too): READ ONLY.
_BEGIN: Final = b"BEGIN READ ONLY"
# What the pin check raises on a backend that is not the one pinned (no such setting: 42704), or
# one whose settings were reset since (RESET ALL leaves it empty, not a number: 22P02).
_CHECK_FAILED: Final = frozenset({b"42704", b"22P02"})


def _closed_while_idle(conn: psycopg.Connection[Any]) -> bool:
    """True when the server closed this idle pooled connection (or said anything at all on it).

    An idle connection of ours has nothing to read: the server speaks only when asked, and our
    sessions keep no LISTEN. Bytes waiting (the FATAL of a restart or pg_terminate_backend, then
    end of file) mean it is gone. One poll(0) system call, no round trip.
    """
    if conn.closed or conn.broken:
        return True
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLIN)
    return bool(poller.poll(0))


class CallCancelledError(Exception):
    """The call was cancelled before it reached the database (its result is discarded)."""


@dataclass(frozen=True, slots=True)
class ExecutorStatistics:
    """What `Executor.statistics()` returns: counts since the executor was made."""

    round_trips: int  # network exchanges made for calls: pipelines, type lookups, resets
    type_names: int  # column type names cached
    pool_size: int  # connections the pool holds now (in use or idle)
    pool_available: int  # idle connections in the pool
    pool_waiting: int = 0  # calls waiting for a connection now


def _pinned_settings(settings: Settings, dsn: str, *, local: bool, pin: str | None = None) -> bytes:
    """One statement that sets everything a call relies on, for the current transaction only
    (`local`) or for the session; and, when given, the custom setting `pin` to 1."""
    values = (
        *_PINNED_SETTINGS,
        ("statement_timeout", str(int(settings.sql_statement_timeout_ms))),
        ("idle_in_transaction_session_timeout", str(_idle_in_tx_ms(settings))),
        ("application_name", str(conninfo_to_dict(dsn).get("application_name") or APPLICATION_NAME)),
    )
    scope = "true" if local else "false"
    calls = ", ".join(
        f"pg_catalog.set_config('{name}', {sql_quote(value)}, {scope})" for name, value in values
    )
    search_path = _PINNED_SEARCH_PATH.replace(", true)", f", {scope})")
    marker = f", pg_catalog.set_config('{pin}', '1', false)" if pin else ""
    return f"SELECT {calls}, {search_path}{marker}".encode()


def _switch_role(role: CallRole) -> bytes:
    """One statement that switches the call's transaction to its caller's mapped role (issue 42)
    and tells it who calls: the claims as JSON in `request.jwt.claims` (PostgREST's setting, which
    row-level security policies written for it already read) and `application_name` (what
    `pg_stat_activity` and a `log_line_prefix` with `%a` show). `SET LOCAL`, each of them: the
    call's ROLLBACK ends them, so a pooled connection or a PgBouncer backend never keeps them.
    The values are quoted literals (`sql_quote`); the policy refuses every statement that could
    change them (`set_config`, `SET`, `RESET`)."""
    values = (("role", role.role), (CLAIMS_SETTING, role.claims), ("application_name", role.application_name))
    calls = ", ".join(f"pg_catalog.set_config('{name}', {sql_quote(value)}, true)" for name, value in values)
    return f"SELECT {calls}".encode()


def _pin_check(pin: str) -> bytes:
    """One statement that fails (`_CHECK_FAILED`) unless the session's custom setting `pin` is 1:
    on any backend but the one it was set on, or after a RESET ALL there. One schema-qualified
    function and a cast to a qualified type: behind a pooler it may run under any search path.
    (Comparing every pinned setting's value instead cost about 80 µs a call, as much as setting
    them: bench/bench_sql.py, docs/performance.md.)"""
    return f"SELECT pg_catalog.current_setting('{pin}')::pg_catalog.int4".encode()


class PinnedConnection(psycopg.Connection[Any]):
    """A connection of the pool; on a direct one (`MCP_SQL_POOLER=none`), `pin_check` is the
    statement that proves, inside a call's transaction, that its backend is still the one whose
    session was pinned, and was not reset since."""

    pin_check: bytes = b""


class SettingsNotPinnedError(DatabaseUnavailableError):
    """A backend does not show the settings pinned on its connection: something between the pool and
    PostgreSQL hands backends around, and `MCP_SQL_POOLER` says nothing does."""

    def __init__(self) -> None:
        super().__init__(
            "The database connection's settings are not the ones this server set on it, so the call"
            " was refused and the connection closed: a connection pooler sits between this server and"
            " PostgreSQL. The operator sets MCP_SQL_POOLER=transaction for it.",
            metadata={"retryable": False},
        )


def _idle_in_tx_ms(settings: Settings) -> int:
    # A transaction of ours is never idle for long; if this process stalls, the server ends it.
    return max(1_000, math.ceil(settings.call_deadline_s * 1000))


def shrink_period_s(settings: Settings) -> float:
    """psycopg_pool's `max_idle` that closes every idle connection within MCP_SQL_POOL_MAX_IDLE_S.

    Every `max_idle` seconds the pool closes one connection above `min_size` if it held an unused
    one all through the period. The period in which the last call ends may have none unused, then
    one closes per period: `max_size` connections are gone `max_size + 1` periods after the last
    call at most, so the period is the idle time divided by that (and no connection is closed
    before it sat unused a whole period).
    """
    return settings.sql_pool_max_idle_s / (settings.sql_pool_max_size + 1)


class Executor:
    """A pool plus the per-call transaction. Thread-safe; every public method blocks (run it in a
    worker thread). Limits: pool min/max, connect timeout, statement timeout, max rows, max bytes,
    all from `Settings`.

    Connection hygiene: a call's own pipeline ends with ROLLBACK and the reset statements; after a
    failure or a cancel, `_restore` sends them before the connection goes back. The pool's `reset`
    hook is not used for it: with one, psycopg_pool hands every returned connection to a worker
    thread (a thread hand-off per call, on the success path too). Its `check` hook costs a round
    trip per checkout; instead a call polls its connection's socket (no round trip) and, when the
    server has closed it, runs `pool.check()` and takes another.
    """

    def __init__(
        self,
        settings: Settings,
        dsn: str,
        *,
        availability: Availability | None = None,
        gate: AuditGate | None = None,
        roles: Sequence[str] = (),
    ) -> None:
        self._settings = settings
        self._roles = tuple(roles)  # an identity map's roles: each audited, each its own catalogue
        self._gate = gate or AuditGate()
        self._availability = availability or Availability(max_backoff_s=settings.sql_reconnect_max_s)
        self._dsn = dsn
        self._timeout_ms = settings.sql_statement_timeout_ms
        self._max_bytes = settings.sql_max_result_bytes
        self._types = TypeNames()
        self._audit_lock = threading.Lock()
        self._audited = False
        self._definers = DefinerGuard(
            accepted=settings.sql_accept_definer_functions, cache_s=settings.sql_function_cache_s
        )
        self._names = NameGuard(
            allowed_extensions=settings.sql_allow_extensions, cache_s=settings.sql_function_cache_s
        )
        self._round_trips = 0
        self._count_lock = threading.Lock()
        # `read_catalogue` sets them in its transaction whatever the pooler; a call does so only
        # behind one (`_pin_session` sets them once per direct connection).
        self._set_local = _pinned_settings(settings, dsn, local=True)
        self._direct = settings.sql_pooler == "none"
        # The whole exchange of one call: the statement timeout, plus time for the server to
        # notice it, plus a connect timeout's worth of network slack.
        self._exchange_timeout_s = (
            self._timeout_ms / 1000 + settings.sql_cancel_grace_s + settings.sql_connect_timeout_s
        )
        self._kwargs: dict[str, Any] = {
            "autocommit": True,  # we send BEGIN READ ONLY ourselves, in the pipeline
            "prepare_threshold": None,  # no server-side prepared statements build up
            "connect_timeout": connect_timeout(settings.sql_connect_timeout_s),
            # The DBA's handle in pg_stat_activity; an application_name in the DSN wins.
            "fallback_application_name": APPLICATION_NAME,
        }
        self._pool: ConnectionPool[PinnedConnection] = ConnectionPool(
            dsn,
            connection_class=PinnedConnection,
            kwargs=self._kwargs,
            min_size=settings.sql_pool_min_size,
            max_size=settings.sql_pool_max_size,
            open=False,
            configure=self._configure,
            timeout=settings.sql_connect_timeout_s,
            max_waiting=4 * settings.sql_pool_max_size,
            max_idle=shrink_period_s(settings),
            # A failing background attempt gives up soon; the next call starts a fresh one.
            reconnect_timeout=max(1.0, 2 * settings.sql_connect_timeout_s),
            name="mcp-suite-sql",
        )

    def statistics(self) -> ExecutorStatistics:
        """Counts since the executor was made (like trio's `statistics()`: a frozen record)."""
        types = self._types.statistics()
        pool = self._pool.get_stats()
        return ExecutorStatistics(
            round_trips=self._round_trips + types.lookups,
            type_names=types.names,
            pool_size=pool.get("pool_size", 0),
            pool_available=pool.get("pool_available", 0),
            pool_waiting=pool.get("requests_waiting", 0),
        )

    def open(self) -> None:
        """Start the pool; connections are made in the background (a down database is no error)."""
        self._pool.open(wait=False)

    def close(self) -> None:
        self._pool.close(timeout=self._settings.sql_connect_timeout_s)

    def _configure(self, conn: PinnedConnection) -> None:
        register_loaders(conn.adapters, encoding=conn.info.encoding)
        if self._direct:
            self._pin_session(conn)

    def _pin_session(self, conn: PinnedConnection) -> None:
        """Set the pinned settings for the session of a direct connection, with a custom setting of
        its own that every call checks (`_pin_check`). A pooler in front is refused first, before
        any setting could stay on a backend it lends to others: the process id its handshake
        announces is its own, not the backend's."""
        if pooler_in_front(conn):
            log.error(POOLER_IN_FRONT)
            raise SettingsNotPinnedError
        pin = f"mcp_suite.pinned_{secrets.token_hex(8)}"  # this connection's own: no other backend has it
        conn.execute(_pinned_settings(self._settings, self._dsn, local=False, pin=pin))
        conn.pin_check = _pin_check(pin)

    def _counted(self) -> None:
        with self._count_lock:
            self._round_trips += 1

    # --- the role audit gate ------------------------------------------------------------------
    def mark_audited(self) -> None:
        with self._audit_lock:
            self._audited = True

    def _ensure_audited(self, conn: psycopg.Connection[Any], role: str | None = None) -> None:
        """When the database was down at start-up, the audit runs before the first query, and its
        refusal is the gate's (lifted, like a re-audit's, once a re-audit passes). The gate is asked
        again here, before anything reaches the database: it may have shut while the call waited
        for its connection (it was asked first in `_with_connection`)."""
        self._gate.check(role)
        if self._audited:
            return
        with self._audit_lock:
            if not self._audited:
                findings = audit_with_settings(conn, self._settings, self._roles)
                self._audited = not any(not f.role for f in refusals(findings))
                self._gate.record(findings)  # logs its warnings, or the refusal
        self._gate.check(role)

    # --- one call ------------------------------------------------------------------------------
    @property
    def definers(self) -> DefinerGuard:
        return self._definers

    @property
    def names(self) -> NameGuard:
        return self._names

    def refresh_catalogue(self, conn: psycopg.Connection[Any]) -> None:
        """Both run-time guards read the catalogue now, on `conn` (the re-audit's connection); the
        name guard once per role it judges for (the login role, and each mapped role it reaches)."""
        self._definers.refresh(conn)
        self._names.refresh(conn)
        if self._roles:
            with conn.transaction(force_rollback=True):
                reachable = reachable_roles(conn, frozenset(self._roles))
            for role in self._roles:
                if role in reachable:  # the others are refused by the audit (their calls stop)
                    self._names.refresh(conn, role)

    def run_vetted(
        self,
        query: VettedQuery,
        *,
        max_rows: int,
        ticket: CallTicket,
        explain: ExplainMode | None = None,
        role: CallRole | None = None,
    ) -> QueryResult:
        """Run a query the policy vetted, after refusing it (`QueryViolationError`) when it names a
        SECURITY DEFINER function (`definers.DefinerGuard`), or a function or type outside
        PostgreSQL's own schemas that the role's catalogue does not allow (`names.NameGuard`).
        With `role` (an identity map's), the transaction runs as that role (`_switch_role`), the
        name guard judges by that role's catalogue, and that role's audit gate is asked.
        Blocking; otherwise as `run`."""
        ticket.started = True
        as_role = role.role if role is not None else None

        def work(conn: PinnedConnection) -> QueryResult:
            self._names.check(conn, query.external_functions, query.external_types, role=as_role)
            self._definers.check(conn, query.functions, query.operators)
            return self._run_on(conn, query.sql, max_rows=max_rows, ticket=ticket, explain=explain, role=role)

        return self._with_connection(ticket, work, role=as_role)

    def run(
        self, sql: str, *, max_rows: int, ticket: CallTicket, explain: ExplainMode | None = None
    ) -> QueryResult:
        """Run one query as it is (no policy, no definer check: `run_vetted` is the tools' path;
        layer tests call this one); blocking. Raises a ProblemError, DatabaseUnavailableError, or
        `CallCancelledError` when the ticket was cancelled before the query started.

        With `explain` ("plan" or "analyze", for `explain_sql`) the same transaction declares the
        cursor (so PostgreSQL still accepts only one SELECT/VALUES), then, in place of the FETCH,
        runs `EXPLAIN (FORMAT JSON)` of the same text, or `EXPLAIN (ANALYZE, FORMAT JSON)`, which
        executes it; the result is that one row. Planning runs code too (constant folding, casts,
        estimators: the DECLARE plans, and so does a plain EXPLAIN), so every statement after the
        settings, plain plans included, runs under the call's statement timeout.
        Cancellation: `ticket.cancel()` from another thread stops the query in PostgreSQL; the
        connection is rolled back and reset before it returns to the pool.
        Limits: at most `max_rows + 1` rows are fetched; the JSON size is capped.
        """
        ticket.started = True
        return self._with_connection(
            ticket, lambda conn: self._run_on(conn, sql, max_rows=max_rows, ticket=ticket, explain=explain)
        )

    def _with_connection(
        self, ticket: CallTicket, work: Callable[[PinnedConnection], T], *, role: str | None = None
    ) -> T:
        # When a call is retried (docs/tools/read_only_sql.md): a pooled connection that the
        # server closed while it sat idle (a restart, pg_terminate_backend, an idle timeout) is
        # found so before anything of the call is sent, and another is taken: safe (nothing ran)
        # and useful (the pool is checked first, so the other dead ones go). A connection that
        # fails once the call is sent is never retried: the query may have run, and its answer
        # says why. When the pool has no connection to give (it reconnects with back-off after an
        # outage), one direct connection serves the call, so recovery does not wait for the pool.
        self._availability.check()
        # A re-audit's refusal, or no audit for two intervals, stops the call here, before a
        # connection is taken (with the role's slots full, none might be).
        self._gate.check(role)
        checked = False
        for _attempt in range(self._settings.sql_pool_max_size + 1):  # each dead one is discarded
            if ticket.cancelled:
                raise CallCancelledError
            try:
                conn = self._pool.getconn(timeout=self._settings.sql_pool_wait_s)
            except PoolTimeout:
                return self._with_direct_connection(work, role)
            except psycopg.OperationalError as exc:  # the pool could not connect
                raise self._availability.failed(exc) from None
            try:
                if not _closed_while_idle(conn):
                    self._availability.succeeded()
                    return self._answering(conn, work, role)
                conn.close()  # the pool discards it
            finally:
                self._pool.putconn(conn)
            if not checked:
                log.info("a pooled database connection had been closed by the server; checking the pool")
                self._pool.check()
                checked = True
        raise DatabaseUnavailableError(
            "Every pooled database connection had been closed. Retrying in a little while may help.",
            metadata={"retryable": True},
        )

    def _with_direct_connection(self, work: Callable[[PinnedConnection], T], role: str | None) -> T:
        try:
            conn = PinnedConnection.connect(self._dsn, **self._kwargs)
        except psycopg.OperationalError as exc:
            # Down, or refusing this role: the log says which and why, once per change.
            raise self._availability.failed(exc) from None
        self._availability.succeeded()
        try:
            self._configure(conn)
            return self._answering(conn, work, role)
        finally:
            conn.close()

    def _answering(
        self, conn: PinnedConnection, work: Callable[[PinnedConnection], T], role: str | None
    ) -> T:
        """`work(conn)` after the audit gate; a database error becomes what `sqlstate.classify`
        says: the caller's problem, `database-unavailable` (through `Availability`, logged) for a
        failure of the connection itself, or the error itself for a server fault (the dispatcher
        answers it as an internal error with an incident id)."""
        try:
            self._ensure_audited(conn, role)
            return work(conn)
        except psycopg.Error as exc:
            answer = classify(exc, broken=conn.broken or conn.closed, timeout_ms=self._timeout_ms)
            if isinstance(answer, ProblemError):
                raise answer from None
            if answer is Fault.CONNECTION:
                raise self._availability.failed(exc) from None
            raise

    def _run_on(
        self,
        conn: PinnedConnection,
        sql: str,
        *,
        max_rows: int,
        ticket: CallTicket,
        explain: ExplainMode | None = None,
        role: CallRole | None = None,
    ) -> QueryResult:
        if not ticket.attach(conn):
            raise CallCancelledError
        # The rows, then whether one more exists: MOVE counts it without sending it, so a huge row
        # past `max_rows` costs neither the wire nor the memory bound.
        reads = [f'FETCH FORWARD {int(max_rows)} FROM "{CURSOR_NAME}"'.encode(), _MOVE]
        if explain is not None:
            reads = [_EXPLAIN[explain] + sql.encode()]
        declare = f'DECLARE "{CURSOR_NAME}" NO SCROLL CURSOR FOR {sql}'.encode()
        # Direct: the settings were set on the connection, check them; behind a pooler: set them in
        # the transaction.
        commands = [_BEGIN, conn.pin_check] if self._direct else [_BEGIN, b"RESET ALL", self._set_local]
        if role is not None:  # the caller's role and claims, in the same round trip (issue 42)
            commands.append(_switch_role(role))
        commands.append(declare)
        at_fetch = len(commands)
        commands += [*reads, b"ROLLBACK", *_reset_statements()]
        try:
            # One pipeline, one Sync, one round trip. Every statement uses the extended protocol,
            # so PostgreSQL itself accepts exactly one statement in DECLARE ... FOR <query>. The
            # FETCH's rows come one by one, so those that arrived before the byte limit are kept.
            piped = run_pipeline(
                conn,
                commands,
                max_bytes=self._max_bytes,
                timeout_s=self._exchange_timeout_s,
                stream=at_fetch if explain is None else None,
            )
            self._counted()
            results = piped.results
            failed = next((r for r in results if r.status == _FATAL_ERROR), None)
            if failed is not None:
                if self._direct and failed is results[1] and failed.error_field(_SQLSTATE) in _CHECK_FAILED:
                    self._refuse_unpinned(conn)
                raise psycopg.errors.error_from_result(failed, encoding=conn.info.encoding)
            row_results = [*piped.rows, *results[at_fetch : at_fetch + 1]]
            if not any(r.ntuples for r in row_results):
                if piped.cut:  # not even the first row arrived whole within the limit
                    raise too_large(self._max_bytes)
                row_results = results[at_fetch : at_fetch + 1]  # no rows: the columns still count
            names_and_oids = description(conn, row_results[0])
        except psycopg.Error as exc:
            self._fail(conn, exc, ticket)
        finally:
            ticket.detach()
        if ticket.cancelled:
            # A cancel may have raced the end of the pipeline: make sure the reset really ran.
            self._restore(conn)
        # After a cut the connection is closed: a type name not cached yet reads "oid <n>".
        columns = tuple(Column(name=name, type=self._types.name(conn, oid)) for name, oid in names_and_oids)
        oids = [oid for _, oid in names_and_oids]
        self._types.install_array_loaders(conn, oids)
        rows = load_rows(conn, row_results)
        if explain is not None:
            # One row, the plan: the tool checks its size (after the hidden-rows check).
            values = [list(row) for row in rows]
            return QueryResult(columns=columns, rows=values, truncated=False, rows_json=plan_json(values))
        more = piped.cut or piped.results[at_fetch + 1].command_status == b"MOVE 1"
        values, data, cut = json_rows(
            rows,
            columns,
            oids,
            encoding=conn.info.encoding,
            max_bytes=self._max_bytes,
            max_rows=max_rows,
            more=more,
        )
        return QueryResult(
            columns=columns, rows=values, truncated=more or cut, rows_json=data, cut_at_bytes=cut or piped.cut
        )

    @staticmethod
    def _refuse_unpinned(conn: PinnedConnection) -> NoReturn:
        """The pin check failed: the backend is not the one whose session was pinned, or was reset."""
        log.error(
            "a call's database backend did not show the settings pinned on its connection; the call"
            " was refused and the connection closed (a pooler in front? set MCP_SQL_POOLER=transaction)"
        )
        conn.close()  # the pool discards it
        raise SettingsNotPinnedError

    def _fail(self, conn: psycopg.Connection[Any], exc: psycopg.Error, ticket: CallTicket) -> NoReturn:
        """After a failed statement: clean the connection, then raise the error again
        (`_answering` says what it is, once the clean-up has shown whether the connection lives)."""
        ticket.detach()  # no cancel request may reach the clean-up below
        self._restore(conn)
        raise exc

    def _restore(self, conn: psycopg.Connection[Any]) -> None:
        """Roll back and reset after a failure; a connection that cannot be reset is closed (the
        pool then discards it)."""
        if conn.broken or conn.closed:
            return
        try:
            # One simple-query message: ROLLBACK (when a transaction is open) and the reset.
            statements = list(_reset_statements())
            if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                statements.insert(0, b"ROLLBACK")
            self._counted()
            conn.execute(b"; ".join(statements))
        except psycopg.Error:
            log.warning("could not reset a database connection; closing it", exc_info=True)
            conn.close()

    # --- column type names ---------------------------------------------------------------------
    def load_type_names(self, conn: psycopg.Connection[Any]) -> None:
        """Preload every type's name and array element (one query): no extra round trip later."""
        self._types.load(conn)

    def preload_type_names(self) -> None:
        """`load_type_names` on a pooled connection (blocking: waits for the pool's first one)."""
        with self._pool.connection(timeout=self._settings.sql_connect_timeout_s) as conn:
            self._types.load(conn)

    # --- catalogue reads (sql_schema and the schema resource) ---------------------------------
    def read_catalogue(
        self,
        work: Callable[[psycopg.Connection[Any]], T],
        *,
        ticket: CallTicket,
        role: CallRole | None = None,
    ) -> T:
        """Run `work(conn)`, fixed catalogue queries, inside a read-only transaction with the
        call's statement timeout, always rolled back; blocking. Cancellation and failures as `run`.
        With `role`, the transaction runs as it (what it may read is what `work` sees), after its
        audit gate."""
        ticket.started = True

        def on_connection(conn: psycopg.Connection[Any]) -> T:
            if not ticket.attach(conn):
                raise CallCancelledError
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute(b"SET TRANSACTION READ ONLY")
                    conn.execute(self._set_local)
                    if role is not None:
                        conn.execute(_switch_role(role))
                    return work(conn)
            except psycopg.Error as exc:
                self._fail(conn, exc, ticket)
            finally:
                ticket.detach()

        return self._with_connection(ticket, on_connection, role=role.role if role is not None else None)
