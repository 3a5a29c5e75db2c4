"""The SQL tools through the official `mcp` SDK client (a real third-party client) and the demo
cluster: the SDK validates every `structuredContent` against the advertised `outputSchema`."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO
from tests.support.wire import without_frame

pytestmark = [pytest.mark.pg, pytest.mark.e2e]


def _parameters(cluster: Cluster) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-X", "dev", "-m", "mcp_suite"],
        env={"MCP_SQL_DSN": cluster.reader_dsn, "MCP_METRICS_ENABLED": "false", "PYTHONPATH": "."},
        cwd=REPO,
    )


def _problem(result: Any) -> dict[str, Any]:
    assert result.is_error is True
    assert result.structured_content is None
    document: dict[str, Any] = json.loads(result.content[0].text)
    return document


async def test_sdk_client_discovers_explains_and_queries(demo_cluster: Cluster) -> None:
    with trio.fail_after(60):
        async with Client(_parameters(demo_cluster)) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["sql_schema", "read_only_sql", "explain_sql"]
            for tool in listed.tools:
                assert tool.output_schema is not None
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is True

            schema = await client.call_tool("sql_schema", {"detail": "full"})
            assert schema.is_error is False
            assert schema.structured_content is not None
            objects = {f"{o['schema']}.{o['name']}": o for o in schema.structured_content["objects"]}
            assert list(objects) == ["docs.pages", "reports.releases", "reports.words_per_section"]
            assert [c["name"] for c in objects["reports.releases"]["columns"]] == [
                "version",
                "released_on",
                "page_slug",
            ]
            # Injection attempts through every string argument: data, never SQL.
            for arguments in (
                {"name_like": "%'; --"},
                {"name_like": "x' OR '1'='1"},
                {"schema": "docs' OR '1'='1"},
                {"schema": 'docs"; DROP TABLE docs.pages; --'},
                {"object": "docs.pages' OR '1'='1"},
                {"object": '"docs"."pages""; --"'},
            ):
                none = await client.call_tool("sql_schema", {"detail": "names", **arguments})
                assert none.structured_content is not None
                assert without_frame(none.structured_content) == {
                    "database": "mcp_demo",
                    "objects": [],
                    "truncated": False,
                    "next_cursor": None,
                }
            lone = _problem(await client.call_tool("sql_schema", {"name_like": "pages\\"}))
            assert lone["invalid_params"] == ["name_like"]
            one = await client.call_tool("sql_schema", {"object": '"reports".words_per_section'})
            assert one.structured_content is not None
            assert [o["kind"] for o in one.structured_content["objects"]] == ["view"]

            plan = await client.call_tool(
                "explain_sql", {"sql": "SELECT * FROM reports.words_per_section", "analyze": True}
            )
            assert plan.is_error is False
            assert plan.structured_content is not None
            assert plan.structured_content["actual_rows"] == 3

            rows = await client.call_tool("read_only_sql", {"sql": "SELECT version FROM reports.releases"})
            assert rows.structured_content is not None
            assert rows.structured_content["row_count"] == 3

            hidden = _problem(
                await client.call_tool("explain_sql", {"sql": "SELECT internal_note FROM reports.releases"})
            )
            assert hidden["type"] == "urn:mcp-suite:problem:access-denied"
            assert "sql_schema" in hidden["detail"]
            write = _problem(await client.call_tool("explain_sql", {"sql": "DELETE FROM docs.pages"}))
            assert write["type"] == "urn:mcp-suite:problem:query-violation"
