"""Shared data and helpers of the PostgreSQL tests (fixtures stay in tests/pg/conftest.py).

Names of the objects `pg_helpers` makes, the settings and executor a test opens on the throwaway
cluster, the probe role's name and DSN, and the helpers that watch the server's sessions in
pg_stat_activity.
"""

from __future__ import annotations

from typing import Any

import psycopg
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.sql.engine.executor import Executor, ExplainMode, QueryResult
from mcp_suite.tools.sql.engine.policy import VettedQuery
from mcp_suite.tools.sql.engine.ticket import CallTicket

WRITE_FUNCTION = "public.mcp_test_write"
ENUM_TYPE = "public.mcp_test_mood"
DOMAIN_TYPE = "public.mcp_test_positive"

# A login role set up like mcp_reader; a test gives it exactly one capability more.
PROBE_ROLE = "mcp_audit_probe"
PROBE_PASSWORD = "probe-password-not-secret"

# A query that runs until it is cancelled: only the statement timeout (or a cancel) ends it, never
# the disk or the CPU. The set-returning function in the select list streams its rows into the
# count (in FROM, it would write them to a temporary file first, and meet temp_file_limit), and
# it has more rows than any machine counts in a century.
LONG_QUERY = "SELECT count(*) FROM (SELECT generate_series(1, 9223372036854775807) AS n) AS g"


def sql_settings(dsn: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "sql_dsn": SecretStr(dsn),
        "sql_pool_min_size": 1,
        "sql_pool_max_size": 2,
        "sql_connect_timeout_s": 2.0,
        "sql_pool_wait_s": 0.5,
        # What these tests were written for (the default is 5 s): a query that must reach a
        # PostgreSQL limit (temp_file_limit, say) on a loaded machine is not cut short by the timeout.
        "sql_statement_timeout_ms": 10_000,
        "metrics_enabled": False,
    }
    values.update(overrides)
    return Settings(**values)


def open_executor(dsn: str, **overrides: Any) -> Executor:
    executor = Executor(sql_settings(dsn, **overrides), dsn)
    executor.open()
    executor.mark_audited()  # these tests bypass the start-up audit on purpose
    return executor


def run_unvetted(
    executor: Executor, sql: str, *, max_rows: int, ticket: CallTicket, explain: ExplainMode | None = None
) -> QueryResult:
    """Run `sql` as it is, past the policy: the layer tests' way to show what the database and the
    executor do on their own. The executor takes only a `VettedQuery`, which the policy makes; this
    one is made here, on purpose, and names nothing for the run-time guards to check."""
    query = VettedQuery(sql=sql, limit=max_rows + 1)
    return executor.run_vetted(query, max_rows=max_rows, ticket=ticket, explain=explain)


def probe_dsn(cluster: Cluster) -> str:
    return cluster.dsn(PROBE_ROLE, PROBE_PASSWORD)


def backends(admin_dsn: str) -> list[tuple[int, str, str]]:
    """(pid, state, query) of the server's pooled sessions."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, state, query FROM pg_stat_activity WHERE application_name LIKE 'mcp-suite/%'"
        ).fetchall()
    return [(int(pid), str(state), str(query)) for pid, state, query in rows]


async def wait_until_running(admin_dsn: str, statement_prefix: str) -> int:
    """The pid of the pooled session once PostgreSQL is executing a statement with this prefix."""
    while True:
        for pid, state, query in await trio.to_thread.run_sync(backends, admin_dsn):
            if state == "active" and query.startswith(statement_prefix):
                return pid
        await trio.sleep(0.02)


async def wait_until_idle(admin_dsn: str, pid: int) -> None:
    while {b[0]: b[1] for b in await trio.to_thread.run_sync(backends, admin_dsn)}.get(pid) != "idle":
        await trio.sleep(0.02)
