"""The role audit again while serving: the gate every SQL call passes, and the loop that feeds it.

`AuditGate` holds the refusals of the latest re-audit; the executor asks it before every call (in
the call's worker thread) and raises `RoleRefusedError`, naming the findings, while it holds any.
`serve_reaudit` is the toolset's background task (the session starts it in its nursery and cancels
it at shutdown): it sleeps one interval on trio's clock, runs `audit_once` in a worker thread, and
records what it found. `audit_once` audits on its own connection (`connect.connect`) with
`audit.audit_with_settings`
(whatever checks that grows are re-checked too) and refreshes the definer guard's catalogue there.
A re-audit that cannot connect records nothing: availability is the executor's business.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import psycopg
import trio

from mcp_suite.problems import RoleRefusedError, echo
from mcp_suite.settings import Settings
from mcp_suite.tools.sql_engine.role_audit.audit import audit_with_settings
from mcp_suite.tools.sql_engine.role_audit.connect import connect
from mcp_suite.tools.sql_engine.role_audit.finding import (
    Finding,
    format_findings,
    format_warning,
    refusals,
    warnings,
)

__all__ = ["AuditGate", "audit_once", "serve_reaudit"]

log = logging.getLogger(__name__)

_DETAIL_FINDINGS = 3  # findings spelled out in a refusal's detail; the rest are counted
_FINDING_CHARS = 240  # of each finding's sentence


class AuditGate:
    """The latest re-audit's verdict. Thread-safe: the verdict is one tuple swapped whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refused: tuple[Finding, ...] = ()
        self._warned: frozenset[Finding] = frozenset()

    @property
    def refused(self) -> tuple[Finding, ...]:
        return self._refused

    def record(self, findings: Sequence[Finding]) -> None:
        """Take an audit's findings; log one line when the verdict changes (and only then), and
        each warning the previous audit did not have (a risk accepted in the settings that has
        appeared since, say), once."""
        refused = tuple(refusals(findings))
        current = warnings(findings)
        with self._lock:
            for finding in current:
                if finding not in self._warned:
                    log.warning("%s", format_warning(finding))
            self._warned = frozenset(current)
            if refused == self._refused:
                return
            # Logged before the verdict takes effect: no call is served (or refused) under a new
            # verdict before the log has said so.
            if not refused:
                log.warning("read_only_sql: the role passes the audit again; the SQL tools serve again")
            else:
                # One record (its lines are the findings and fixes, as at start-up).
                log.critical(
                    "read_only_sql: the SQL tools stop serving: the role audit refused the role. %s",
                    format_findings(list(findings)),
                )
            self._refused = refused

    def check(self) -> None:
        """Raise `RoleRefusedError` naming the findings while the latest audit refused the role."""
        refused = self._refused
        if not refused:
            return
        named = "; ".join(echo(f.problem, _FINDING_CHARS) for f in refused[:_DETAIL_FINDINGS])
        more = len(refused) - _DETAIL_FINDINGS
        if more > 0:
            named += f"; and {more} more"
        raise RoleRefusedError(
            f"The database role can do more than read, so the SQL tools refuse every call: {named}. "
            "An operator must fix the role (the server's log gives the fix); calls are served again "
            "once a re-audit passes. Other tools still work.",
            metadata={"findings": sorted({f.capability for f in refused}), "retryable": True},
        )


def audit_once(
    dsn: str, settings: Settings, *, refresh: Callable[[psycopg.Connection[Any]], None] | None = None
) -> list[Finding] | None:
    """The whole role audit on a connection of its own (blocking), then `refresh(conn)` on it (the
    definer guard's catalogue); None when no connection could be made or it broke.

    Nothing is set in the startup packet (a transaction-pooling PgBouncer refuses `options`).
    """
    try:
        with connect(dsn, connect_timeout_s=settings.sql_connect_timeout_s) as conn:
            findings = audit_with_settings(conn, settings)
            if refresh is not None:
                refresh(conn)
            return findings
    except psycopg.OperationalError:
        log.debug("read_only_sql: no re-audit this time (no connection)", exc_info=True)
        return None
    except psycopg.Error:
        # Not a verdict either way: the verdict stands until a re-audit completes.
        log.warning("read_only_sql: a re-audit failed; the last verdict stands", exc_info=True)
        return None


async def serve_reaudit(
    gate: AuditGate, audit: Callable[[], Sequence[Finding] | None], *, interval_s: float
) -> NoReturn:
    """Every `interval_s`, run `audit()` in a worker thread and record its findings in `gate`.

    Cancellation: cancelled with the session's nursery at shutdown. A re-audit under way is
    abandoned then (its thread ends on its own: the connect timeout bounds the connection, and the
    audit's own queries are a few catalogue reads); nothing waits for it.
    Limits: one re-audit at a time, one connection of its own, outside the pool.
    """
    while True:
        await trio.sleep(interval_s)
        findings = await trio.to_thread.run_sync(audit, abandon_on_cancel=True)
        if findings is not None:
            gate.record(findings)
