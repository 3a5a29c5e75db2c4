"""read_only_sql against a hot standby: a primary made for replication, a streaming replica from
`pg_basebackup -R`, both started by the harness (tests/support/devdb/replica.py).

Queries and the start-up role audit work in recovery; a query the standby cancels to replay the
primary's changes (a recovery conflict) is answered with the `conflict` problem, which says the
call can be sent again, and the next call succeeds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import ConflictError
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.client import ServerProcess
from tests.support.deploy import check_role, query_once
from tests.support.devdb.replica import Standby, open_primary, open_standby
from tests.support.pg import open_executor, run_unvetted

pytestmark = pytest.mark.pg

# Holds docs.pages (its lock is what the replay waits for) and streams: only a cancel ends it.
LONG_QUERY = "SELECT count(*) FROM (SELECT generate_series(1, 9223372036854775807) AS n FROM docs.pages) AS g"


@dataclass(frozen=True)
class Replication:
    primary: Cluster
    standby: Standby

    @property
    def reader_dsn(self) -> str:
        return self.standby.with_port(self.primary.reader_dsn)

    @property
    def admin_dsn(self) -> str:
        return self.standby.with_port(self.primary.admin_dsn)


@pytest.fixture(scope="module")
def replication() -> Iterator[Replication]:
    # A query in the way of replay is cancelled after 200 ms, and the standby does not hold back
    # the primary's cleanup: the conflict comes fast and for sure.
    settings = {"max_standby_streaming_delay": "200ms", "hot_standby_feedback": "off"}
    with open_primary() as primary, open_standby(primary, settings) as standby:
        yield Replication(primary, standby)


def test_the_standby_streams_the_primarys_changes(replication: Replication) -> None:
    with psycopg.connect(replication.primary.admin_dsn, autocommit=True) as primary:
        primary.execute("UPDATE docs.pages SET words = words + 1 WHERE slug = 'page-07'")
        (words,) = primary.execute("SELECT words FROM docs.pages WHERE slug = 'page-07'").fetchone() or (0,)
    replication.standby.wait_replayed(replication.primary)
    rows = query_once(
        replication.reader_dsn, "SELECT pg_is_in_recovery(), words FROM docs.pages WHERE slug = 'page-07'"
    )
    assert rows == [[True, words]]


def test_the_server_audits_its_role_and_serves_in_recovery(replication: Replication) -> None:
    audited = check_role(replication.reader_dsn)
    assert (audited.returncode, audited.stdout.strip()) == (
        0,
        "check-role: the role can only read; read_only_sql will serve.",
    )
    refused = check_role(replication.admin_dsn)
    assert refused.returncode == 78
    with ServerProcess(env={"MCP_SQL_DSN": replication.reader_dsn, "MCP_METRICS_ENABLED": "false"}) as server:
        server.initialize()
        result = server.call_tool("read_only_sql", {"sql": "SELECT count(*) FROM docs.pages"})
        assert result["structuredContent"]["rows"] == [[30]]
        assert server.stop() == 0
    assert "no connection to the database" not in server.stderr_text()


def wait_running(admin_dsn: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        while True:
            (running,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'FETCH%'"
            ).fetchone() or (0,)
            if running:
                return
            assert time.monotonic() < deadline, "the query never started on the standby"
            time.sleep(0.01)


def test_a_query_cancelled_by_a_recovery_conflict_is_a_retryable_conflict(replication: Replication) -> None:
    executor = open_executor(replication.reader_dsn, sql_statement_timeout_ms=20_000)
    outcome: list[BaseException | object] = []

    def call() -> None:
        try:
            outcome.append(run_unvetted(executor, LONG_QUERY, max_rows=1, ticket=CallTicket()))
        except Exception as exc:  # recorded for the assertion below
            outcome.append(exc)

    try:
        worker = threading.Thread(target=call)
        worker.start()
        wait_running(replication.admin_dsn)
        # Replaying this lock must wait for the standby's query, until max_standby_streaming_delay.
        with psycopg.connect(replication.primary.admin_dsn) as primary:
            primary.execute("LOCK TABLE docs.pages IN ACCESS EXCLUSIVE MODE")
        worker.join(timeout=20)
        assert not worker.is_alive()
        (problem,) = outcome
        assert isinstance(problem, ConflictError), problem
        assert problem.metadata == {"sqlstate": "40001", "retryable": True}
        assert "Send the same call again" in problem.detail
        # And it can be: the same call on the same pool now succeeds.
        again = run_unvetted(executor, "SELECT count(*) FROM docs.pages", max_rows=1, ticket=CallTicket())
        assert again.rows == [[30]]
    finally:
        executor.close()


def test_snapshot_conflicts_are_answered_conflict_at_once_and_never_run_again(
    replication: Replication, caplog: pytest.LogCaptureFixture
) -> None:
    # The primary removes rows (DELETE, then VACUUM) that a running standby query could still see:
    # replaying that cleanup cancels the query, and PostgreSQL may end its session a moment later.
    # Either way the call is `conflict`, answered at once: not run again until its timeout.
    executor = open_executor(replication.reader_dsn, sql_statement_timeout_ms=20_000)
    with psycopg.connect(replication.primary.admin_dsn, autocommit=True) as primary:
        primary.execute("CREATE TABLE public.mcp_conflict_scratch (n integer)")
    try:
        for _ in range(5):
            outcome: list[BaseException | object] = []

            def call(outcome: list[BaseException | object] = outcome) -> None:
                try:
                    outcome.append(run_unvetted(executor, LONG_QUERY, max_rows=1, ticket=CallTicket()))
                except Exception as exc:  # recorded for the assertion below
                    outcome.append(exc)

            worker = threading.Thread(target=call)
            worker.start()
            wait_running(replication.admin_dsn)
            started = time.monotonic()
            with psycopg.connect(replication.primary.admin_dsn, autocommit=True) as primary:
                primary.execute("INSERT INTO public.mcp_conflict_scratch SELECT generate_series(1, 1000)")
                primary.execute("DELETE FROM public.mcp_conflict_scratch")
                primary.execute("VACUUM public.mcp_conflict_scratch")
            worker.join(timeout=20)
            assert not worker.is_alive()
            (problem,) = outcome
            assert isinstance(problem, ConflictError), problem
            assert problem.metadata == {"sqlstate": "40001", "retryable": True}
            assert time.monotonic() - started < 10  # a run again would last its 20 s timeout
    finally:
        executor.close()
        with psycopg.connect(replication.primary.admin_dsn, autocommit=True) as primary:
            primary.execute("DROP TABLE public.mcp_conflict_scratch")
    assert "unreachable" not in caplog.text


def test_on_a_standby_the_audit_runs_every_interval_without_listen_and_the_tools_keep_serving(
    replication: Replication,
) -> None:
    # A standby cannot LISTEN (nor would it hear the primary's notifications): the audit's own
    # connection goes without, and re-audits keep completing, so the gate never shuts (issue 40).
    # Every 1.5 s, not 0.3 s: on a loaded machine an audit may outlast two short intervals, and the
    # gate then rightly answers role-unaudited, which is not what this test is about.
    interval_s = 1.5
    env = {
        "MCP_SQL_DSN": replication.reader_dsn,
        "MCP_METRICS_ENABLED": "false",
        "MCP_SQL_REAUDIT_INTERVAL_S": str(interval_s),
    }
    with ServerProcess(env=env) as server:
        server.initialize()
        deadline = time.monotonic() + 3 * interval_s  # three intervals: past the gate's two
        while time.monotonic() < deadline:
            result = server.call_tool("read_only_sql", {"sql": "SELECT count(*) FROM docs.pages"})
            assert result["structuredContent"]["rows"] == [[30]], result
            time.sleep(0.1)
        assert server.stop() == 0
    said = server.stderr_text()
    assert "the database is a standby: the role audit runs every interval, unnotified" in said
    assert "no role audit has completed" not in said
