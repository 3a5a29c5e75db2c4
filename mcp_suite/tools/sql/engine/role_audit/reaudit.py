"""The role audit again while serving: the gate every SQL call passes, and the loop that feeds it.

`AuditGate` holds the latest re-audit's refusals, and whether re-audits have stopped completing;
the executor asks it before every call (in the call's worker thread) and raises `RoleRefusedError`
naming the findings, or `RoleUnauditedError`, while either holds. `serve_reaudit` is the toolset's
background task (the session starts it in its nursery and cancels it at shutdown): it re-audits
every interval on trio's clock, and at once (after `COALESCE_S`) when the role guide's event
trigger notifies the audit's connection; when no re-audit has completed for two intervals the gate
shuts (issue 40: starving the audit never keeps the last verdict). `audit_once` runs
`audit.audit_with_settings` (whatever checks that grows are re-checked too) on the dedicated
connection (`link.AuditLink`) and refreshes the definer guard's catalogue there.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, NoReturn

import psycopg
import trio

from mcp_suite.problems import RoleRefusedError, RoleUnauditedError, echo
from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.naming import log_prefix
from mcp_suite.tools.sql.engine.role_audit.audit import audit_with_settings
from mcp_suite.tools.sql.engine.role_audit.finding import (
    Finding,
    format_findings,
    format_warning,
    refusals,
    warnings,
)
from mcp_suite.tools.sql.engine.role_audit.link import AuditLink, NoVerdict

__all__ = [
    "COALESCE_S",
    "STALE_INTERVALS",
    "AuditGate",
    "NoVerdict",
    "audit_once",
    "serve_reaudit",
    "wait_notified",
]

log = logging.getLogger(__name__)

_DETAIL_FINDINGS = 3  # findings spelled out in a refusal's detail; the rest are counted
_FINDING_CHARS = 240  # of each finding's sentence

# After a notification, a burst of DDL (a migration's GRANTs) is let finish: one re-audit for it,
# well within the second issue 40 asks for (bench_reaudit measures the window).
COALESCE_S: Final = 0.25
# A re-audit that did not complete is tried again this soon (at most an interval later), so a
# connection lost once is back before the gate shuts.
RETRY_S: Final = 1.0
# The gate shuts when no re-audit has completed for this many intervals.
STALE_INTERVALS: Final = 2


class AuditGate:
    """The latest re-audit's verdict, and whether re-audits stopped completing. Thread-safe: each
    is one value swapped whole. `source`: the configuration file's name of the source, which each
    of its log lines names (None: `MCP_SQL_DSN`'s one source)."""

    def __init__(self, *, source: str | None = None) -> None:
        self._prefix = log_prefix(source)
        self._lock = threading.Lock()
        self._refused: tuple[Finding, ...] = ()
        self._warned: frozenset[Finding] = frozenset()
        self._unaudited_s: float | None = None  # set while no re-audit completes: for how long

    @property
    def refused(self) -> tuple[Finding, ...]:
        return self._refused

    @property
    def unaudited(self) -> bool:
        return self._unaudited_s is not None

    def record(self, findings: Sequence[Finding]) -> None:
        """Take an audit's findings; log one line when the verdict changes (and only then), and
        each warning the previous audit did not have (a risk accepted in the settings that has
        appeared since, say), once. A completed audit lifts `unaudited`."""
        refused = tuple(refusals(findings))
        current = warnings(findings)
        with self._lock:
            for finding in current:
                if finding not in self._warned:
                    log.warning("%s", self._named(format_warning(finding)))
            self._warned = frozenset(current)
            was_unaudited = self._unaudited_s is not None
            if refused == self._refused and not was_unaudited:
                return
            # Logged before the verdict takes effect: no call is served (or refused) under a new
            # verdict before the log has said so.
            if not refused:
                log.warning("%sthe role passes the audit again; the SQL tools serve again", self._prefix)
            elif all(f.role for f in refused):  # mapped roles only: the others serve on
                log.critical(
                    "%sthe SQL tools stop serving the mapped role(s) %s: the role audit refused them "
                    "(the other roles serve). %s",
                    self._prefix,
                    ", ".join(sorted({f.role for f in refused})),
                    self._named(format_findings(list(findings))),
                )
            else:
                # One record (its lines are the findings and fixes, as at start-up).
                log.critical(
                    "%sthe SQL tools stop serving: the role audit refused the role. %s",
                    self._prefix,
                    self._named(format_findings(list(findings))),
                )
            self._refused = refused
            self._unaudited_s = None

    def mark_unaudited(self, reason: str, *, since_s: float) -> None:
        """No re-audit has completed for `since_s` (two intervals): calls are refused until one
        completes (`record`); one WARNING line when this starts, none while it lasts."""
        with self._lock:
            if self._unaudited_s is not None:
                return
            log.warning(
                "%sthe SQL tools stop serving: no role audit has completed for %.1f s "
                "(two intervals of MCP_SQL_REAUDIT_INTERVAL_S); the last: %s. They serve again when a "
                "re-audit completes and passes (the role's CONNECTION LIMIT must leave one connection "
                "for the audit: docs/tools/postgres-role-guide.sql)",
                self._prefix,
                since_s,
                reason,
            )
            self._unaudited_s = since_s

    def _named(self, text: str) -> str:
        """`text` (a finding's lines, written for `MCP_SQL_DSN`'s one source) naming the source."""
        return self._prefix + text.removeprefix("read_only_sql: ")

    def check(self, role: str | None = None) -> None:
        """Raise `RoleUnauditedError` while no re-audit completes, else `RoleRefusedError` naming
        the findings while the latest audit refused the role: the login role's findings refuse
        every call, a mapped role's refuse the calls switched to `role` alone (issue 42)."""
        unaudited_s = self._unaudited_s
        if unaudited_s is not None:
            # Starving the audit never keeps the last verdict, a refusal included: no audit, no call.
            raise RoleUnauditedError(
                f"No audit of the database role has completed for {unaudited_s:.0f} s, so the SQL "
                "tools refuse every call: what the role may do now is not known. Calls are served "
                "again once a re-audit completes and passes (the server's log says why it cannot). "
                "Other tools still work.",
                metadata={"retryable": True},
            )
        refused = tuple(f for f in self._refused if not f.role or f.role == role)
        if not refused:
            return
        named = "; ".join(echo(f.problem, _FINDING_CHARS) for f in refused[:_DETAIL_FINDINGS])
        more = len(refused) - _DETAIL_FINDINGS
        if more > 0:
            named += f"; and {more} more"
        whose = "every call"
        if all(f.role for f in refused):  # this caller's mapped role alone: the others serve
            whose = f"the calls that read as the role {role!r}"
        raise RoleRefusedError(
            f"The database role can do more than read, so the SQL tools refuse {whose}: {named}. "
            "An operator must fix the role (the server's log gives the fix); calls are served again "
            "once a re-audit passes. Other tools still work.",
            metadata={"findings": sorted({f.capability for f in refused}), "retryable": True},
        )


def audit_once(
    link: AuditLink,
    settings: Settings,
    *,
    refresh: Callable[[psycopg.Connection[Any]], None] | None = None,
    roles: Sequence[str] = (),
) -> list[Finding] | NoVerdict:
    """The whole role audit on the dedicated connection (blocking), then `refresh(conn)` on it (the
    definer guard's catalogue, and whatever catalogue snapshots join it), with an identity map's
    `roles` audited each in turn; a `NoVerdict` saying why
    when the connection is busy, lost and cannot be opened again, or the audit failed.

    Nothing is set in the startup packet (a transaction-pooling PgBouncer refuses `options`).
    """

    def work(conn: psycopg.Connection[Any]) -> list[Finding]:
        findings = audit_with_settings(conn, settings, roles)
        if refresh is not None:
            refresh(conn)
        return findings

    return link.run(work)


async def wait_notified(link: AuditLink) -> None:
    """Return when the role guide's event trigger has notified the audit's connection (or the
    connection was lost): what `serve_reaudit` waits for between intervals. Without a listening,
    open connection, it waits for ever (the interval then ends the wait).

    Cancellation: a plain wait on the socket; the check of what arrived runs in a worker thread.
    """
    while True:
        if await trio.to_thread.run_sync(link.drain, abandon_on_cancel=True):
            return
        fd = link.fileno()
        if fd is None:
            await trio.sleep_forever()
        else:
            await trio.lowlevel.wait_readable(fd)


Audit = Callable[[], Sequence[Finding] | NoVerdict]


async def in_worker_thread(audit: Audit) -> Sequence[Finding] | NoVerdict:
    """`audit()` in a worker thread, abandoned (not waited for) when cancelled."""
    return await trio.to_thread.run_sync(audit, abandon_on_cancel=True)


async def serve_reaudit(
    gate: AuditGate,
    audit: Audit,
    *,
    interval_s: float,
    notified: Callable[[], Awaitable[None]] | None = None,
    run: Callable[[Audit], Awaitable[Sequence[Finding] | NoVerdict]] = in_worker_thread,
) -> NoReturn:
    """Run `audit()` in a worker thread every `interval_s`, and `COALESCE_S` after `notified()`
    returns (the event trigger's notification), and record its findings in `gate`; when none has
    completed for `STALE_INTERVALS` intervals, shut the gate (`mark_unaudited`) until one does.

    The start counts as a completed audit (the start-up audit's verdict is in the gate). A re-audit
    that did not complete is tried again after `RETRY_S` (at most an interval). One still running
    when the gate's deadline comes is abandoned (its thread ends on its own and holds the audit's
    connection until then; the next re-audit finds it busy, which is no verdict either).
    Cancellation: cancelled with the session's nursery at shutdown; a re-audit under way is
    abandoned then, not waited for.
    Limits: one re-audit at a time, on one connection of its own, outside the pool.
    `run` runs one audit (a worker thread; a test's wrapper notes when the loop has its answer).
    """
    stale_after = STALE_INTERVALS * interval_s
    completed = trio.current_time()
    due = completed + interval_s
    unfinished = "a re-audit has not finished"
    failure = ""  # why the last re-audit that ended without a verdict ended so (the log says it)
    while True:
        outcome: Sequence[Finding] | NoVerdict = NoVerdict(unfinished)
        deadline = math.inf if gate.unaudited else completed + stale_after
        with trio.move_on_at(deadline):
            if await _wait_turn(due, notified):
                await trio.sleep(COALESCE_S)
            outcome = NoVerdict(unfinished)
            outcome = await run(audit)
        now = trio.current_time()
        if isinstance(outcome, NoVerdict):
            if outcome.reason != unfinished:
                failure = outcome.reason
            due = now + min(RETRY_S, interval_s)
            if now >= completed + stale_after:
                # A re-audit cut short at the deadline says less than the failure before it.
                gate.mark_unaudited(failure or outcome.reason, since_s=now - completed)
        else:
            failure = ""
            completed = now
            due = now + interval_s
            gate.record(outcome)


async def _wait_turn(due: float, notified: Callable[[], Awaitable[None]] | None) -> bool:
    """Wait until `due`, or until `notified()` returns first (then True)."""
    if notified is not None:
        with trio.move_on_at(due):
            await notified()
            return True
    await trio.sleep_until(due)
    return False
