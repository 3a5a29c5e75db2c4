"""`read_only_sql` through `mcp-suite serve-http` (loopback sockets, the real cluster): the invisible-
characters report counts what Unicode makes invisible (default-ignorable code points, the format
category), variation selectors ("emoji smuggling") and soft hyphens included, and the columns' names
too, which the answer shows escaped."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.http_server import open_http_server

pytestmark = [pytest.mark.pg, pytest.mark.e2e]


def sql_call(url: str, sql: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "read_only_sql",
            "arguments": {"sql": sql},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "read_only_sql",
    }
    answer = httpx2.post(url, json=body, headers=headers, timeout=60)
    assert answer.status_code == 200, answer.content
    result: dict[str, Any] = answer.json()["result"]
    return result


def test_variation_selectors_soft_hyphens_and_a_column_s_name_are_counted_and_the_name_escaped(
    demo_cluster: Cluster,
) -> None:
    # chr(65039): VARIATION SELECTOR-16; chr(917760): VARIATION SELECTOR-17; chr(173): SOFT HYPHEN.
    sql = (
        "SELECT 'ok' || chr(65039) || chr(917760) AS smuggled, 'pass' || chr(173) || 'word' AS hyphen,"
        ' 1 AS "n\u200bame"'
    )
    with open_http_server(None, {"MCP_SQL_DSN": demo_cluster.reader_dsn}) as server:
        result = sql_call(server.url, sql)
    content = result["structuredContent"]
    assert result["isError"] is False, result
    # Values are returned as stored; names are shown escaped.
    assert content["rows"] == [["ok\ufe0f\U000e0100", "pass\u00adword", 1]]
    assert [c["name"] for c in content["columns"]] == ["smuggled", "hyphen", "n[U+200B]ame"]
    assert content["invisible"] == (
        "2 invisible characters in 1 row of column 0 (smuggled); "
        "1 invisible character in 1 row of column 1 (hyphen); "
        "1 invisible character in the name of column 2 (n[U+200B]ame)"
    )
