"""The tests' slow query (tests.support.pg.LONG_QUERY) waits for the statement timeout alone: it
writes no temporary file (a role's temp_file_limit would end it first, as a resource-limit answer)
and the policy lets it run, so every test that cancels it cancels a query still running."""

from __future__ import annotations

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import ExecutionTimeoutError
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.pg import LONG_QUERY, open_executor, run_unvetted

pytestmark = pytest.mark.pg


def test_the_slow_query_writes_no_temporary_file_and_only_the_statement_timeout_ends_it(
    demo_cluster: Cluster,
) -> None:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute("SET temp_file_limit = 0")  # the first byte of a temporary file is an error
        conn.execute("SET statement_timeout = 1000")
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute(LONG_QUERY)


def test_the_slow_query_passes_the_policy_and_runs_until_its_statement_timeout(demo_cluster: Cluster) -> None:
    executor = open_executor(demo_cluster.reader_dsn, sql_statement_timeout_ms=300)
    try:
        with pytest.raises(ExecutionTimeoutError):
            run_unvetted(executor, LONG_QUERY, max_rows=1, ticket=CallTicket())
    finally:
        executor.close()
