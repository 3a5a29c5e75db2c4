"""A call's pinned settings on a direct connection (`MCP_SQL_POOLER=none`, the default): set once per
connection, checked by every call in its transaction, fewer statements than behind a pooler; and a
backend that shows other settings refuses the call and loses its connection (fail closed).

The statements are counted by PostgreSQL itself: the reader's sessions log every statement
(`log_statement = all`, set for the role while the test runs) and the lines of the executor's one
backend are counted in the cluster's log.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from mcp_suite.tools.sql.engine.connections import SettingsNotPinnedError
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.pg import open_executor, run_unvetted

pytestmark = pytest.mark.pg

QUERY = "SELECT section, count(*) FROM docs.pages GROUP BY section ORDER BY section"
PINNED_SQL = (
    "SELECT current_setting('statement_timeout'), current_setting('search_path'),"
    " current_setting('DateStyle'), current_setting('application_name')"
)
CALLS = 5


@pytest.fixture
def statement_log(demo_cluster: Cluster) -> Iterator[Path]:
    """The reader's new sessions log every statement while the test runs."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"ALTER ROLE {READER_USER} SET log_statement = 'all'")
    try:
        yield demo_cluster.base / "postgres.log"
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
            admin.execute(f"ALTER ROLE {READER_USER} RESET log_statement")


def statements_of(log: Path, pid: int, start: int) -> list[str]:
    """The statements backend `pid` logged after byte `start` of the log, in order."""
    with log.open("rb") as file:
        file.seek(start)
        text = file.read().decode(errors="replace")
    pattern = re.compile(rf"\[{pid}\] LOG:  (?:statement|execute [^:]*): (.*)")
    # The reset draws a fresh random seed for every call: the same statement with another number.
    return [re.sub(r"setseed\([^)]*\)", "setseed(…)", match.group(1)) for match in pattern.finditer(text)]


def one_backend(executor: Executor) -> int:
    row = run_unvetted(executor, "SELECT pg_backend_pid()", max_rows=1, ticket=CallTicket()).rows
    return int(row[0][0])


def statements_per_call(dsn: str, pooler: str, log: Path) -> list[str]:
    """The statements one call sends, as the backend logged them (the same for every call)."""
    executor = open_executor(dsn, sql_pooler=pooler, sql_pool_max_size=1)
    try:
        return count_per_call(executor, log)
    finally:
        executor.close()


def count_per_call(executor: Executor, log: Path) -> list[str]:
    pid = one_backend(executor)
    run_unvetted(executor, QUERY, max_rows=10, ticket=CallTicket())  # warm: the column types are known
    time.sleep(0.05)
    start = log.stat().st_size
    for _ in range(CALLS):
        assert run_unvetted(executor, QUERY, max_rows=10, ticket=CallTicket()).rows
    deadline = time.monotonic() + 5
    while True:  # the backend writes its lines itself; give the last one a moment
        statements = statements_of(log, pid, start)
        if (statements and len(statements) % CALLS == 0) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert len(statements) % CALLS == 0, statements
    per_call = statements[: len(statements) // CALLS]
    assert statements == per_call * CALLS  # every call the same statements, nothing else between
    return per_call


def test_a_direct_call_is_begin_the_check_the_cursor_rollback_and_the_reset(
    demo_cluster: Cluster, statement_log: Path
) -> None:
    per_call = statements_per_call(demo_cluster.reader_dsn, "none", statement_log)
    kinds = [statement.split(" ")[0] for statement in per_call]
    # The last SELECT before the ROLLBACK: the call is still its login role (issue 51).
    assert kinds == [
        "BEGIN",
        "SELECT",
        "DECLARE",
        "FETCH",
        "MOVE",
        "SELECT",
        "ROLLBACK",
        "DEALLOCATE",
        "SELECT",
    ]
    assert "current_setting" in per_call[1]
    assert "session_user" in per_call[5]
    assert not any("RESET ALL" in statement or "set_config" in statement for statement in per_call)


def test_behind_a_pooler_every_call_resets_and_sets_its_settings(
    demo_cluster: Cluster, statement_log: Path
) -> None:
    per_call = statements_per_call(demo_cluster.reader_dsn, "transaction", statement_log)
    assert [statement.split(" ")[0] for statement in per_call] == [
        "BEGIN",
        "RESET",
        "SELECT",
        "DECLARE",
        "FETCH",
        "MOVE",
        "SELECT",
        "ROLLBACK",
        "DEALLOCATE",
        "SELECT",
    ]
    # The settings' statement checks the session is its login role; the call ends checking it still is.
    assert "set_config" in per_call[2]
    assert "session_user" in per_call[2]
    assert "session_user" in per_call[6]


def test_a_direct_connection_keeps_the_pinned_settings_and_no_call_changes_them(
    demo_cluster: Cluster,
) -> None:
    executor = open_executor(demo_cluster.reader_dsn, sql_pooler="none", sql_statement_timeout_ms=700)
    try:
        run = functools.partial(run_unvetted, executor)
        pinned = run(PINNED_SQL, max_rows=1, ticket=CallTicket()).rows
        assert pinned == [["700ms", 'pg_catalog, "$user", public', "ISO, YMD", APPLICATION_NAME]]
        # A call that changes session settings changes nothing for the next: it is rolled back.
        run(
            "SELECT set_config('search_path', 'evil', false), set_config('statement_timeout', '0', false)",
            max_rows=1,
            ticket=CallTicket(),
        )
        assert run(PINNED_SQL, max_rows=1, ticket=CallTicket()).rows == pinned
    finally:
        executor.close()


@pytest.mark.parametrize("reset", ["RESET ALL", "DISCARD ALL"])
def test_a_backend_reset_since_it_was_pinned_refuses_the_call_and_loses_its_connection(
    demo_cluster: Cluster, reset: str
) -> None:
    executor = open_executor(
        demo_cluster.reader_dsn, sql_pooler="none", sql_pool_max_size=1, sql_statement_timeout_ms=700
    )
    try:
        before = one_backend(executor)
        # What a pooler's reset between two clients does (PgBouncer's server_reset_query).
        with executor.connections.connection() as conn:  # the test plays the pooler
            assert conn.execute("SHOW statement_timeout").fetchone() == ("700ms",)
            conn.execute(reset)
            assert conn.execute("SHOW statement_timeout").fetchone() != ("700ms",)
        with pytest.raises(SettingsNotPinnedError, match="MCP_SQL_POOLER=transaction"):
            run_unvetted(executor, QUERY, max_rows=10, ticket=CallTicket())
        # That connection is gone; the next call gets a fresh one, pinned again.
        after = one_backend(executor)
        assert after != before
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
            alive = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (before,)
            ).fetchone()
        assert alive == (0,)
        assert run_unvetted(executor, PINNED_SQL, max_rows=1, ticket=CallTicket()).rows[0][0] == "700ms"
    finally:
        executor.close()


def test_the_pin_check_fails_on_any_other_backend(demo_cluster: Cluster) -> None:
    executor = open_executor(demo_cluster.reader_dsn, sql_pooler="none", sql_pool_max_size=1)
    try:
        one_backend(executor)
        with executor.connections.connection() as conn:
            check = conn.pin_check
            assert conn.execute(check).fetchone() == (1,)
    finally:
        executor.close()
    # Another backend of the same role, as a pooler would hand over, has no such setting.
    with (
        psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as other,
        pytest.raises(psycopg.errors.UndefinedObject),
    ):
        other.execute(check)
