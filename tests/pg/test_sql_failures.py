"""A query's own error is not an outage: only a failure of the connection itself makes the database
`database-unavailable` and logs "unreachable" (docs/tools/read_only_sql.md, "Errors")."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from mcp_suite.problems import ConflictError, InvalidArgumentsError
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.pg import run_unvetted

pytestmark = pytest.mark.pg


def test_lastval_before_nextval_is_the_query_s_error_and_no_outage_is_logged(
    reader_executor: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(3):  # each call alike: no "unreachable", then "available again"
        with pytest.raises(InvalidArgumentsError) as raised:
            run_unvetted(reader_executor, "SELECT lastval()", max_rows=1, ticket=CallTicket())
        assert raised.value.metadata == {"sqlstate": "55000"}
        assert "lastval is not yet defined" in raised.value.detail
    assert run_unvetted(reader_executor, "SELECT 1", max_rows=1, ticket=CallTicket()).rows == [[1]]
    assert "unreachable" not in caplog.text
    assert "available again" not in caplog.text


# Deterministic stand-in for a hot standby's recovery conflict (tests/pg/test_deploy_replica.py has
# the real one): the statement fails with serialization_failure, then the server ends the session a
# moment later (here the session asks for its own end while it raises the error, and the end
# comes at the next interrupt check, once the error is sent).
CONFLICT_THEN_END = """
CREATE FUNCTION public.mcp_conflict_then_end() RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    RAISE SQLSTATE '40001' USING MESSAGE = 'canceling statement due to conflict with recovery'
        || left(pg_terminate_backend(pg_backend_pid())::text, 0);
END $$
"""


@pytest.fixture
def conflict_then_end(admin: psycopg.Connection[Any]) -> Iterator[None]:
    admin.execute(CONFLICT_THEN_END)
    admin.execute("GRANT EXECUTE ON FUNCTION public.mcp_conflict_then_end() TO mcp_reader")
    try:
        yield
    finally:
        admin.execute("DROP FUNCTION public.mcp_conflict_then_end()")


def test_a_conflict_whose_session_then_ends_stays_a_conflict_and_runs_once(
    reader_executor: Executor, conflict_then_end: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with pytest.raises(ConflictError) as raised:
        run_unvetted(
            reader_executor, "SELECT public.mcp_conflict_then_end()", max_rows=1, ticket=CallTicket()
        )
    assert raised.value.metadata == {"sqlstate": "40001", "retryable": True}
    assert run_unvetted(reader_executor, "SELECT 1", max_rows=1, ticket=CallTicket()).rows == [[1]]
    assert "unreachable" not in caplog.text
    assert "retrying" not in caplog.text
