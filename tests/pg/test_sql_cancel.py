"""Cancellation at the tool glue's level: a trio cancel scope (the runtime's deadline is one) around
`run_in_db_thread` stops the query inside PostgreSQL and gets the pooled connection back clean."""

from __future__ import annotations

import functools
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.offload import run_in_db_thread
from mcp_suite.tools.sql.engine.executor import CallTicket, Executor
from mcp_suite.turns import Turns
from tests.support.pg import open_executor, run_unvetted

pytestmark = pytest.mark.pg


def _state_of(admin_dsn: str, pid: int) -> str | None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return str(row[0]) if row else None


def _run(executor: Executor, sql: str, ticket: CallTicket) -> Any:
    return run_unvetted(executor, sql, max_rows=5, ticket=ticket)


async def test_a_cancelled_scope_stops_the_query_and_returns_the_connection(
    demo_cluster: Cluster,
) -> None:
    # statement_timeout far above the scope: only the cancellation can stop this query.
    executor = open_executor(
        demo_cluster.reader_dsn,
        sql_pool_min_size=1,
        sql_pool_max_size=1,
        sql_statement_timeout_ms=20_000,
    )
    threads = Turns(1)
    try:
        with trio.fail_after(20):
            pid = (
                await run_in_db_thread(
                    functools.partial(_run, executor, "SELECT pg_backend_pid()"),
                    CallTicket(cancel_timeout_s=5),
                    threads=threads,
                    caller=None,
                    cancel_grace_s=5,
                )
            ).rows[0][0]
            with trio.move_on_after(0.5) as scope:
                await run_in_db_thread(
                    functools.partial(_run, executor, "SELECT pg_sleep(15)"),
                    CallTicket(cancel_timeout_s=5),
                    threads=threads,
                    caller=None,
                    cancel_grace_s=5,
                )
            assert scope.cancelled_caught
            # The shielded wait is over: the query has stopped and the connection is back.
            assert await trio.to_thread.run_sync(_state_of, demo_cluster.admin_dsn, pid) == "idle"
            assert executor.statistics().pool_available == 1
            again = await run_in_db_thread(
                functools.partial(
                    _run, executor, "SELECT pg_backend_pid(), current_setting('transaction_read_only')"
                ),
                CallTicket(cancel_timeout_s=5),
                threads=threads,
                caller=None,
                cancel_grace_s=5,
            )
            assert again.rows == [[pid, "on"]]
            assert threads.running == 0
    finally:
        executor.close()


async def test_a_call_cancelled_while_waiting_for_a_thread_never_reaches_the_database(
    demo_cluster: Cluster,
) -> None:
    executor = open_executor(demo_cluster.reader_dsn)
    threads = Turns(1)
    try:
        with trio.fail_after(20):
            held = threads.reserve(None)  # every DB thread is taken
            try:
                before = executor.statistics().round_trips
                with trio.move_on_after(0.2) as scope:
                    await run_in_db_thread(
                        functools.partial(_run, executor, "SELECT 1"),
                        CallTicket(cancel_timeout_s=5),
                        threads=threads,
                        caller=None,
                        cancel_grace_s=5,
                    )
                assert scope.cancelled_caught
                assert executor.statistics().round_trips == before
                assert threads.waiting == 0  # the cancelled call left the line
            finally:
                threads.release(held)
            assert threads.running == 0
    finally:
        executor.close()
