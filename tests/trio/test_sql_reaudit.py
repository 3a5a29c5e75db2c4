"""The re-audit while serving, without a database: an injected audit function and trio's virtual clock.

`AuditGate` turns findings into a verdict (and one log line per change of it); `serve_reaudit` runs
the audit in a worker thread every interval, a second after a failed one, and `COALESCE_S` after a
notification (a burst is one re-audit); when none completes for two intervals (it fails, or hangs)
the gate shuts with `role-unaudited` until one passes (issue 40); the session starts a toolset's
background task in its own nursery and cancels it when it stops serving. The same through a real
PostgreSQL and the real server process is in tests/pg/test_sql_reaudit.py.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest
import trio
import trio.testing

from mcp_suite.problems import Channel, RoleRefusedError, RoleUnauditedError
from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset
from mcp_suite.tools.sql.engine.role_audit.finding import Finding
from mcp_suite.tools.sql.engine.role_audit.reaudit import (
    COALESCE_S,
    RETRY_S,
    AuditGate,
    NoVerdict,
    in_worker_thread,
    serve_reaudit,
)
from tests.support.harness import open_session

DEFINER = Finding(
    capability="definer-function",
    problem='the role can execute the SECURITY DEFINER function "docs"."page_export"() (owner devdb_admin)',
    fix='REVOKE EXECUTE ON FUNCTION "docs"."page_export"() FROM PUBLIC;',
)
SUPERUSER = Finding(
    capability="superuser", problem="the role is a superuser", fix="ALTER ROLE r NOSUPERUSER;"
)
WARNING = Finding(capability="definer-accepted", problem="an accepted definer", fix="-", warning=True)


def _log_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.endswith("reaudit")]


def test_a_gate_with_no_refusal_lets_calls_through() -> None:
    gate = AuditGate()
    gate.check()
    gate.record([WARNING])  # a warning is not a refusal
    gate.check()
    assert gate.refused == ()


def test_a_refusal_stops_calls_with_a_problem_naming_the_finding_until_an_audit_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gate = AuditGate()
    with caplog.at_level(logging.WARNING):
        gate.record([DEFINER, WARNING])
        for _ in range(3):
            with pytest.raises(RoleRefusedError) as caught:
                gate.check()
        gate.record([DEFINER])  # the same verdict again: no new log line
        gate.record([])
        gate.check()
    problem = caught.value
    assert '"docs"."page_export"()' in problem.detail
    assert "Other tools still work" in problem.detail
    assert problem.metadata == {"findings": ["definer-function"], "retryable": True}
    assert problem.channel is Channel.RESULT  # in-band for a tool
    lines = _log_lines(caplog)
    assert lines[0].startswith("read_only_sql: warning: an accepted definer"), lines
    lines = lines[1:]
    assert len(lines) == 2, lines
    assert "the SQL tools stop serving" in lines[0]
    assert "REVOKE EXECUTE" in lines[0]  # the fix, as at start-up
    assert "serve again" in lines[1]


def test_a_changed_set_of_refusals_is_one_more_log_line(caplog: pytest.LogCaptureFixture) -> None:
    gate = AuditGate()
    with caplog.at_level(logging.WARNING):
        gate.record([DEFINER])
        gate.record([DEFINER, SUPERUSER])
        gate.record([DEFINER, SUPERUSER])
    assert len(_log_lines(caplog)) == 2
    with pytest.raises(RoleRefusedError) as caught:
        gate.check()
    assert caught.value.metadata["findings"] == ["definer-function", "superuser"]


def test_a_warning_is_logged_once_when_it_first_appears_and_again_only_after_it_went(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A risk the operator accepted in the settings that appears while serving is logged then,
    # once, not at every re-audit.
    gate = AuditGate()
    with caplog.at_level(logging.WARNING):
        gate.record([])
        gate.record([WARNING])
        gate.record([WARNING])
        gate.record([])
        gate.record([WARNING])
    lines = _log_lines(caplog)
    assert lines == [f"read_only_sql: warning: {WARNING.problem}\n    fix: {WARNING.fix}"] * 2, lines
    gate.check()  # a warning never stops the SQL tools


def test_many_refusals_are_counted_past_the_first_three() -> None:
    gate = AuditGate()
    findings = [Finding(capability=f"c{i}", problem=f"problem {i}", fix="-") for i in range(5)]
    gate.record(findings)
    with pytest.raises(RoleRefusedError) as caught:
        gate.check()
    assert "problem 2; and 2 more" in caught.value.detail
    assert "problem 3" not in caught.value.detail


NO_CONNECTION = NoVerdict("too many connections for role")


class _ScriptedAudit:
    """An audit that answers from a script (NoVerdict: it could not run), recording its threads."""

    def __init__(self, answers: Sequence[Sequence[Finding] | NoVerdict]) -> None:
        self.answers = list(answers)
        self.threads: list[threading.Thread] = []
        self.started = self.taken = 0

    def __call__(self) -> Sequence[Finding] | NoVerdict:
        self.threads.append(threading.current_thread())
        return self.answers.pop(0) if self.answers else []

    async def run(self, audit: Callable[[], Sequence[Finding] | NoVerdict]) -> Sequence[Finding] | NoVerdict:
        """The loop's `run`: the audit in a worker thread, counted when the loop has its answer."""
        self.started += 1
        answer = await in_worker_thread(audit)
        self.taken += 1
        return answer

    def settled(self) -> bool:
        """Every audit started has answered, and the loop holds the answer."""
        return self.started == self.taken


class _CountingGate(AuditGate):
    """A gate that notes the trio time of each verdict it is given (record runs in the loop's task)."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def record(self, findings: Sequence[Finding]) -> None:
        self.times.append(trio.current_time())
        super().record(findings)


async def _until(condition: Callable[[], bool]) -> None:
    # The mock clock stands still, so `fail_after` cannot bound this wait: real time does (a bound
    # against a hang, generous for a loaded machine, where each worker thread starts late).
    limit = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < limit
        await trio.sleep(0)
    await trio.testing.wait_all_tasks_blocked()


async def test_the_loop_audits_every_interval_in_a_worker_thread(mock_clock: trio.testing.MockClock) -> None:
    gate = _CountingGate()
    audit = _ScriptedAudit([[], [DEFINER], [DEFINER], []])
    verdicts: list[bool] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: serve_reaudit(gate, audit, interval_s=30, run=audit.run))
        start = trio.current_time()
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(29)
        await trio.testing.wait_all_tasks_blocked()
        assert audit.threads == []  # not before the interval is over
        for done in range(1, 5):
            mock_clock.jump(30 if done > 1 else 1)
            await _until(lambda: len(gate.times) == done)  # noqa: B023  # read at once, in this round
            verdicts.append(bool(gate.refused))
        nursery.cancel_scope.cancel()
    assert [t - start for t in gate.times] == [30, 60, 90, 120]
    assert verdicts == [False, True, True, False]  # refused at the second, served again at the fourth
    assert all(thread is not threading.main_thread() for thread in audit.threads)


async def test_a_re_audit_that_cannot_connect_changes_no_verdict_and_is_tried_again_soon(
    mock_clock: trio.testing.MockClock,
) -> None:
    gate = _CountingGate()
    gate.record([DEFINER])
    audit = _ScriptedAudit([NO_CONNECTION, []])  # no connection at 30 s, a passing audit just after
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: serve_reaudit(gate, audit, interval_s=30, run=audit.run))
        start = trio.current_time()
        # step the clock until the loop records its first verdict
        await _step_until(mock_clock, lambda: len(gate.times) == 2, 0.5, audit)
        nursery.cancel_scope.cancel()
    assert len(audit.threads) == 2
    # The failed audit at 30 s recorded nothing (still refused then); the next ran RETRY_S later,
    # not an interval later (a step of the clock may race a returning worker thread: a range).
    assert 30 + RETRY_S <= gate.times[1] - start < 35
    assert gate.refused == ()
    assert not gate.unaudited


async def _step_until(
    mock_clock: trio.testing.MockClock,
    condition: Callable[[], bool],
    step: float,
    audit: _ScriptedAudit | None = None,
) -> None:
    """Move the mock clock `step` at a time until `condition()`, each step once `audit`'s threads
    have returned and the loop has taken their answers (bounded in real time: the mock clock
    stands still for `fail_after`; generous: on a loaded machine each worker thread starts late)."""
    limit = time.monotonic() + 60

    async def settle() -> None:
        await trio.testing.wait_all_tasks_blocked()
        while audit is not None and not audit.settled():  # the loop waits for a worker's answer
            assert time.monotonic() < limit
            await trio.sleep(0)
            await trio.testing.wait_all_tasks_blocked()

    await settle()
    while not condition():
        assert time.monotonic() < limit
        mock_clock.jump(step)
        await settle()


def _unaudited_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [line for line in _log_lines(caplog) if "no role audit has completed" in line]


async def test_no_re_audit_completed_for_two_intervals_shuts_the_gate_until_one_passes(
    mock_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The scenario on trio's clock: every re-audit fails (the role's connection slots are
    # full), so the last passing verdict must not stand past two intervals.
    gate = _CountingGate()
    gate.record([])
    failing = [NO_CONNECTION] * 200
    audit = _ScriptedAudit(failing)
    with caplog.at_level(logging.WARNING), trio.fail_after(1_000):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: serve_reaudit(gate, audit, interval_s=30, run=audit.run))
            start = trio.current_time()
            await _step_until(mock_clock, lambda: trio.current_time() - start >= 59, 1, audit)
            assert not _is_unaudited(gate)  # still within two intervals: served
            gate.check()
            await _step_until(mock_clock, lambda: gate.unaudited, 0.5, audit)
            assert 60 <= trio.current_time() - start < 62
            for _ in range(3):
                with pytest.raises(RoleUnauditedError) as caught:
                    gate.check()
            # Many more failed re-audits: still shut, and the log said so once.
            await _step_until(mock_clock, lambda: trio.current_time() - start >= 150, 1, audit)
            assert _is_unaudited(gate)
            assert len(audit.threads) > 10
            assert len(_unaudited_lines(caplog)) == 1
            # A re-audit completes and passes: served again, one line saying so.
            audit.answers.clear()
            await _step_until(mock_clock, lambda: not gate.unaudited, 1, audit)
            gate.check()
            nursery.cancel_scope.cancel()
    problem = caught.value
    assert problem.channel is Channel.RESULT  # in-band for a tool, as a refusal is
    assert problem.metadata == {"retryable": True}
    assert "Other tools still work" in problem.detail
    lines = _log_lines(caplog)
    assert len(_unaudited_lines(caplog)) == 1
    assert "too many connections for role" in _unaudited_lines(caplog)[0]  # the last reason
    assert lines[-1].endswith("the SQL tools serve again"), lines


async def test_starving_the_audit_does_not_keep_a_refusal_either_and_a_completed_refusal_shuts_again(
    mock_clock: trio.testing.MockClock,
) -> None:
    gate = _CountingGate()
    gate.record([DEFINER])
    audit = _ScriptedAudit([NO_CONNECTION] * 200)
    with trio.fail_after(1_000):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: serve_reaudit(gate, audit, interval_s=30, run=audit.run))
            await _step_until(mock_clock, lambda: gate.unaudited, 1, audit)
            with pytest.raises(RoleUnauditedError):
                gate.check()
            audit.answers[:] = [[DEFINER]]  # the next audit completes, and still refuses
            await _step_until(mock_clock, lambda: not gate.unaudited, 1, audit)
            with pytest.raises(RoleRefusedError):
                gate.check()
            nursery.cancel_scope.cancel()


async def test_a_re_audit_that_hangs_is_abandoned_and_the_gate_shuts_at_two_intervals(
    mock_clock: trio.testing.MockClock,
) -> None:
    gate = _CountingGate()
    gate.record([])
    release = threading.Event()
    calls: list[float] = []

    def hanging_audit() -> list[Finding]:
        calls.append(1)
        release.wait(10)
        return []

    try:
        with trio.fail_after(1_000):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: serve_reaudit(gate, hanging_audit, interval_s=30))
                start = trio.current_time()
                await _step_until(mock_clock, lambda: gate.unaudited, 1)
                # The mock clock does not wait for a worker thread to begin: wait (in real time,
                # bounded) for the one audit's thread to have entered, then count the audits.
                await _until(lambda: bool(calls))
                assert calls == [1]  # the one that hangs
                assert 60 <= trio.current_time() - start < 62
                nursery.cancel_scope.cancel()
    finally:
        release.set()


class _Notifications:
    """What the audit's LISTEN connection receives: `notified` returns when something came and
    takes all of it (as `link.AuditLink.drain` does), so a burst wakes the loop once."""

    def __init__(self) -> None:
        self.send, self.recv = trio.open_memory_channel[str](16)

    async def notified(self) -> None:
        await self.recv.receive()
        while True:
            try:
                self.recv.receive_nowait()
            except trio.WouldBlock:
                return


async def test_a_notification_re_audits_after_coalesce_s_and_a_burst_is_one_re_audit(
    mock_clock: trio.testing.MockClock,
) -> None:
    gate = _CountingGate()
    audit = _ScriptedAudit([[], [DEFINER], []])
    notifications = _Notifications()
    with trio.fail_after(1_000):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: serve_reaudit(
                    gate, audit, interval_s=30, notified=notifications.notified, run=audit.run
                )
            )
            start = trio.current_time()
            await _step_until(mock_clock, lambda: trio.current_time() - start >= 5, 1, audit)
            for tag in ("GRANT", "ALTER FUNCTION", "REVOKE"):  # one migration's burst
                notifications.send.send_nowait(tag)
            await _step_until(mock_clock, lambda: len(gate.times) == 1, COALESCE_S / 5, audit)
            await _step_until(mock_clock, lambda: len(gate.times) == 2, 1, audit)
            nursery.cancel_scope.cancel()
    first, second = (t - start for t in gate.times)
    assert 5 + COALESCE_S <= first < 5 + 1  # within a second, not an interval later
    assert len(audit.threads) == 2  # the burst was one re-audit
    # Then the interval again, counted from it (steps may race a returning thread: a range).
    assert first + 30 <= second < first + 35
    assert gate.refused == (DEFINER,)


def _is_unaudited(gate: AuditGate) -> bool:
    return gate.unaudited  # read afresh on each call (another task changes it)


def _is_refused(gate: AuditGate) -> bool:
    return bool(gate.refused)  # read afresh on each call (another task changes it)


async def test_the_loop_keeps_the_event_loop_free_while_an_audit_runs() -> None:
    gate = AuditGate()
    release = threading.Event()
    entered = threading.Event()

    def slow_audit() -> list[Finding]:
        entered.set()
        release.wait(10)
        return [DEFINER]

    ticks = 0
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: serve_reaudit(gate, slow_audit, interval_s=0.01))
            while not entered.is_set():
                await trio.sleep(0.01)
            for _ in range(5):  # the loop still runs other tasks while the audit blocks
                await trio.sleep(0)
                ticks += 1
            assert not _is_refused(gate)
            release.set()
            while not _is_refused(gate):
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert ticks == 5


async def test_the_session_runs_a_toolsets_background_task_and_cancels_it_at_shutdown() -> None:
    events: list[str] = []

    async def serve_forever() -> None:
        events.append("started")
        try:
            await trio.sleep_forever()
        finally:
            events.append("cancelled")

    @contextlib.contextmanager
    def open_background(settings: Settings) -> Iterator[Toolset | None]:
        yield Toolset(tools=(), background=(serve_forever,))

    with trio.fail_after(10):
        async with open_session(extra_tools=[open_background]) as h:
            await h.initialize()
            assert events == ["started"]
            await h.finish()
    assert events == ["started", "cancelled"]
