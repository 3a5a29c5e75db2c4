"""Shared pieces of the deployment tests (PgBouncer, TLS, a hot standby): DSN surgery and the
queries a DBA runs, used by several test files. No fixtures here; each test file starts what it needs
through the project's harness (`mcp_suite.demo`, tests/support/devdb)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.client import REPO, server_env

__all__ = ["check_role", "our_backends", "password_of", "query_once", "with_params"]


def password_of(dsn: str) -> str:
    return str(conninfo_to_dict(dsn)["password"])


def with_params(dsn: str, **params: Any) -> str:
    return make_conninfo(dsn, **params)


def our_backends(admin_dsn: str) -> list[tuple[int, str]]:
    """(pid, state) of every backend carrying the server's application_name (the DBA's query)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, state FROM pg_stat_activity WHERE application_name = %s", (APPLICATION_NAME,)
        ).fetchall()
    return [(int(pid), str(state)) for pid, state in rows]


def query_once(dsn: str, sql: str) -> list[list[Any]]:
    """The rows of one `read_only_sql` query through a fresh executor on `dsn` (closed after)."""
    from tests.support.pg import open_executor, run_unvetted

    executor = open_executor(dsn)
    try:
        return run_unvetted(executor, sql, max_rows=10, ticket=CallTicket()).rows
    finally:
        executor.close()


def check_role(dsn: str, *, pooler: str = "none") -> subprocess.CompletedProcess[str]:
    """`mcp-suite check-role` against `dsn` (with `MCP_SQL_POOLER=pooler`), as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_suite", "check-role"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=server_env({"MCP_SQL_DSN": dsn, "MCP_SQL_POOLER": pooler, "MCP_METRICS_ENABLED": "false"}),
        cwd=REPO,
    )
