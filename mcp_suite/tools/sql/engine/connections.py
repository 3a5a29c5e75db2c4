"""The executor's connections: the pool, each session's pinned settings, checkout and clean-up.

Owns the psycopg_pool pool and how a connection is made ready (the type loaders; on a direct one,
`MCP_SQL_POOLER=none`, the session's pinned settings and the pin every call checks), the shrink
period, checkout (a connection the server closed while idle is discarded and another taken; with
none to give, one direct connection) and `restore` after a call that could not clean up itself.
Must not send a call's query or judge its errors (`executor.py` does); no trio: worker threads only.
"""

from __future__ import annotations

import logging
import math
import secrets
import select
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final, NoReturn, TypeVar

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.sql import quote as sql_quote
from psycopg_pool import ConnectionPool, PoolTimeout

from mcp_suite.problems import DatabaseUnavailableError, IdentityChangedError
from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.availability import Availability
from mcp_suite.tools.sql.engine.convert import register_loaders
from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from mcp_suite.tools.sql.engine.role_audit.connect import POOLER_IN_FRONT, connect_timeout, pooler_in_front
from mcp_suite.tools.sql.engine.ticket import CallCancelledError, CallTicket

__all__ = [
    "PIN_CHECK_FAILED",
    "SESSION_IS_LOGIN_COLUMN",
    "Connections",
    "PinnedConnection",
    "PoolStatistics",
    "SettingsNotPinnedError",
    "liveness_options",
    "pinned_settings",
    "refuse_unpinned",
    "reset_statements",
    "session_role_changed",
    "shrink_period_s",
]

# The lines of this module carry the executor's logger name, as before the executor was split.
log = logging.getLogger("mcp_suite.tools.sql.engine.executor")
# The pool would log every failed background attempt; `Availability` logs each change of state once.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

T = TypeVar("T")


# After ROLLBACK, what a function can leave in the session that the ROLLBACK does not take back
# (docs/tools/read_only_sql.md, "What a call can leave behind", lists every kind and why the others
# cannot matter): prepared statements (`EXECUTE 'PREPARE ...'` in a function), session advisory locks
# and the random seed (`setseed()`), which the next call must not be able to predict, so it is drawn
# afresh here for every reset. Two statements: DEALLOCATE is a utility statement (no function does
# it), the rest is one SELECT. `DISCARD ALL` is not used: it does not reseed, and the rest of what it
# does either rolled back already or would cost every next call its cached plans (DISCARD PLANS).
# A call sends the reset in its own pipeline; `Connections.restore` sends it when that pipeline did
# not get that far.
def reset_statements() -> tuple[bytes, bytes]:
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

# What the pin check raises on a backend that is not the one pinned (no such setting: 42704), or
# one whose settings were reset since (RESET ALL leaves it empty, not a number: 22P02).
PIN_CHECK_FAILED: Final = frozenset({b"42704", b"22P02"})


# The column that fails (22P02, `errors.InvalidTextRepresentation`) unless the session is its login
# role: behind a pooler, RESET ALL restores the login role's own `role` setting, if it has one.
SESSION_IS_LOGIN_COLUMN: Final = (
    "(CASE WHEN current_user OPERATOR(pg_catalog.=) session_user THEN '1'"
    " ELSE 'identity changed' END)::pg_catalog.int4"
)


def pinned_settings(
    settings: Settings, dsn: str, *, local: bool, pin: str | None = None, login_check: bool = False
) -> bytes:
    """One statement that sets everything a call relies on, for the current transaction only
    (`local`) or for the session; and, when given, the custom setting `pin` to 1. With
    `login_check`, it also fails (`SESSION_IS_LOGIN_COLUMN`) unless the session is its login role:
    a pooled backend's check in the same statement, so it costs no statement of its own."""
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
    check = f", {SESSION_IS_LOGIN_COLUMN}" if login_check else ""
    return f"SELECT {calls}, {search_path}{marker}{check}".encode()


def _pin_check(pin: str) -> bytes:
    """One statement that fails (`PIN_CHECK_FAILED`) unless the session's custom setting `pin` is 1:
    on any backend but the one it was set on, or after a RESET ALL there. One schema-qualified
    function and a cast to a qualified type: behind a pooler it may run under any search path.
    (Comparing every pinned setting's value instead cost about 80 µs a call, as much as setting
    them: bench/bench_sql.py, docs/performance.md.)"""
    return f"SELECT pg_catalog.current_setting('{pin}')::pg_catalog.int4".encode()


# Keepalive probes unanswered before a silent peer counts as gone (libpq's keepalives_count).
_KEEPALIVE_PROBES: Final = 3


def liveness_options(settings: Settings, dsn: str) -> dict[str, int]:
    """libpq's TCP liveness options for the pool's connections, those the DSN does not set itself.

    A call whose backend outlives its statement timeout keeps its connection until PostgreSQL
    answers (`pipeline.run_pipeline`): only a broken connection frees it sooner. So a peer gone
    silent (a partition, a host that died) must break it: a keepalive probe after
    `MCP_SQL_CONNECT_TIMEOUT_S` idle, then one per that interval, three unanswered and the kernel
    closes it; `tcp_user_timeout` bounds data sent but not acknowledged the same way. About four
    connect timeouts in all (20 s by default). libpq ignores them on a Unix socket (nothing to
    partition there). libpq's own default waits two hours before its first probe.
    """
    every = connect_timeout(settings.sql_connect_timeout_s)
    options = {
        "keepalives": 1,
        "keepalives_idle": every,
        "keepalives_interval": every,
        "keepalives_count": _KEEPALIVE_PROBES,
        "tcp_user_timeout": every * (1 + _KEEPALIVE_PROBES) * 1000,
    }
    given = conninfo_to_dict(dsn)
    return {name: value for name, value in options.items() if name not in given}


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


def refuse_unpinned(conn: PinnedConnection) -> NoReturn:
    """The pin check failed: the backend is not the one whose session was pinned, or was reset."""
    log.error(
        "a call's database backend did not show the settings pinned on its connection; the call"
        " was refused and the connection closed (a pooler in front? set MCP_SQL_POOLER=transaction)"
    )
    conn.close()  # the pool discards it
    raise SettingsNotPinnedError


# Whether a new session is its login role: `ALTER ROLE <login> SET role = ...` (or the database's,
# or `session_authorization`) makes every new session start as another role.
_SESSION_IS_LOGIN: Final = b"SELECT current_user OPERATOR(pg_catalog.=) session_user"


def session_role_changed() -> IdentityChangedError:
    """The refusal of a call whose session is not its login role (`current_user` is not
    `session_user`) before anything of the call ran."""
    return IdentityChangedError(
        "The call was refused before its query ran: the database session was not the login role"
        " (current_user differed from session_user), so it would have read as another role. An"
        " operator removes the setting that does this (ALTER ROLE ... RESET role); mcp-suite"
        " check-role names it.",
        metadata={"finding": "session-role"},
    )


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


@dataclass(frozen=True, slots=True)
class PoolStatistics:
    """What `Connections.statistics()` returns."""

    size: int  # connections the pool holds now (in use or idle)
    available: int  # idle connections in the pool
    waiting: int  # calls waiting for a connection now
    # Connections lent to calls now (pooled or direct). Not `size - available`: a connection the
    # pool is still preparing in the background counts in its size but serves no call.
    lent: int
    resets: int  # clean-ups sent since the start (`restore`): one round trip each


class Connections:
    """The pool and the direct connection of one executor. Thread-safe; every method but
    `statistics` blocks (run it in a worker thread). Limits: pool min/max, queued waiters, the
    wait for a connection, connect timeout, shrink period, all from `Settings`.

    Connection hygiene: a call's own pipeline ends with ROLLBACK and the reset statements; after a
    failure or a cancel, `restore` sends them before the connection goes back. The pool's `reset`
    hook is not used for it: with one, psycopg_pool hands every returned connection to a worker
    thread (a thread hand-off per call, on the success path too). Its `check` hook costs a round
    trip per checkout; instead a checkout polls its connection's socket (no round trip) and, when
    the server has closed it, runs `pool.check()` and takes another.
    """

    def __init__(self, settings: Settings, dsn: str, *, availability: Availability) -> None:
        self._settings = settings
        self._dsn = dsn
        self._availability = availability
        self._direct = settings.sql_pooler == "none"
        self._resets = 0
        self._lent = 0
        self._count_lock = threading.Lock()
        self._kwargs: dict[str, Any] = {
            "autocommit": True,  # a call sends BEGIN READ ONLY itself, in its pipeline
            "prepare_threshold": None,  # no server-side prepared statements build up
            "connect_timeout": connect_timeout(settings.sql_connect_timeout_s),
            # The DBA's handle in pg_stat_activity; an application_name in the DSN wins.
            "fallback_application_name": APPLICATION_NAME,
            **liveness_options(settings, dsn),
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

    def statistics(self) -> PoolStatistics:
        """The pool's counts now, and the clean-ups sent since the start (a frozen record)."""
        pool = self._pool.get_stats()
        return PoolStatistics(
            size=pool.get("pool_size", 0),
            available=pool.get("pool_available", 0),
            waiting=pool.get("requests_waiting", 0),
            lent=self._lent,
            resets=self._resets,
        )

    def open(self) -> None:
        """Start the pool; connections are made in the background (a down database is no error)."""
        self._pool.open(wait=False)

    def close(self) -> None:
        self._pool.close(timeout=self._settings.sql_connect_timeout_s)

    def connection(self, timeout: float | None = None) -> AbstractContextManager[PinnedConnection]:
        """A pooled connection as it is, for as long as the `with` block (psycopg_pool's own
        checkout: no retry, no direct connection); blocking, waits at most `timeout`."""
        return self._pool.connection(timeout=timeout)

    def with_connection(self, work: Callable[[PinnedConnection], T], *, ticket: CallTicket) -> T:
        """`work(conn)` on a live connection, which then goes back to the pool (or, made directly,
        is closed); blocking. Raises `CallCancelledError` when the ticket is cancelled before a
        connection is taken, and `DatabaseUnavailableError` (through `Availability`) when none can
        be made.

        When a checkout is retried (docs/tools/read_only_sql.md): a pooled connection that the
        server closed while it sat idle (a restart, pg_terminate_backend, an idle timeout) is
        found so before anything of the call is sent, and another is taken: safe (nothing ran)
        and useful (the pool is checked first, so the other dead ones go). A connection that
        fails once `work` has it is never retried: the query may have run, and its answer says
        why. When the pool has no connection to give (it reconnects with back-off after an
        outage), one direct connection serves the call, so recovery does not wait for the pool.
        Limits: at most `max_size + 1` connections are tried, each dead one discarded.
        """
        checked = False
        for _attempt in range(self._settings.sql_pool_max_size + 1):  # each dead one is discarded
            if ticket.cancelled:
                raise CallCancelledError
            try:
                conn = self._pool.getconn(timeout=self._settings.sql_pool_wait_s)
            except PoolTimeout:
                return self._with_direct_connection(work)
            except psycopg.OperationalError as exc:  # the pool could not connect
                raise self._availability.failed(exc) from None
            self._count_lent(1)
            try:
                if not _closed_while_idle(conn):
                    self._availability.succeeded()
                    return work(conn)
                conn.close()  # the pool discards it
            finally:
                self._pool.putconn(conn)
                self._count_lent(-1)
            if not checked:
                log.info("a pooled database connection had been closed by the server; checking the pool")
                self._pool.check()
                checked = True
        raise DatabaseUnavailableError(
            "Every pooled database connection had been closed. Retrying in a little while may help.",
            metadata={"retryable": True},
        )

    def restore(self, conn: psycopg.Connection[Any]) -> None:
        """Roll back and reset after a failure; a connection that cannot be reset is closed (the
        pool then discards it)."""
        if conn.broken or conn.closed:
            return
        try:
            # One simple-query message: ROLLBACK (when a transaction is open) and the reset.
            statements = list(reset_statements())
            if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                statements.insert(0, b"ROLLBACK")
            with self._count_lock:
                self._resets += 1
            conn.execute(b"; ".join(statements))
        except psycopg.Error:
            log.warning("could not reset a database connection; closing it", exc_info=True)
            conn.close()

    def _with_direct_connection(self, work: Callable[[PinnedConnection], T]) -> T:
        try:
            conn = PinnedConnection.connect(self._dsn, **self._kwargs)
        except psycopg.OperationalError as exc:
            # Down, or refusing this role: the log says which and why, once per change.
            raise self._availability.failed(exc) from None
        self._availability.succeeded()
        self._count_lent(1)
        try:
            self._configure(conn)
            return work(conn)
        finally:
            conn.close()
            self._count_lent(-1)

    def _count_lent(self, change: int) -> None:
        with self._count_lock:
            self._lent += change

    def _configure(self, conn: PinnedConnection) -> None:
        """Make a new connection ready; refuse it (`IdentityChangedError`, the pool discards it)
        when its session starts as another role than its login role. One round trip per
        connection, none per call (behind a pooler each call checks again: `executor.py`)."""
        register_loaders(conn.adapters, encoding=conn.info.encoding)
        (same,) = conn.execute(_SESSION_IS_LOGIN).fetchone() or (False,)
        if same is not True:
            log.error(
                "a new database session did not start as its login role (current_user is not"
                " session_user: ALTER ROLE/DATABASE ... SET role?); it was closed and its calls"
                " refused; mcp-suite check-role names the setting"
            )
            conn.close()
            raise session_role_changed()
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
        conn.execute(pinned_settings(self._settings, self._dsn, local=False, pin=pin))
        conn.pin_check = _pin_check(pin)
