"""The re-audit's dedicated connection: opened at start-up, reopened when lost, never from the pool.

`AuditLink` holds one autocommit connection (to MCP_SQL_AUDIT_DSN, else MCP_SQL_DSN) that only the
re-audit uses, one audit at a time, so a role whose CONNECTION LIMIT other sessions fill is still
audited (issue 40). When it listens it has run `LISTEN` on `CHANNEL`, the channel the role guide's
event trigger notifies; `drain` says whether a notification (or the connection's loss) came in.
A re-audit that cannot get its connection is a `NoVerdict`, never a verdict.
Sync psycopg only; no trio. The DSN is never printed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME, log_prefix
from mcp_suite.tools.sql.engine.role_audit.connect import connect_timeout, connection_failure, pooler_in_front

__all__ = [
    "AUDIT_APPLICATION_NAME",
    "CHANNEL",
    "AuditDsnError",
    "AuditLink",
    "NoVerdict",
    "audit_application_name",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# The channel docs/tools/postgres-role-guide.sql's event trigger notifies after each DDL command.
CHANNEL: Final = "mcp_suite_role_audit"
# The dedicated connection in pg_stat_activity, beside the pool's `mcp-suite/<version>`.
AUDIT_APPLICATION_NAME: Final = f"{APPLICATION_NAME} role audit"
_AUDIT_SUFFIX: Final = " role audit"


def audit_application_name(dsn: str) -> str:
    """The audit connection's application_name: the pool's (the DSN's own, else
    `mcp-suite/<version>`) with " role audit" after it, so a DBA tells it apart from the pool's."""
    return f"{conninfo_to_dict(dsn).get('application_name') or APPLICATION_NAME}{_AUDIT_SUFFIX}"


_LISTEN: Final = f"LISTEN {CHANNEL}".encode()
_IDENTITY: Final = b"SELECT CURRENT_USER, pg_catalog.current_database()"


@dataclass(frozen=True, slots=True)
class NoVerdict:
    """A re-audit that did not complete, and why (for the operator's log: no part of the DSN)."""

    reason: str


class AuditDsnError(Exception):
    """MCP_SQL_AUDIT_DSN cannot serve the audit (a setting that will not fix itself): it leads to
    another role or database than MCP_SQL_DSN, or a pooler answers for it. `str()` is the
    operator's message."""


class AuditLink:
    """The re-audit's own connection. Thread-safe: one user at a time (`run`, `drain`); a re-audit
    abandoned at a deadline keeps it until its thread ends, and whoever comes meanwhile finds it busy.

    `dsn`: where it connects. `reference_dsn`: MCP_SQL_DSN when `dsn` is MCP_SQL_AUDIT_DSN; the role
    and database it leads to are read once through it, and every (re)opened audit connection must
    show the same, with no pooler answering for it. `listen`: LISTEN on `CHANNEL` (not behind a
    transaction pooler, which hands the session's backend to others; a hot standby cannot).
    Limits: one connection, opened with the connect timeout.
    """

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout_s: float,
        listen: bool,
        reference_dsn: str | None = None,
        source: str | None = None,
    ) -> None:
        self._dsn = dsn
        self._source = source  # the source its log line names (None: MCP_SQL_DSN's one)
        self._reference_dsn = reference_dsn
        self._timeout_s = connect_timeout_s
        self.listening = listen
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._listens = False  # the open connection has run LISTEN
        self._identity: tuple[str, str] | None = None

    def open(self) -> None:
        """Open the connection now unless it is open (blocking). Raises psycopg.OperationalError
        when no connection could be made, AuditDsnError when MCP_SQL_AUDIT_DSN cannot serve."""
        with self._lock:
            self._connection()

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T | NoVerdict:
        """`work(conn)` on the audit connection, reopened first when it was lost; a `NoVerdict` when
        it is busy, cannot be opened, or fails (then it is closed, and the next run reopens it).
        Notifications that came before `work` starts are consumed: its snapshot sees their changes."""
        if not self._lock.acquire(blocking=False):
            return NoVerdict("the previous re-audit has not finished")
        try:
            conn = self._connection()
            self._pending(conn)
            return work(conn)
        except AuditDsnError as exc:
            self._close()
            return NoVerdict(str(exc))
        except psycopg.Error as exc:
            log.debug("read_only_sql: a re-audit failed", exc_info=True)
            self._close()
            return NoVerdict(connection_failure(exc))
        finally:
            self._lock.release()

    def drain(self) -> bool:
        """Whether the re-audit should run now (non-blocking): a notification came in since the
        last run, or the connection was found lost (and closed, so the next run reopens it)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            conn = self._conn
            if conn is None:
                return False
            try:
                return self._pending(conn)
            except psycopg.Error:
                log.debug("read_only_sql: the audit's connection was lost", exc_info=True)
                self._close()
                return True
        finally:
            self._lock.release()

    def fileno(self) -> int | None:
        """The socket a notification arrives on: None unless it listens, is open and is idle."""
        conn = self._conn
        if not self._listens or conn is None or conn.closed or self._lock.locked():
            return None
        return conn.pgconn.socket

    def close(self) -> None:
        """Close the connection; one an abandoned re-audit still uses (a network that stopped
        answering) is left to its thread after a connect timeout's wait: shutdown does not hang on it."""
        if not self._lock.acquire(timeout=self._timeout_s):
            log.debug("read_only_sql: the audit's connection is still in use at close; left to its thread")
            return
        try:
            self._close()
        finally:
            self._lock.release()

    # --- with the lock held ---------------------------------------------------------------------
    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is not None and not (conn.closed or conn.broken):
            return conn
        self._close()
        conn = psycopg.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=connect_timeout(self._timeout_s),
            application_name=audit_application_name(self._dsn),
        )
        try:
            self._check_identity(conn)
            self._listens = self.listening and _listen(conn, self._source)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _check_identity(self, conn: psycopg.Connection[Any]) -> None:
        """With MCP_SQL_AUDIT_DSN: the audit connection is a backend of MCP_SQL_DSN's role and
        database, reached without a pooler (or the audit would vouch for another role)."""
        if self._reference_dsn is None:
            return
        if self._identity is None:
            with psycopg.connect(
                self._reference_dsn,
                autocommit=True,
                connect_timeout=connect_timeout(self._timeout_s),
                fallback_application_name=AUDIT_APPLICATION_NAME,
            ) as reference:
                self._identity = _identity(reference)
        if _identity(conn) != self._identity:
            raise AuditDsnError(
                "MCP_SQL_AUDIT_DSN does not lead to the role and database of MCP_SQL_DSN; it must"
                " name the same role and database, straight to PostgreSQL"
            )
        if pooler_in_front(conn):
            raise AuditDsnError(
                "a pooler answers for MCP_SQL_AUDIT_DSN; it must lead straight to PostgreSQL"
                " (it exists so that the audit can LISTEN, which a transaction pooler cannot)"
            )

    def _pending(self, conn: psycopg.Connection[Any]) -> bool:
        """Consume the notifications received (during the last run, or waiting on the socket)."""
        if not self._listens:
            return False
        return sum(1 for _ in conn.notifies(timeout=0)) > 0  # all of them: a burst is one re-audit

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _listen(conn: psycopg.Connection[Any], source: str | None = None) -> bool:
    """LISTEN on `CHANNEL`; False on a hot standby, which cannot (nor would it hear anything: DDL
    runs on the primary, whose notifications are not replicated), so the interval alone serves."""
    try:
        conn.execute(_LISTEN)
    except psycopg.errors.ReadOnlySqlTransaction:  # "cannot execute LISTEN during recovery"
        log.info(
            "%sthe database is a standby: the role audit runs every interval, unnotified", log_prefix(source)
        )
        return False
    return True


def _identity(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    row = conn.execute(_IDENTITY).fetchone()
    if row is None:  # pragma: no cover  # a SELECT without FROM returns one row
        raise psycopg.InterfaceError("no identity row")
    return str(row[0]), str(row[1])
