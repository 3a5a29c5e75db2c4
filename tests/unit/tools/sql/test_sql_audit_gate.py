"""The executor's audit gate (`audit_gate.CallGate`) with a stand-in audit: a first audit runs once
however many calls arrive together, none passes before it, a failed one is tried again, and a
refusal (the login role's, or a mapped role's recorded while a call waited) stops the calls.

The audit on PostgreSQL is tests/pg/test_sql_reaudit.py's; here only the gate's own logic."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, cast

import psycopg
import pytest

from mcp_suite.problems import RoleRefusedError
from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.audit_gate import CallGate
from mcp_suite.tools.sql.engine.role_audit.finding import Finding
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate

CONN = cast("psycopg.Connection[Any]", object())  # the stand-in audit never touches it
LOGIN_REFUSED = Finding("definer", "the role may run a definer", "REVOKE")
BLUE_REFUSED = Finding("definer", "the mapped role blue: a definer", "REVOKE", role="blue")
# How long the audit under way holds on, so that the other calls are waiting when it ends.
HOLD_S = 0.1


class StandInAudit:
    """Returns `findings` (or raises `fails`) after `entered` is set and `release` is set."""

    def __init__(self, findings: Sequence[Finding] = (), fails: Exception | None = None) -> None:
        self.findings = list(findings)
        self.fails = fails
        self.runs = 0
        self.done = False
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __call__(
        self, conn: psycopg.Connection[Any], settings: Settings, roles: Sequence[str]
    ) -> list[Finding]:
        self.runs += 1
        self.entered.set()
        self.release.wait(timeout=10)
        if self.fails is not None:
            raise self.fails
        self.done = True
        return self.findings


def _gate(audit: StandInAudit, gate: AuditGate | None = None) -> CallGate:
    return CallGate(gate or AuditGate(), Settings(), ("blue",), audit=audit)


def _in_threads(calls: int, admit: Any) -> list[BaseException | None]:
    outcomes: list[BaseException | None] = [None] * calls

    def one(i: int) -> None:
        try:
            admit()
        except BaseException as exc:  # the test reads every thread's outcome
            outcomes[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    return outcomes


def test_calls_that_arrive_together_run_one_first_audit_and_none_passes_before_it_ends() -> None:
    audit = StandInAudit()
    audit.release.clear()
    gate = _gate(audit)
    passed_early: list[bool] = []

    def admit() -> None:
        gate.admit(CONN)
        passed_early.append(not audit.done)

    def release_later() -> None:
        audit.entered.wait(timeout=10)
        time.sleep(HOLD_S)  # the other calls are now waiting for the audit under way
        audit.release.set()

    releaser = threading.Thread(target=release_later)
    releaser.start()
    assert _in_threads(8, admit) == [None] * 8
    releaser.join(timeout=10)
    assert audit.runs == 1
    assert passed_early == [False] * 8
    gate.admit(CONN)  # and never again once one passed
    assert audit.runs == 1


def test_a_start_up_audit_that_passed_means_no_call_audits() -> None:
    audit = StandInAudit()
    gate = _gate(audit)
    gate.mark_audited()
    gate.admit(CONN, "blue")
    assert audit.runs == 0


def test_a_failed_audit_is_the_calls_error_and_the_next_call_audits_again() -> None:
    audit = StandInAudit(fails=psycopg.OperationalError("the connection was lost"))
    gate = _gate(audit)
    with pytest.raises(psycopg.OperationalError):
        gate.admit(CONN)
    audit.fails = None
    gate.admit(CONN)
    assert audit.runs == 2


def test_a_refused_login_role_stops_every_call_until_a_re_audit_passes_then_a_call_audits_again() -> None:
    audit = StandInAudit([LOGIN_REFUSED])
    reaudit = AuditGate()
    gate = _gate(audit, reaudit)
    with pytest.raises(RoleRefusedError):
        gate.admit(CONN)
    for role in (None, "blue"):
        with pytest.raises(RoleRefusedError):
            gate.check(role)  # before a connection is taken
        with pytest.raises(RoleRefusedError):
            gate.admit(CONN, role)
    assert audit.runs == 1  # the gate refused before auditing again
    reaudit.record([])  # a re-audit passed
    audit.findings = []
    gate.admit(CONN)
    assert audit.runs == 2


def test_a_mapped_roles_refusal_found_while_its_call_waited_refuses_that_call() -> None:
    audit = StandInAudit([BLUE_REFUSED])
    audit.release.clear()
    gate = _gate(audit)
    first: list[BaseException | None] = []

    def audit_first() -> None:
        first.extend(_in_threads(1, lambda: gate.admit(CONN)))

    auditing = threading.Thread(target=audit_first)
    auditing.start()
    assert audit.entered.wait(timeout=10)
    threading.Timer(HOLD_S, audit.release.set).start()  # the blue call is waiting by then
    (blue,) = _in_threads(1, lambda: gate.admit(CONN, "blue"))
    auditing.join(timeout=10)
    assert first == [None]  # the login role passed: its call goes on
    assert isinstance(blue, RoleRefusedError)
    assert audit.runs == 1
    gate.admit(CONN, "red")  # another mapped role serves on
