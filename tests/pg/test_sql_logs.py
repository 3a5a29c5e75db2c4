"""The server's stderr with the SQL tool: one JSON object per line, and an audit record per statement."""

from __future__ import annotations

import json

import pytest
from psycopg.conninfo import conninfo_to_dict

from mcp_suite.demo.cluster import Cluster
from tests.support.client import ServerProcess

pytestmark = pytest.mark.pg


def test_every_stderr_line_is_json_and_each_statement_is_audited(demo_cluster: Cluster) -> None:
    with ServerProcess(env={"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_LOG_LEVEL": "INFO"}) as server:
        server.initialize()
        ok = server.call_tool("read_only_sql", {"sql": "SELECT slug FROM docs.pages ORDER BY slug LIMIT 3"})
        refused = server.call_tool("read_only_sql", {"sql": "DELETE FROM docs.pages"})
        assert ok["isError"] is False
        assert refused["isError"] is True
        assert server.stop() == 0
    events = [json.loads(line) for line in server.stderr_text().splitlines()]  # each line one object
    statements = [e for e in events if e.get("event") == "statement"]
    assert [(e["sql"], e["rows"], e["outcome"]) for e in statements] == [
        ("SELECT slug FROM docs.pages ORDER BY slug LIMIT 3", 3, "ok"),
        ("DELETE FROM docs.pages", None, "query-violation"),
    ]
    assert all(e["duration_ms"] >= 0 and e["tool"] == "read_only_sql" for e in statements)
    password = str(conninfo_to_dict(demo_cluster.reader_dsn)["password"])
    assert password not in server.stderr_text()
