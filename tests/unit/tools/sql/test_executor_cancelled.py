"""A call whose ticket was cancelled before it started never reaches the database."""

from __future__ import annotations

import pytest

from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.executor import CallCancelledError, Executor
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.pg import run_unvetted

# Nothing listens on port 1: a call that tried to connect would fail as database-unavailable.
UNREACHABLE = "host=127.0.0.1 port=1 connect_timeout=1"


def _cancelled() -> CallTicket:
    ticket = CallTicket()
    ticket.cancel()
    return ticket


def test_a_query_cancelled_before_it_starts_raises_call_cancelled() -> None:
    executor = Executor(Settings(), UNREACHABLE)
    ticket = _cancelled()
    with pytest.raises(CallCancelledError):
        run_unvetted(executor, "SELECT 1", max_rows=1, ticket=ticket)
    assert ticket.started
    assert executor.statistics().round_trips == 0


def test_a_catalogue_read_cancelled_before_it_starts_raises_call_cancelled() -> None:
    executor = Executor(Settings(), UNREACHABLE)
    read: list[object] = []
    with pytest.raises(CallCancelledError):
        executor.read_catalogue(read.append, ticket=_cancelled())
    assert read == []
