"""An idle server holds no pooled backend past MCP_SQL_POOL_MAX_IDLE_S (docs/configuration.md).

The real server, with the default minimum pool size (0) and a short idle time, answers two SQL
calls at once (two pooled connections), then is left idle: PostgreSQL shows the server's backends
right after the calls, and none once the idle time has passed. The DSN names the session
(`application_name`), so only this server's backends are counted. The one backend it keeps is the
role audit's own connection (issue 40), named after the session with " role audit" after it.
"""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.role_audit.link import audit_application_name
from tests.support.client import ServerProcess

pytestmark = pytest.mark.pg

MAX_IDLE_S = 2.0
# Slow enough that the two calls overlap, so the pool opens a second connection.
SLOW = {"sql": "SELECT count(*) AS n FROM generate_series(1, 2000000)"}


def _backends(cluster: Cluster, application_name: str) -> int:
    with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application_name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_idle_server_holds_no_backend_past_the_idle_time(demo_cluster: Cluster) -> None:
    name = f"mcp-idle-{uuid.uuid4().hex[:12]}"
    env = {
        "MCP_SQL_DSN": make_conninfo(demo_cluster.reader_dsn, application_name=name),
        "MCP_SQL_POOL_MAX_SIZE": "2",
        "MCP_SQL_POOL_MAX_IDLE_S": str(MAX_IDLE_S),
        "MCP_METRICS_ENABLED": "false",
    }
    with ServerProcess(env=env) as server:
        server.initialize()
        first = server.send_request("tools/call", {"name": "read_only_sql", "arguments": SLOW})
        second = server.send_request("tools/call", {"name": "read_only_sql", "arguments": SLOW})
        for request_id in (first, second):
            assert server.response(request_id, timeout=30)["result"]["isError"] is False
        last_call_ended = time.monotonic()
        held = _backends(demo_cluster, name)
        assert held >= 1  # the pool holds what the calls used (or this test shows nothing)

        # Poll a little past the idle time (slack for a loaded machine), then the count must be 0.
        deadline = last_call_ended + MAX_IDLE_S + 1.5
        while _backends(demo_cluster, name) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _backends(demo_cluster, name) == 0, f"{held} backends after the calls"
        assert _backends(demo_cluster, audit_application_name(env["MCP_SQL_DSN"])) == 1  # kept
        # Still serving: the next call opens a connection again.
        assert server.call_tool("read_only_sql", {"sql": "SELECT 1 AS one"})["structuredContent"]["rows"] == [
            [1]
        ]
