"""Whether a call may run as far as the role audit goes: the gate every call passes, fail closed.

Owns `CallGate`: the re-audit's verdict (`role_audit.reaudit.AuditGate`) asked before a connection
is taken and again on it, and, when start-up could not audit (the database was down), the first
audit, run on the first call's connection before its query. Sends no query of a call's own, takes
no connection and knows no pool; no trio: worker threads only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.role_audit.audit import audit_with_settings
from mcp_suite.tools.sql.engine.role_audit.finding import Finding, refusals
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate

__all__ = ["AuditFunction", "CallGate"]

# `audit_with_settings`'s shape: the whole role audit on a connection, the findings.
AuditFunction = Callable[[psycopg.Connection[Any], Settings, Sequence[str]], list[Finding]]


class CallGate:
    """The audit gate of one executor's calls. Thread-safe; `admit` blocks (it may audit).

    Correct under concurrent calls from worker threads: one lock is held across the question
    "has an audit passed?" and the audit itself, and the answer is read and written only under it.
    So at most one call audits at a time; the calls that arrive meanwhile wait for its outcome and
    none sends its query before an audit has passed; once one has, none audits again. The gate is
    asked again after the lock: a verdict that an audit recorded while a call waited (a mapped
    role refused, say) applies to that call too. The lock is taken before `AuditGate`'s own and
    never the other way round: no deadlock.

    A failed audit (the connection lost, an error in a catalogue query) records nothing: the role
    stays unaudited, the error is the call's (`executor.py` maps it), and the next call audits
    again. An audit that refuses the login role is recorded in the gate, which then refuses every
    call before it takes a connection, until a re-audit passes; the next call after that audits
    here again. A mapped role's refusal stops that role's calls only.
    `audit` is the seam for tests (a fake audit); the server's is `audit_with_settings`.
    """

    def __init__(
        self,
        gate: AuditGate,
        settings: Settings,
        roles: Sequence[str] = (),
        *,
        audit: AuditFunction = audit_with_settings,
    ) -> None:
        self._gate = gate
        self._settings = settings
        self._roles = tuple(roles)
        self._audit = audit
        self._lock = threading.Lock()
        self._audited = False  # an audit passed (at start-up, `mark_audited`, or here)

    def mark_audited(self) -> None:
        """The start-up audit passed (its findings are in the gate already): no call audits."""
        with self._lock:
            self._audited = True

    def check(self, role: str | None = None) -> None:
        """Raise the gate's refusal (`RoleRefusedError`, `RoleUnauditedError`) for a call as
        `role`, before it takes a connection (with the role's slots full, none might be); no I/O."""
        self._gate.check(role)

    def admit(self, conn: psycopg.Connection[Any], role: str | None = None) -> None:
        """On the call's connection, before anything of the call is sent: the gate again (it may
        have shut while the call waited for its connection), then, until an audit has passed, the
        audit on `conn` (its refusal is the gate's, lifted like a re-audit's once one passes), then
        the gate with that verdict. Blocking while another call audits.
        Security: raises rather than returns whenever the gate refuses the role."""
        self._gate.check(role)
        with self._lock:
            if not self._audited:
                findings = self._audit(conn, self._settings, self._roles)
                self._audited = not any(not f.role for f in refusals(findings))
                self._gate.record(findings)  # logs its warnings, or the refusal
        self._gate.check(role)
