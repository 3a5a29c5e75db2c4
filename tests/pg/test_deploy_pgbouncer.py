"""read_only_sql behind PgBouncer in transaction pooling mode (Debian's pgbouncer, started by the
harness): every call correct, nothing relying on session state, the role audit through the pooler.

The pooler has ONE backend for the reader, so every transaction of every client lands on the same
PostgreSQL session, including one another client has left dirty on purpose.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import ADMIN_USER, READER_USER
from mcp_suite.problems import AccessDeniedError, ExecutionTimeoutError, QueryViolationError
from mcp_suite.tools.sql.engine.connections import SettingsNotPinnedError
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.client import ServerProcess, problem_of
from tests.support.deploy import check_role, password_of
from tests.support.devdb.pgbouncer import PgBouncer, open_pgbouncer
from tests.support.harness import open_session
from tests.support.pg import open_executor, run_unvetted, sql_settings
from tests.support.reaudit import (
    drop_event_trigger,
    install_event_trigger,
    reauditing_server,
    refused,
    served,
    until,
)

pytestmark = pytest.mark.pg

# Session state a transaction-pooling PgBouncer hands from one client to the next (1.18 restores
# only DateStyle, TimeZone, standard_conforming_strings, client_encoding and application_name).
DIRTY_SESSION = (
    "SET bytea_output = escape",
    "SET extra_float_digits = 0",
    "SET IntervalStyle = sql_standard",
    "SET statement_timeout = 0",
    "SET idle_in_transaction_session_timeout = 0",
    "SET search_path = pg_catalog",
)

SETTINGS_SQL = (
    "SELECT current_setting('statement_timeout'), current_setting('search_path'),"
    " current_setting('DateStyle')"
)

VALUES_SQL = (
    "SELECT 'a\\b' AS s, '\\x0102'::bytea AS b, (1::float8 / 3) AS f, interval '1 day 2 hours' AS i,"
    " timestamptz '2024-01-02 03:04:05+00' AS t, date '2024-01-02' AS d,"
    " current_setting('transaction_read_only') AS ro, current_setting('statement_timeout') AS st,"
    " current_setting('search_path') AS path, (SELECT count(*) FROM docs.pages) AS pages"
)
VALUES_ROW = [
    "a\\b",
    "\\x0102",
    1 / 3,
    "1 day 02:00:00",
    "2024-01-02T03:04:05+00:00",
    "2024-01-02",
    "on",
    "10s",
    'pg_catalog, "$user", public',  # pg_catalog pinned first, then the role's own path
    30,
]


@pytest.fixture(scope="module")
def bouncer(demo_cluster: Cluster) -> Iterator[PgBouncer]:
    users = {
        READER_USER: password_of(demo_cluster.reader_dsn),
        ADMIN_USER: password_of(demo_cluster.admin_dsn),
    }
    with open_pgbouncer(demo_cluster, users, pool_size=1) as running:
        yield running


def reader_dsn(bouncer: PgBouncer, cluster: Cluster) -> str:
    return bouncer.dsn(READER_USER, password_of(cluster.reader_dsn), cluster.dbname)


@pytest.fixture
def pooled_executor(bouncer: PgBouncer, demo_cluster: Cluster) -> Iterator[Executor]:
    executor = open_executor(reader_dsn(bouncer, demo_cluster), sql_pooler="transaction")
    try:
        yield executor
    finally:
        executor.close()


def test_the_pooler_refuses_startup_options_so_the_server_sends_none(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter: options"):
        psycopg.connect(reader_dsn(bouncer, demo_cluster), options="-c default_transaction_read_only=on")
    with psycopg.connect(reader_dsn(bouncer, demo_cluster), autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_call_is_right_on_a_backend_another_client_left_dirty(
    bouncer: PgBouncer, demo_cluster: Cluster, pooled_executor: Executor
) -> None:
    dsn = reader_dsn(bouncer, demo_cluster)
    with psycopg.connect(dsn, autocommit=True) as dirty:
        for statement in DIRTY_SESSION:
            dirty.execute(statement)
        dirty_pid = dirty.execute("SELECT pg_backend_pid()").fetchone()
    # The premise: the state really outlives its client and reaches the next one.
    with psycopg.connect(dsn, autocommit=True) as other:
        seen = other.execute(
            "SELECT pg_backend_pid(), current_setting('bytea_output'), current_setting('statement_timeout')"
        ).fetchone()
    assert seen == (*(dirty_pid or ()), "escape", "0")
    result = run_unvetted(pooled_executor, VALUES_SQL, max_rows=5, ticket=CallTicket())
    assert result.rows == [VALUES_ROW]
    assert [c.type for c in result.columns][:4] == ["text", "bytea", "double precision", "interval"]


def test_calls_through_the_pooler_fail_and_recover_like_direct_ones(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    executor = open_executor(
        reader_dsn(bouncer, demo_cluster), sql_pooler="transaction", sql_statement_timeout_ms=300
    )
    try:
        run = functools.partial(run_unvetted, executor)
        assert run("SELECT count(*) FROM docs.pages", max_rows=1, ticket=CallTicket()).rows == [[30]]
        with pytest.raises(AccessDeniedError):
            run("SELECT * FROM docs.editors", max_rows=1, ticket=CallTicket())
        with pytest.raises(ExecutionTimeoutError):
            run("SELECT count(*) FROM generate_series(1, 2000000000)", max_rows=1, ticket=CallTicket())
        with pytest.raises(QueryViolationError):
            run("SELECT set_config('transaction_read_only', 'off', false)", max_rows=1, ticket=CallTicket())
        # A session-level change made by a call does not reach the next call on the same backend.
        run("SELECT set_config('search_path', 'evil', false)", max_rows=1, ticket=CallTicket())
        after = run(
            "SELECT current_setting('search_path'), current_setting('statement_timeout')",
            max_rows=1,
            ticket=CallTicket(),
        )
        assert after.rows == [['pg_catalog, "$user", public', "300ms"]]
    finally:
        executor.close()


async def test_the_server_serves_through_the_pooler_under_its_application_name(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    settings = sql_settings(reader_dsn(bouncer, demo_cluster), sql_pooler="transaction")
    sql = "SELECT slug, words FROM docs.pages ORDER BY slug LIMIT 3"
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        expected = [list(row) for row in admin.execute(sql).fetchall()]
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            replies: list[dict[str, Any]] = []
            for _ in range(20):
                replies.append(await h.response(await h.call("read_only_sql", {"sql": sql})))
            schema = await h.request("resources/read", {"uri": "postgres://mcp_demo/schema"})
    assert [r["result"]["structuredContent"]["rows"] for r in replies] == [expected] * 20
    assert "docs" in schema["result"]["contents"][0]["text"]
    # PgBouncer passes the client's application_name on to the backend it lends.
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        names = admin.execute(
            "SELECT application_name FROM pg_stat_activity WHERE usename = %s", (READER_USER,)
        ).fetchall()
    assert (APPLICATION_NAME,) in names


def test_the_role_audit_runs_through_the_pooler(bouncer: PgBouncer, demo_cluster: Cluster) -> None:
    fit = check_role(reader_dsn(bouncer, demo_cluster), pooler="transaction")
    assert (fit.returncode, fit.stdout.strip()) == (
        0,
        "check-role: the role can only read; read_only_sql will serve.",
    )
    # A role unfit to serve is told first, whatever MCP_SQL_POOLER says.
    superuser = check_role(bouncer.dsn(ADMIN_USER, password_of(demo_cluster.admin_dsn), demo_cluster.dbname))
    assert superuser.returncode == 78
    assert "superuser" in superuser.stdout
    with ServerProcess(
        env={
            "MCP_SQL_DSN": reader_dsn(bouncer, demo_cluster),
            "MCP_SQL_POOLER": "transaction",
            "MCP_METRICS_ENABLED": "false",
        }
    ) as server:
        server.initialize()
        result = server.call_tool("read_only_sql", {"sql": "SELECT count(*) FROM docs.pages"})
        assert result["structuredContent"]["rows"] == [[30]]
        assert server.stop() == 0
    assert "no connection to the database" not in server.stderr_text()
    refused = ServerProcess(
        env={
            "MCP_SQL_DSN": bouncer.dsn(ADMIN_USER, password_of(demo_cluster.admin_dsn), demo_cluster.dbname),
            "MCP_METRICS_ENABLED": "false",
        }
    )
    with refused:
        assert refused.wait(timeout=30) == 78
    assert "refusing to start" in refused.stderr_text()


def test_a_cancel_request_reaches_the_backend_through_the_pooler(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    executor = open_executor(
        reader_dsn(bouncer, demo_cluster), sql_pooler="transaction", sql_statement_timeout_ms=20_000
    )
    ticket = CallTicket()
    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(
                run_unvetted(
                    executor, "SELECT count(*) FROM generate_series(1, 2000000000)", max_rows=1, ticket=ticket
                )
            )
        except Exception as exc:  # recorded for the assertion
            outcome.append(exc)

    try:
        worker = threading.Thread(target=call)
        worker.start()
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
            deadline = time.monotonic() + 10
            while not admin.execute(
                "SELECT 1 FROM pg_stat_activity"
                " WHERE usename = %s AND state = 'active' AND query LIKE 'FETCH%%'",
                (READER_USER,),
            ).fetchall():
                assert time.monotonic() < deadline, "the query never started"
                time.sleep(0.01)
            ticket.cancel()  # libpq's cancel request goes to PgBouncer, which forwards it
            worker.join(timeout=10)
            assert not worker.is_alive()
            (problem,) = outcome
            assert isinstance(problem, ExecutionTimeoutError)
            states = admin.execute(
                "SELECT state FROM pg_stat_activity WHERE usename = %s", (READER_USER,)
            ).fetchall()
        assert ("active",) not in states
        assert run_unvetted(executor, "SELECT 1", max_rows=1, ticket=CallTicket()).rows == [[1]]
    finally:
        executor.close()


def test_a_server_told_no_pooler_is_in_front_refuses_to_serve_through_one_and_leaves_no_setting(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    dsn = reader_dsn(bouncer, demo_cluster)
    with psycopg.connect(dsn, autocommit=True) as before:
        settings_before = before.execute(SETTINGS_SQL).fetchone()
    executor = open_executor(dsn, sql_pooler="none", sql_statement_timeout_ms=300)
    try:
        for _ in range(2):
            with pytest.raises(SettingsNotPinnedError, match="MCP_SQL_POOLER=transaction"):
                run_unvetted(executor, "SELECT count(*) FROM docs.pages", max_rows=1, ticket=CallTicket())
    finally:
        executor.close()
    # The pooler's one backend (every client's) kept its own settings: none of ours stayed on it.
    with psycopg.connect(dsn, autocommit=True) as after:
        assert after.execute(SETTINGS_SQL).fetchone() == settings_before
    assert settings_before is not None
    assert settings_before[0] != "300ms"


def test_told_no_pooler_is_in_front_check_role_and_the_server_refuse_one_at_start(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    dsn = reader_dsn(bouncer, demo_cluster)
    told_none = check_role(dsn, pooler="none")
    assert told_none.returncode == 78, told_none.stdout + told_none.stderr
    assert "read_only_sql will serve" not in told_none.stdout
    assert "a pooler answers for it); set MCP_SQL_POOLER=transaction" in told_none.stderr
    refused = ServerProcess(
        env={"MCP_SQL_DSN": dsn, "MCP_SQL_POOLER": "none", "MCP_METRICS_ENABLED": "false"}
    )
    with refused:
        assert refused.wait(timeout=30) == 78
    said = refused.stderr_text()
    assert "refusing to start" in said
    assert "set MCP_SQL_POOLER=transaction" in said
    assert password_of(demo_cluster.reader_dsn) not in said
    # Straight to PostgreSQL, the same role and setting serve.
    direct = check_role(demo_cluster.reader_dsn, pooler="none")
    assert (direct.returncode, direct.stdout.strip().splitlines()[-1]) == (
        0,
        "check-role: the role can only read; read_only_sql will serve.",
    )


# --- issue 40: the audit's own connection straight to PostgreSQL, for LISTEN -----------------------


def test_behind_the_pooler_an_audit_dsn_straight_to_postgresql_sees_a_change_at_once(
    bouncer: PgBouncer, demo_cluster: Cluster
) -> None:
    # A transaction pooler hands a session's backend to others, so LISTEN through it hears nothing:
    # MCP_SQL_AUDIT_DSN lets the audit's own connection go direct and listen for the guide's trigger.
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        install_event_trigger(admin)
        admin.execute(
            "CREATE FUNCTION docs.fmt_ticket(t text) RETURNS text LANGUAGE sql"
            " SET search_path = pg_catalog AS $$ SELECT t || ' by ' || current_user $$"
        )
        admin.execute("GRANT EXECUTE ON FUNCTION docs.fmt_ticket(text) TO PUBLIC")
        try:
            with reauditing_server(
                reader_dsn(bouncer, demo_cluster),
                MCP_SQL_POOLER="transaction",
                MCP_SQL_AUDIT_DSN=demo_cluster.reader_dsn,
                MCP_SQL_REAUDIT_INTERVAL_S="60",
            ) as server:
                admin.execute("ALTER FUNCTION docs.fmt_ticket(text) SECURITY DEFINER")
                # `until` gives up far inside the 60 s interval: only the notification can do it.
                problem = problem_of(until(server, refused))
                assert '"docs"."fmt_ticket"(t text)' in problem["detail"]
                admin.execute("DROP FUNCTION docs.fmt_ticket(text)")
                assert served(until(server, served))
        finally:
            admin.execute("DROP FUNCTION IF EXISTS docs.fmt_ticket(text)")
            drop_event_trigger(admin)


@pytest.mark.parametrize("case", ["through the pooler", "another role"])
def test_an_audit_dsn_that_cannot_vouch_for_the_served_role_refuses_the_start(
    bouncer: PgBouncer, demo_cluster: Cluster, case: str
) -> None:
    audit_dsn, said = {
        "through the pooler": (reader_dsn(bouncer, demo_cluster), "a pooler answers for MCP_SQL_AUDIT_DSN"),
        "another role": (demo_cluster.admin_dsn, "does not lead to the role and database of MCP_SQL_DSN"),
    }[case]
    refused_start = ServerProcess(
        env={
            "MCP_SQL_DSN": reader_dsn(bouncer, demo_cluster),
            "MCP_SQL_POOLER": "transaction",
            "MCP_SQL_AUDIT_DSN": audit_dsn,
            "MCP_METRICS_ENABLED": "false",
        }
    )
    with refused_start:
        assert refused_start.wait(timeout=30) == 78
    stderr = refused_start.stderr_text()
    assert "refusing to start" in stderr
    assert said in stderr
    assert password_of(demo_cluster.admin_dsn) not in stderr
