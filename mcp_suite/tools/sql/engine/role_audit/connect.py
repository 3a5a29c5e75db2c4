"""Connecting for the role audit: the one recipe for an audit's own connection, auditing a DSN,
and why a connection failed (with every part of the DSN cut out, and a TLS refusal told apart).

Nothing is set in the startup packet: a transaction-pooling PgBouncer refuses `options`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

import psycopg

from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from mcp_suite.tools.sql.engine.role_audit.audit import audit_mapped
from mcp_suite.tools.sql.engine.role_audit.finding import Finding, refusals
from mcp_suite.tools.sql.engine.role_audit.tls import tls_refusal

__all__ = [
    "POOLER_IN_FRONT",
    "PoolerInFrontError",
    "TlsRefusedError",
    "audit_dsn",
    "audit_role",
    "connect",
    "connect_timeout",
    "connection_failure",
    "pooler_in_front",
]

POOLER_IN_FRONT: Final = (
    "MCP_SQL_POOLER=none, but this database connection does not lead straight to a PostgreSQL"
    " backend (a pooler answers for it); set MCP_SQL_POOLER=transaction"
)


def connect_timeout(seconds: float) -> int:
    """libpq's connect_timeout (whole seconds, at least 1) for a timeout in seconds."""
    return max(1, math.ceil(seconds))


def connect(dsn: str, *, connect_timeout_s: float) -> psycopg.Connection[Any]:
    """An autocommit connection of the audit's own, named in pg_stat_activity (an application_name
    in the DSN wins). Raises psycopg.OperationalError."""
    return psycopg.connect(
        dsn,
        autocommit=True,
        connect_timeout=connect_timeout(connect_timeout_s),
        fallback_application_name=APPLICATION_NAME,
    )


# libpq (and psycopg's resolver) quote the host, socket, user and database names they failed with,
# and write the address in parentheses and the port after "port": all of them are parts of the DSN.
_DSN_PARTS: Final = (
    (re.compile(r'"[^"]*"'), '"…"'),
    (re.compile(r"'[^']*'"), "'…'"),
    (re.compile(r"\([0-9A-Fa-f.:]+\)"), "(…)"),
    (re.compile(r"\bport \d+"), "port …"),
)


# psycopg tries each host of a multi-host DSN (a primary and its replicas) and then lists every
# failure, one line each, in the DSN's order: "- host: 'h', port: 'p', hostaddr: 'a': <reason>".
_ATTEMPT: Final = re.compile(r"^- host: '[^']*', port: '[^']*', hostaddr: '[^']*': (?P<reason>.*)$")


def _without_dsn_parts(line: str) -> str:
    for pattern, mark in _DSN_PARTS:
        line = pattern.sub(mark, line)
    return line


def connection_failure(exc: psycopg.Error) -> str:
    """Why a connection failed, for the operator's log: the first line of psycopg's message, with
    every part of the DSN it names (host, address, port, socket, user, database) cut out.

    What stays is the reason: the server's own (a refused password, a database that does not
    exist, a connection limit reached) or the network's (refused, timed out). libpq never repeats
    the password. When the DSN lists several hosts (a primary and its replicas), each one's reason
    is given by its position in that list ("host 2 of 3: ..."), which tells the operator which
    connection failed without naming it.
    """
    lines = str(exc).strip().splitlines()
    attempts = [m["reason"] for m in map(_ATTEMPT.match, lines) if m is not None]
    if len(attempts) > 1:
        return "; ".join(
            f"host {n} of {len(attempts)}: {_without_dsn_parts(reason)}"
            for n, reason in enumerate(attempts, start=1)
        )
    return _without_dsn_parts(lines[0] if lines else type(exc).__name__)


def pooler_in_front(conn: psycopg.Connection[Any]) -> bool:
    """Whether a pooler answers for this connection: the process id its handshake announced is
    not its backend's (PgBouncer announces one of its own)."""
    row = conn.execute(b"SELECT pg_catalog.pg_backend_pid()").fetchone()
    return row is None or row[0] != conn.info.backend_pid


def audit_dsn(
    dsn: str,
    *,
    connect_timeout_s: float,
    accepted: Iterable[str] = (),
    accepted_creators: Iterable[str] = (),
    direct: bool = False,
    roles: Sequence[str] = (),
) -> list[Finding]:
    """Connect once and audit (in a read-only transaction). With `direct` (MCP_SQL_POOLER=none),
    a role fit to serve is refused with PoolerInFrontError when a pooler answers for the
    connection (a role unfit to serve is told first). Raises psycopg.OperationalError."""
    with connect(dsn, connect_timeout_s=connect_timeout_s) as conn:
        findings = audit_mapped(conn, accepted=accepted, accepted_creators=accepted_creators, roles=roles)
        if direct and not refusals(findings) and pooler_in_front(conn):
            raise PoolerInFrontError(POOLER_IN_FRONT)
        return findings


class TlsRefusedError(Exception):
    """No connection because TLS verification refused the server's certificate; `str()` is the
    operator's message (the cause and the fix, no DSN part)."""


def audit_role(dsn: str, settings: Settings, roles: Sequence[str] = ()) -> list[Finding]:
    """`audit_dsn` with the settings' connect timeout and accepted definer functions (and an
    identity map's `roles`, each audited after the login role).

    Raises TlsRefusedError when the server's certificate is why no connection could be made (that
    will not fix itself), PoolerInFrontError when MCP_SQL_POOLER=none but a pooler answers, else
    psycopg.OperationalError when none could be made.
    """
    try:
        return audit_dsn(
            dsn,
            connect_timeout_s=settings.sql_connect_timeout_s,
            accepted=settings.sql_accept_definer_functions,
            accepted_creators=settings.sql_accept_function_creators,
            direct=settings.sql_pooler == "none",
            roles=roles,
        )
    except psycopg.OperationalError:
        refusal = tls_refusal(dsn, timeout_s=settings.sql_connect_timeout_s)
        if refusal is not None:
            raise TlsRefusedError(refusal) from None
        raise


class PoolerInFrontError(Exception):
    """MCP_SQL_POOLER=none, but a pooler answers for the connection (a setting that will not fix
    itself); `str()` is the operator's message."""
