"""Curated tools (issue 55) through the real server over stdio, on the demo cluster: a declared,
typed, parameterized statement served as an MCP tool whose arguments are validated before any
database work, whose values reach PostgreSQL as bound parameters (the server log shows them as
parameters, never in the text), and which a curated-only source serves while free SQL refuses it;
a statement that writes, calls a refused function or reaches a SECURITY DEFINER function stops the
server at start-up naming the tool (exit 78)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.settings import Settings
from tests.support.client import ServerProcess
from tests.support.harness import Harness, open_session

pytestmark = pytest.mark.pg

PASSWORD_ENV = "MCP_TEST_CURATED_PASSWORD"
DEFINER = "docs.mcp_curated_definer"

PAGES_TOOL = """
[[sources.tools]]
name = "pages_by_section"
title = "Pages of a section"
description = "The pages of one section with at least some words, longest first."
statement = "SELECT slug, words FROM docs.pages WHERE section = $1 AND words >= $2 ORDER BY words DESC, slug"
max_rows = 5

[[sources.tools.parameters]]
name = "section"
type = "text"
description = "The section"
enum = ["guides", "reference", "changelog"]

[[sources.tools.parameters]]
name = "min_words"
type = "integer"
minimum = 0
maximum = 100000
default = 0
required = false

[[sources.tools]]
name = "page"
description = "One page by its slug."
statement = "SELECT slug, section FROM docs.pages WHERE slug = $1"

[[sources.tools.parameters]]
name = "slug"
type = "text"
max_length = 60
"""


def _source(cluster: Cluster, extra: str = "", tools: str = PAGES_TOOL) -> str:
    options = conninfo_to_dict(cluster.reader_dsn)
    os.environ[PASSWORD_ENV] = str(options.pop("password"))
    dsn = make_conninfo(**{k: str(v) for k, v in options.items()})
    return (
        f'[[sources]]\nname = "docs"\ndescription = "The demo docs"\ndsn = "{dsn}"\n'
        f'password_env = "{PASSWORD_ENV}"\n{extra}\n{tools}'
    )


def _settings(path: Path) -> Settings:
    return Settings(config_file=path, sql_pool_max_size=2, sql_connect_timeout_s=2.0, metrics_enabled=False)


async def _call(h: Harness, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = await h.response(await h.call(tool, arguments))
    result: dict[str, Any] = answer["result"]
    return result


def _problem(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    problem: dict[str, Any] = json.loads(result["content"][0]["text"])
    return problem


async def test_a_curated_tool_is_listed_with_its_declared_schema_and_answers_with_bound_values(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster))
    with trio.fail_after(60):
        async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
            await h.initialize()
            tools = {t["name"]: t for t in (await h.request("tools/list"))["result"]["tools"]}
            answer = await _call(h, "docs_pages_by_section", {"section": "guides", "min_words": 800})
            default = await _call(h, "docs_pages_by_section", {"section": "changelog"})
            # An injection attempt is one value of the text parameter: no page has that slug.
            injected = await _call(h, "docs_page", {"slug": "x' OR '1'='1"})
    tool = tools["docs_pages_by_section"]
    assert tool["inputSchema"] == {
        "type": "object",
        "properties": {
            "section": {"description": "The section", "enum": ["guides", "reference", "changelog"]},
            "min_words": {"type": "integer", "minimum": 0, "maximum": 100000, "default": 0},
        },
        "required": ["section"],
    }
    assert tool["annotations"]["readOnlyHint"] is True
    assert tools["docs_page"]["inputSchema"]["properties"]["slug"]["maxLength"] == 60
    rows = answer["structuredContent"]["rows"]
    # guides: n % 3 == 0 (n = 3, 6, ..., 30), words 200 + 25 n >= 800 for n >= 24: 30, 27, 24.
    assert rows == [["page-30", 950], ["page-27", 875], ["page-24", 800]]
    assert answer["structuredContent"]["truncated"] is False
    # changelog: n % 3 == 2, ten pages: cut at the tool's own max_rows with truncated.
    assert len(default["structuredContent"]["rows"]) == 5
    assert default["structuredContent"]["truncated"] is True
    assert injected["structuredContent"]["rows"] == []


async def test_a_curated_tools_output_schema_names_its_columns_with_their_types_and_its_answers_fit_it(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    from jsonschema import Draft7Validator, Draft202012Validator

    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster))
    with trio.fail_after(60):
        async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
            await h.initialize()
            tools = {t["name"]: t for t in (await h.request("tools/list"))["result"]["tools"]}
            pages = await _call(h, "docs_pages_by_section", {"section": "guides", "min_words": 800})
            page = await _call(h, "docs_page", {"slug": "page-01"})
    schema = tools["docs_pages_by_section"]["outputSchema"]
    columns = schema["properties"]["columns"]["prefixItems"]
    assert [(c["properties"]["name"]["const"], c["properties"]["type"]["const"]) for c in columns] == [
        ("slug", "text"),
        ("words", "integer"),
    ]
    row = schema["properties"]["rows"]["items"]["prefixItems"]
    assert [(v["title"], v["type"]) for v in row] == [
        ("slug", ["string", "null"]),
        ("words", ["integer", "null"]),
    ]
    # The envelope of read_only_sql's result, its frame's member declared.
    assert {"columns", "rows", "row_count", "truncated", "untrusted_data"} <= set(schema["properties"])
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(pages["structuredContent"])
    Draft202012Validator(tools["docs_page"]["outputSchema"]).validate(page["structuredContent"])
    # The schema is the tool's own: another tool's answer (other columns) does not fit it.
    assert not Draft202012Validator(schema).is_valid(page["structuredContent"])
    # A client that reads an older draft (no `prefixItems`) still accepts the tool's answers.
    Draft7Validator(schema).validate(pages["structuredContent"])


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"section": "drafts"}, "section"),  # not an allowed value
        ({"section": "guides", "min_words": "800"}, "min_words"),  # wrong type
        ({"section": "guides", "min_words": -1}, "min_words"),  # out of range
        ({"section": "guides", "min_words": 2**40}, "min_words"),  # past integer's range too
        ({}, "section"),  # required
        ({"section": "guides", "sql": "SELECT 1"}, "sql"),  # no such argument
    ],
)
async def test_typed_parameters_are_validated_before_any_database_work(
    demo_cluster: Cluster, tmp_path: Path, arguments: dict[str, Any], named: str
) -> None:
    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster))
    with trio.fail_after(60):
        async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
            await h.initialize()
            problem = _problem(await _call(h, "docs_pages_by_section", arguments))
    assert problem["type"] == "urn:mcp-suite:problem:validation-error", problem
    assert named in json.dumps(problem["invalid_params"]), problem


async def test_a_curated_only_source_refuses_free_sql_and_serves_its_tools(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster, extra="free_sql = false"))
    with trio.fail_after(60):
        async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
            await h.initialize()
            free = await _call(h, "read_only_sql", {"sql": "SELECT 1", "source": "docs"})
            plan = await _call(h, "explain_sql", {"sql": "SELECT 1", "source": "docs"})
            curated = await _call(h, "docs_page", {"slug": "page-01"})
    for refused in (free, plan):
        problem = _problem(refused)
        assert problem["type"] == "urn:mcp-suite:problem:query-violation"
        assert problem["metadata"]["rule"] == "curated-only"
    assert curated["structuredContent"]["rows"] == [["page-01", "reference"]]


@pytest.mark.parametrize("schema", [True, False])
async def test_a_curated_only_source_describes_its_schema_unless_told_not_to(
    demo_cluster: Cluster, tmp_path: Path, schema: bool
) -> None:
    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster, extra=f"free_sql = false\nschema = {str(schema).lower()}"))
    with trio.fail_after(60):
        async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
            await h.initialize()
            described = await _call(h, "sql_schema", {"source": "docs", "detail": "names"})
            listed = await h.request("resources/list")
    if schema:
        assert described["isError"] is False
        assert [r["uri"] for r in listed["result"]["resources"]] == ["postgres://docs/schema"]
    else:
        assert _problem(described)["metadata"]["rule"] == "curated-only"
        # No resource at all: the server offers no resources (a JSON-RPC error), or an empty list.
        assert "error" in listed or listed["result"]["resources"] == [], listed


def _serve(config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_CONFIG": str(config), "MCP_SQL_CONNECT_TIMEOUT_S": "2"}
    return subprocess.run(  # our own server, no shell
        [sys.executable, "-m", "mcp_suite"],
        input="",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("statement", "why"),
    [
        ("WITH gone AS (DELETE FROM docs.pages WHERE slug = $1 RETURNING slug) SELECT * FROM gone", "DELETE"),
        ("SELECT pg_catalog.pg_read_file($1)", "pg_read_file"),
        (f"SELECT {DEFINER}($1)", "SECURITY DEFINER"),
        ("SELECT slug FROM docs.pages WHERE words = $1", "PostgreSQL reads its parameters as (integer)"),
    ],
)
def test_a_statement_the_audit_refuses_stops_the_server_at_start_up_naming_the_tool(
    demo_cluster: Cluster, tmp_path: Path, statement: str, why: str
) -> None:
    tool = (
        '[[sources.tools]]\nname = "risky"\ndescription = "A risky question."\n'
        f"statement = {json.dumps(statement)}\n"
        '[[sources.tools.parameters]]\nname = "value"\ntype = "text"\n'
    )
    config = tmp_path / "sources.toml"
    # The operator accepted the definer function for free SQL (the role audit passes): a curated
    # statement is held to more, and may reach none.
    accepted = f'accept_definer_functions = ["{DEFINER}"]'
    config.write_text(_source(demo_cluster, extra=accepted, tools=tool))
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(
            f"CREATE OR REPLACE FUNCTION {DEFINER}(text) RETURNS int LANGUAGE sql SECURITY DEFINER "
            f"AS 'SELECT 1'; GRANT EXECUTE ON FUNCTION {DEFINER}(text) TO PUBLIC".encode()
        )
    try:
        done = _serve(config)
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP FUNCTION IF EXISTS {DEFINER}(text)".encode())
    assert done.returncode == 78, done.stderr[-2000:]
    assert "docs_risky" in done.stderr, done.stderr[-2000:]
    assert why in done.stderr, done.stderr[-2000:]


async def test_values_reach_postgresql_as_bound_parameters_never_in_the_text(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster))
    reader = conninfo_to_dict(demo_cluster.reader_dsn)["user"]
    marker = "x' OR slug LIKE '%page%' --"
    log = demo_cluster.base / "postgres.log"
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"ALTER ROLE \"{reader}\" SET log_statement = 'all'".encode())
    try:
        start = log.stat().st_size
        with trio.fail_after(60):
            async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
                await h.initialize()
                answer = await _call(h, "docs_page", {"slug": marker})
                typed = await _call(h, "docs_pages_by_section", {"section": "guides", "min_words": 940})
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
            admin.execute(f'ALTER ROLE "{reader}" RESET log_statement'.encode())
    assert answer["structuredContent"]["rows"] == []
    written = log.read_bytes()[start:].decode(errors="replace")
    entries = re.split(r"\n(?=\d{4}-\d{2}-\d{2} )", written)
    declare = [e for e in entries if "DECLARE" in e and "docs.pages WHERE slug" in e]
    assert declare, entries[-20:]
    assert all("slug = $1" in e and marker not in e.split("DETAIL:")[0] for e in declare), declare
    # PostgreSQL's own log names the value as parameter $1 of the statement, quoted as a value.
    assert "$1 = 'x'' OR slug LIKE ''%page%'' --'" in written, written[-3000:]
    # An integer and an allowed value: parameters too, typed by the declaration, never in the text.
    assert typed["structuredContent"]["rows"] == [["page-30", 950]]
    assert "$1 = 'guides', $2 = '940'" in written, written[-3000:]
    assert not [e for e in entries if "DECLARE" in e and "940" in e.split("DETAIL:")[0]]


FUNCTION = "docs.mcp_curated_twice"
TWICE_TOOL = """
[[sources.tools]]
name = "twice"
description = "A number, twice."
statement = "SELECT docs.mcp_curated_twice($1) AS n"

[[sources.tools.parameters]]
name = "n"
type = "integer"
"""


async def _until_error(h: Harness, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    while True:
        result = await _call(h, tool, arguments)
        if result["isError"]:
            return result
        await trio.sleep(0.2)


async def test_a_function_turned_security_definer_after_start_up_stops_its_tool_alone_until_it_is_fixed(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    # Accepted for free SQL by the operator (so the role audit passes it), never for a curated tool.
    extra = f'accept_definer_functions = ["{FUNCTION}"]\nreaudit_interval_s = 0.5'
    config = tmp_path / "sources.toml"
    config.write_text(_source(demo_cluster, extra=extra, tools=PAGES_TOOL + TWICE_TOOL))
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(
            f"CREATE OR REPLACE FUNCTION {FUNCTION}(int) RETURNS int LANGUAGE sql "
            f"AS 'SELECT $1 * 2'; GRANT EXECUTE ON FUNCTION {FUNCTION}(int) TO PUBLIC".encode()
        )
    try:
        with trio.fail_after(60):
            async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
                await h.initialize()
                before = await _call(h, "docs_twice", {"n": 21})
                with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
                    admin.execute(f"ALTER FUNCTION {FUNCTION}(int) SECURITY DEFINER".encode())
                stopped = await _until_error(h, "docs_twice", {"n": 21})
                free = await _call(h, "read_only_sql", {"sql": "SELECT 1 AS one", "source": "docs"})
                other = await _call(h, "docs_page", {"slug": "page-01"})
                with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
                    admin.execute(f"ALTER FUNCTION {FUNCTION}(int) SECURITY INVOKER".encode())
                while (again := await _call(h, "docs_twice", {"n": 4}))["isError"]:
                    await trio.sleep(0.2)  # until the next re-audit refreshes the tool's guard
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}(int)".encode())
    assert before["structuredContent"]["rows"] == [[42]]
    problem = _problem(stopped)
    assert problem["type"] == "urn:mcp-suite:problem:role-refused", problem
    assert problem["metadata"]["tool"] == "docs_twice"
    assert "docs_twice" in problem["detail"]
    assert "SECURITY DEFINER" in problem["detail"]
    assert free["isError"] is False
    assert free["structuredContent"]["rows"] == [[1]]
    assert other["isError"] is False
    assert other["structuredContent"]["rows"] == [["page-01", "reference"]]
    assert again["structuredContent"]["rows"] == [[8]]  # fixed: it serves again


def test_the_demo_serves_its_curated_tool_over_stdio_and_not_the_one_bound_to_a_caller(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    from mcp_suite.demo.sources_file import write_sources_file

    config = write_sources_file(demo_cluster, {}, directory=tmp_path)
    with ServerProcess(env={"MCP_CONFIG": str(config)}) as server:
        server.initialize()
        tools = {t["name"] for t in server.request("tools/list")["result"]["tools"]}
        billing = server.call_tool("ops_incidents_of_service", {"service": "billing"})
        stderr = "\n".join(server.stderr_lines)
    assert "ops_incidents_of_service" in tools
    assert "docs_my_pages" not in tools  # bound to a verified caller: HTTP only
    assert "docs_my_pages is not offered over stdio" in stderr
    assert [row[0] for row in billing["structuredContent"]["rows"]] == ["INC-105", "INC-101"]
