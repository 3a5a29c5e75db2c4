"""Defence in depth with the SQL policy bypassed on purpose: the writes the policy refuses still fail
inside the database. The read-only transaction holds alone (a superuser, who may write anything,
inside BEGIN READ ONLY), the role holds alone (mcp_reader inside an explicit READ WRITE transaction),
and the executor (both, plus the named cursor) refuses them all, leaving the data untouched."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import AccessDeniedError, InvalidArgumentsError, QueryViolationError
from mcp_suite.tools.sql.engine.executor import CallTicket, Executor
from tests.support.pg import WRITE_FUNCTION, open_executor, run_unvetted

pytestmark = pytest.mark.pg

WRITES: dict[str, list[str]] = {
    "insert": ["INSERT INTO docs.pages VALUES ('page-99', 'e-1', 'guides', 1)"],
    "delete-in-with": ["WITH d AS (DELETE FROM docs.pages RETURNING 1) SELECT count(*) FROM d"],
    "lo_create": ["SELECT lo_create(0)"],
    "set_config-then-write": [
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "UPDATE docs.pages SET words = 0",
    ],
    "write-behind-a-function": [f"SELECT {WRITE_FUNCTION}()"],
}


def snapshot(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM docs.pages), (SELECT sum(words) FROM docs.pages),"
        " (SELECT count(*) FROM docs.editors), (SELECT count(*) FROM pg_largeobject_metadata)"
    ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.fixture
def untouched(demo_cluster: Cluster, pg_helpers: None) -> Iterator[None]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        before = snapshot(conn)
        yield
        assert snapshot(conn) == before


def run_in_transaction(dsn: str, begin: str, statements: list[str]) -> psycopg.Error:
    """Run `statements` inside `begin`; return the error the last one raised (it must raise)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(begin.encode())
        try:
            for statement in statements[:-1]:
                conn.execute(statement.encode())
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(statements[-1].encode())
            return caught.value
        finally:
            conn.execute(b"ROLLBACK")


@pytest.mark.parametrize("write", sorted(WRITES))
def test_the_read_only_transaction_alone_refuses_a_superuser_write(
    demo_cluster: Cluster, untouched: None, write: str
) -> None:
    error = run_in_transaction(demo_cluster.admin_dsn, "BEGIN READ ONLY", WRITES[write])
    assert error.sqlstate == "25006"


@pytest.mark.parametrize("write", sorted(WRITES))
def test_the_role_alone_refuses_a_write_in_a_read_write_transaction(
    demo_cluster: Cluster, untouched: None, write: str
) -> None:
    error = run_in_transaction(demo_cluster.reader_dsn, "BEGIN READ WRITE", WRITES[write])
    assert error.sqlstate == "42501"


def test_the_role_alone_cannot_create_objects(demo_cluster: Cluster, untouched: None) -> None:
    for statement in ("CREATE TEMP TABLE t (x int)", "CREATE TABLE docs.t (x int)"):
        error = run_in_transaction(demo_cluster.reader_dsn, "BEGIN READ WRITE", [statement])
        assert error.sqlstate == "42501"


EXPECTED_BY_EXECUTOR: dict[str, tuple[type[Exception], str]] = {
    # The named cursor accepts only SELECT/VALUES: PostgreSQL refuses before anything runs.
    "insert": (InvalidArgumentsError, "42601"),
    "delete-in-with": (InvalidArgumentsError, "0A000"),
    # The role lacks EXECUTE on lo_create (checked when the plan starts).
    "lo_create": (AccessDeniedError, "42501"),
    # set_config succeeds and is rolled back; the UPDATE is not even a query a cursor can hold.
    "set_config-then-write": (InvalidArgumentsError, "42601"),
    "write-behind-a-function": (QueryViolationError, "25006"),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_the_executor_refuses_every_write_without_the_policy(
    reader_executor: Executor, untouched: None, write: str
) -> None:
    *setup, last = WRITES[write]
    for statement in setup:
        run_unvetted(reader_executor, statement, max_rows=1, ticket=CallTicket())
    problem, sqlstate = EXPECTED_BY_EXECUTOR[write]
    with pytest.raises(problem) as caught:
        run_unvetted(reader_executor, last, max_rows=1, ticket=CallTicket())
    assert getattr(caught.value, "metadata", {})["sqlstate"] == sqlstate


def test_set_config_does_not_leak_into_the_next_call(reader_executor: Executor, untouched: None) -> None:
    # The demo's sequence: turn read-only off with set_config, then lo_create on the next call.
    run_unvetted(
        reader_executor,
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        max_rows=1,
        ticket=CallTicket(),
    )
    with pytest.raises(AccessDeniedError):
        run_unvetted(reader_executor, "SELECT lo_create(0)", max_rows=1, ticket=CallTicket())
    state = run_unvetted(
        reader_executor,
        "SELECT current_setting('default_transaction_read_only'), current_setting('transaction_read_only')",
        max_rows=1,
        ticket=CallTicket(),
    )
    assert state.rows == [["on", "on"]]


def test_the_executors_own_transaction_is_read_only_even_for_a_superuser(
    demo_cluster: Cluster, untouched: None
) -> None:
    # A superuser has no role-level default and may write anything: only the executor's
    # BEGIN READ ONLY stands between this write and the data.
    executor = open_executor(demo_cluster.admin_dsn)
    try:
        state = run_unvetted(
            executor, "SELECT current_setting('transaction_read_only') AS ro", max_rows=1, ticket=CallTicket()
        )
        assert state.rows == [["on"]]
        with pytest.raises(QueryViolationError) as caught:
            run_unvetted(executor, f"SELECT {WRITE_FUNCTION}()", max_rows=1, ticket=CallTicket())
        assert caught.value.metadata["sqlstate"] == "25006"
    finally:
        executor.close()
