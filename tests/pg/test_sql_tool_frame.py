"""The untrusted-data frame through the whole server, against the real PostgreSQL (issue 44).

The superuser plants the injection texts of tests/support/injections.py in a table (as text, inside
jsonb and inside an array), in a DBA's comments on the table and a column, and in a view's filter
that explain_sql's plan shows. Each text comes back inside the frame of read_only_sql, sql_schema
and explain_sql, none forges it, the values come back as stored, and every invisible character in
them is counted in the answer's `invisible` member.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import psycopg
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import TextContent
from psycopg.types.json import Jsonb

from bench.bench_sql import ROWS, ROWS_QUERY
from bench.bench_tokens import frame_figures
from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.harness import open_session
from tests.support.http_server import open_http_server
from tests.support.injections import INJECTIONS, Injection, check_framed
from tests.support.issuer import open_issuer
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

SCHEMA = "mcp_inject"
# Texts a DBA's comment or a view's constant holds (no quote: they are written into DDL).
COMMENTED = tuple(i for i in INJECTIONS if i.hidden == 0 and "'" not in i.text)
FILTERED = tuple(i for i in INJECTIONS if "'" not in i.text and "\n" not in i.text)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@pytest.fixture(scope="module")
def planted(demo_cluster: Cluster) -> Iterator[None]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE".encode())
        admin.execute(f"CREATE SCHEMA {SCHEMA}".encode())
        admin.execute(
            f"CREATE TABLE {SCHEMA}.notes (id int PRIMARY KEY, body text, meta jsonb, tags text[])".encode()
        )
        for index, injection in enumerate(INJECTIONS):
            admin.execute(
                f"INSERT INTO {SCHEMA}.notes VALUES (%s, %s, %s, %s)".encode(),
                (index, injection.text, Jsonb({"said": injection.text}), [injection.text]),
            )
        comment = "\n".join(i.text for i in COMMENTED)
        admin.execute(f"COMMENT ON TABLE {SCHEMA}.notes IS {_literal(comment)}".encode())
        admin.execute(f"COMMENT ON COLUMN {SCHEMA}.notes.body IS {_literal(comment)}".encode())
        where = " AND ".join(f"body <> {_literal(i.text)}" for i in FILTERED)
        admin.execute(
            f"CREATE VIEW {SCHEMA}.filtered AS SELECT id, body FROM {SCHEMA}.notes WHERE {where}".encode()
        )
        admin.execute(f"GRANT USAGE ON SCHEMA {SCHEMA} TO {READER_USER}".encode())
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {SCHEMA} TO {READER_USER}".encode())
        try:
            yield
        finally:
            admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE".encode())


async def _calls(cluster: Cluster, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of `calls`, each checked against its tool's advertised outputSchema (the frame's
    member and the `invisible` report included), as the SDK clients check them."""
    settings = sql_settings(cluster.reader_dsn)
    results = []
    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            tools = (await h.request("tools/list"))["result"]["tools"]
            schemas = {tool["name"]: tool["outputSchema"] for tool in tools}
            for name, arguments in calls:
                response = await h.response(await h.call(name, arguments))
                result = response["result"]
                if not result["isError"]:
                    jsonschema.Draft202012Validator(schemas[name]).validate(result["structuredContent"])
                results.append(result)
    return results


def _expected_report(hidden: list[Injection]) -> str:
    """The `invisible` member read_only_sql must send for the planted rows: body, meta and tags
    (columns 1, 2, 3) each hold every planted text once."""
    characters = sum(i.hidden for i in hidden)
    rows = sum(1 for i in hidden if i.hidden)
    return "; ".join(
        f"{characters} invisible characters in {rows} rows of column {index} ({name})"
        for index, name in ((1, "body"), (2, "meta"), (3, "tags"))
    )


async def test_rows_come_back_inside_the_frame_as_stored_and_their_hidden_characters_are_counted(
    demo_cluster: Cluster, planted: None
) -> None:
    query = {"sql": f"SELECT id, body, meta, tags FROM {SCHEMA}.notes ORDER BY id", "max_rows": 100}
    first, second = await _calls(demo_cluster, ("read_only_sql", query), ("read_only_sql", query))
    boundary, body = check_framed(first, INJECTIONS)
    again, _ = check_framed(second, INJECTIONS)
    assert boundary != again  # fresh for every call
    assert body["rows"] == [[index, i.text, {"said": i.text}, [i.text]] for index, i in enumerate(INJECTIONS)]
    assert body["invisible"] == _expected_report(list(INJECTIONS))


async def test_rows_without_hidden_characters_carry_no_report(demo_cluster: Cluster, planted: None) -> None:
    plain = [index for index, i in enumerate(INJECTIONS) if not i.hidden]
    query = {"sql": f"SELECT body FROM {SCHEMA}.notes WHERE id IN ({','.join(map(str, plain))})"}
    (result,) = await _calls(demo_cluster, ("read_only_sql", query))
    _, body = check_framed(result, tuple(i for i in INJECTIONS if not i.hidden))
    assert "invisible" not in body


async def test_a_dba_comment_comes_back_inside_the_frame_of_sql_schema(
    demo_cluster: Cluster, planted: None
) -> None:
    (result,) = await _calls(demo_cluster, ("sql_schema", {"schema": SCHEMA}))
    _, body = check_framed(result, COMMENTED)
    (notes,) = [o for o in body["objects"] if o["name"] == "notes"]
    comment = "\n".join(i.text for i in COMMENTED)
    assert notes["comment"] == comment
    assert [c["comment"] for c in notes["columns"] if c["name"] == "body"] == [comment]


async def test_a_plan_showing_planted_constants_comes_back_inside_the_frame_its_hidden_ones_counted(
    demo_cluster: Cluster, planted: None
) -> None:
    (result,) = await _calls(demo_cluster, ("explain_sql", {"sql": f"SELECT id FROM {SCHEMA}.filtered"}))
    _, body = check_framed(result, FILTERED)
    hidden = [i.hidden for i in FILTERED if i.hidden]
    assert body["invisible"] == f"{sum(hidden)} invisible characters in 1 string of the plan"


async def test_the_frame_adds_at_most_three_percent_to_the_tokens_of_the_100_row_answer(
    demo_cluster: Cluster,
) -> None:
    """Issue 44's bound, on bench_tokens' workload (`bench_sql.ROWS_QUERY`), same tokenizer."""
    query = {"sql": ROWS_QUERY, "max_rows": ROWS}
    results = await _calls(demo_cluster, *[("read_only_sql", query)] * 5)
    for figure in frame_figures(results):
        assert figure.ok is not False, figure.line()
    before, framed, _ = frame_figures(results)
    assert framed.value > before.value  # the frame is there, and counted


@pytest.mark.e2e
async def test_over_http_the_sdk_client_accepts_the_frame_and_the_rows_come_inside_it(
    demo_cluster: Cluster, planted: None
) -> None:
    """The other transport, the modern era, the official SDK's client (it validates every
    structuredContent against the advertised outputSchema, `invisible` and `untrusted_data` included)."""
    query = {"sql": f"SELECT id, body, meta, tags FROM {SCHEMA}.notes ORDER BY id", "max_rows": 100}
    with (
        open_issuer() as issuer,
        open_http_server(issuer, {"MCP_SQL_DSN": demo_cluster.reader_dsn}) as server,
    ):
        token = issuer.token(server.url, sub="erin", scope="sql:read")
        with trio.fail_after(60):
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as client,
            ):
                answer = await client.call_tool("read_only_sql", query)
    assert answer.is_error is False
    (block,) = answer.content
    assert isinstance(block, TextContent)
    result = {"isError": False, "content": [{"type": "text", "text": block.text}]}
    _, body = check_framed({**result, "structuredContent": answer.structured_content}, INJECTIONS)
    assert body["invisible"] == _expected_report(list(INJECTIONS))
