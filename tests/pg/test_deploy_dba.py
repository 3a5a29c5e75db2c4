"""What a DBA sees and does: the server's sessions carry `application_name` `mcp-suite/<version>`,
and the queries docs/operations/deployments.md gives to watch and stop them work as documented."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from mcp_suite import __version__
from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import DatabaseUnavailableError, ExecutionTimeoutError
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.deploy import query_once, with_params
from tests.support.pg import LONG_QUERY, open_executor, run_unvetted

pytestmark = pytest.mark.pg


# The documented queries, verbatim.
WATCH = (
    "SELECT pid, usename, client_addr, state, now() - query_start AS running_for, left(query, 120)"
    " FROM pg_stat_activity WHERE application_name LIKE 'mcp-suite/%' ORDER BY query_start"
)
CANCEL_LONG = (
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
    " WHERE application_name LIKE 'mcp-suite/%' AND state = 'active'"
    " AND now() - query_start > interval '100 milliseconds'"
)
TERMINATE_ALL = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'mcp-suite/%'"
)


def watched(admin: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return admin.execute(WATCH).fetchall()


def test_sessions_carry_the_versioned_application_name(demo_cluster: Cluster) -> None:
    rows = query_once(demo_cluster.reader_dsn, "SELECT current_setting('application_name')")
    assert rows == [[f"mcp-suite/{__version__}"]]


def test_an_application_name_in_the_dsn_wins(demo_cluster: Cluster) -> None:
    dsn = with_params(demo_cluster.reader_dsn, application_name="mcp-suite/alice")
    assert query_once(dsn, "SELECT current_setting('application_name')") == [["mcp-suite/alice"]]


def start_long_call(executor: Executor) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(run_unvetted(executor, LONG_QUERY, max_rows=1, ticket=CallTicket()))
        except Exception as exc:  # recorded for the assertion
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    return worker, outcome


def wait_active(admin: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 10
    while True:
        rows = [row for row in watched(admin) if row[3] == "active" and str(row[5]).startswith("FETCH")]
        if rows:
            return rows
        assert time.monotonic() < deadline, "the call never showed up as active"
        time.sleep(0.01)


def test_the_dba_sees_a_running_call_and_cancels_it(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    executor = open_executor(demo_cluster.reader_dsn, sql_statement_timeout_ms=20_000)
    try:
        worker, outcome = start_long_call(executor)
        (row,) = wait_active(admin)
        assert row[1] == "mcp_reader"
        time.sleep(0.15)  # older than the query's 100 ms threshold
        assert admin.execute(CANCEL_LONG).fetchall() == [(True,)]
        worker.join(timeout=10)
        (problem,) = outcome
        assert isinstance(problem, ExecutionTimeoutError)
        after = run_unvetted(executor, "SELECT 1", max_rows=1, ticket=CallTicket())
        assert after.rows == [[1]]
    finally:
        executor.close()


def test_the_dba_terminates_every_session_and_the_server_reconnects(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    executor = open_executor(demo_cluster.reader_dsn, sql_pool_min_size=2)
    try:
        run_unvetted(executor, "SELECT 1", max_rows=1, ticket=CallTicket())
        pids = {row[0] for row in watched(admin)}
        assert pids
        terminated = admin.execute(TERMINATE_ALL).fetchall()
        assert terminated
        assert all(ok for (ok,) in terminated)
        wait_gone(admin, pids)  # pg_terminate_backend only signals: the sessions end a moment later
        # The next call finds its idle connection closed before sending anything, checks the
        # pool and takes another: nothing of it had run, so the retry is safe.
        after = run_unvetted(executor, "SELECT count(*) FROM docs.pages", max_rows=1, ticket=CallTicket())
        assert after.rows == [[30]]
    finally:
        executor.close()


def wait_gone(admin: psycopg.Connection[Any], pids: set[int]) -> None:
    deadline = time.monotonic() + 10
    while pids & {row[0] for row in watched(admin)}:
        assert time.monotonic() < deadline, "the terminated sessions never ended"
        time.sleep(0.01)


def test_a_call_whose_session_is_terminated_mid_query_is_answered_at_once_and_not_run_again(
    demo_cluster: Cluster, admin: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    executor = open_executor(demo_cluster.reader_dsn, sql_statement_timeout_ms=20_000)
    try:
        worker, outcome = start_long_call(executor)
        ((pid, *_),) = wait_active(admin)
        started = time.monotonic()
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchall() == [(True,)]
        worker.join(timeout=15)
        assert not worker.is_alive()
        (problem,) = outcome
        # Run again, the long query would hold the call until its 20 s statement timeout.
        assert isinstance(problem, DatabaseUnavailableError), problem
        assert problem.metadata == {"sqlstate": "57P01", "retryable": True}
        assert time.monotonic() - started < 10
        assert not [row for row in watched(admin) if row[3] == "active"]  # not run again
        after = run_unvetted(executor, "SELECT 1", max_rows=1, ticket=CallTicket())
        assert after.rows == [[1]]
    finally:
        executor.close()
    # The database never was unreachable: no change of state is logged.
    assert "unreachable" not in caplog.text
    assert "available again" not in caplog.text
