"""`CallTicket`: a cancel reaches the attached connection only, once attached, and never raises."""

from __future__ import annotations

import logging
from typing import Any, cast

import psycopg
import pytest

from mcp_suite.tools.sql.engine.ticket import CallTicket


class _Connection:
    """Stands in for the psycopg connection a worker attaches: records each cancel request."""

    def __init__(self, fails: bool = False) -> None:
        self.cancels: list[float] = []
        self._fails = fails

    def cancel_safe(self, timeout: float) -> None:
        self.cancels.append(timeout)
        if self._fails:
            raise psycopg.OperationalError("the cancel request could not be sent")


def _conn(fake: _Connection) -> psycopg.Connection[Any]:
    return cast("psycopg.Connection[Any]", fake)


def test_a_cancel_before_any_connection_marks_the_call_and_blocks_the_attach() -> None:
    ticket = CallTicket()
    before = ticket.cancelled
    ticket.cancel()
    assert before is False
    assert ticket.cancelled
    conn = _Connection()
    assert ticket.attach(_conn(conn)) is False
    ticket.cancel()
    assert conn.cancels == []


def test_a_cancel_while_attached_asks_the_connection_with_the_ticket_timeout() -> None:
    ticket = CallTicket(cancel_timeout_s=2.5)
    conn = _Connection()
    assert ticket.attach(_conn(conn)) is True
    assert ticket.mark_cancelled() is True
    ticket.cancel()
    assert conn.cancels == [2.5]
    ticket.detach()
    assert ticket.mark_cancelled() is False
    ticket.cancel()
    assert conn.cancels == [2.5]


def test_a_failed_cancel_request_is_logged_and_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    ticket = CallTicket()
    conn = _Connection(fails=True)
    assert ticket.attach(_conn(conn))
    with caplog.at_level(logging.WARNING, logger="mcp_suite.tools.sql.engine.ticket"):
        ticket.cancel()
    assert ticket.cancelled
    assert conn.cancels == [5.0]
    assert "could not cancel a running query" in caplog.text
