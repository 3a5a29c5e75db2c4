"""A curated tool bound to the caller's verified claims (issue 55), over HTTP with two people: the
parameter bound to `sub` is no argument (an argument of its name is refused), each person sees only
their own rows through the same tool (directly and through PgBouncer in transaction mode), and the
tool is listed only to a token holding its scope; the demo's claim-bound tool shows each editor their
own pages; a parameter bound to a group claim shows each caller their groups' rows only, and a token
whose group claim is missing, one string or empty is refused."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.http_server import HttpServer, open_http_server
from tests.support.identity import LOGIN, LOGIN_PASSWORD, PASSWORD_ENV, login_dsn, people, sources_file
from tests.support.issuer import TestIssuer, open_issuer

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

ANN = {"sub": "ann", "groups": ["red"]}
BO = {"sub": "bo", "roles": ["blue"]}
TOOL = "people_my_notes"

# The row-level security policy would hide the others' rows anyway: the statement's own filter
# reads the bound subject, and the tool returns it, so the test sees which value was bound.
MY_NOTES = """
[[sources.tools]]
name = "my_notes"
title = "My notes"
description = "The caller's own notes."
statement = "SELECT $1::text AS me, body FROM mcp_people.notes WHERE owner = $1 ORDER BY body"
scope = "notes:mine"

[[sources.tools.parameters]]
name = "me"
type = "text"
bind = "sub"
"""


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with people(demo_cluster) as conn:
        yield conn


@contextlib.asynccontextmanager
async def _client(
    server: HttpServer, issuer: TestIssuer, claims: dict[str, Any], scope: str
) -> AsyncIterator[Client]:
    token = issuer.token(server.url, scope=scope, **claims)
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as client,
    ):
        yield client


async def _rows(client: Client, arguments: dict[str, Any]) -> list[list[Any]]:
    result = await client.call_tool(TOOL, arguments)
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    rows: list[list[Any]] = result.structured_content["rows"]
    return rows


async def test_two_people_calling_one_claim_bound_tool_each_see_only_their_own_rows(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster), extra=MY_NOTES)
    env = {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}
    with open_http_server(issuer, env) as server, trio.fail_after(60):
        async with (
            _client(server, issuer, ANN, "sql:read notes:mine") as ann,
            _client(server, issuer, BO, "notes:mine") as bo,
            _client(server, issuer, {"sub": "cy", "groups": ["red"]}, "sql:read") as cy,
        ):
            assert await _rows(ann, {}) == [["ann", "ann: first"], ["ann", "ann: second"]]
            assert await _rows(bo, {}) == [["bo", "bo: only"]]
            # The bound parameter is no argument: naming it is refused before any database work.
            refused = await ann.call_tool(TOOL, {"me": "bo"})
            listed = {t.name: t for t in (await ann.list_tools()).tools}
            unlisted = {t.name for t in (await cy.list_tools()).tools}
            bo_listed = {t.name for t in (await bo.list_tools()).tools}
    assert refused.is_error is True
    problem = json.loads(refused.content[0].text)  # type: ignore[union-attr]  # a text block
    assert problem["type"] == "urn:mcp-suite:problem:validation-error"
    assert "me" in json.dumps(problem["invalid_params"])
    assert listed[TOOL].input_schema == {"type": "object", "properties": {}}
    assert TOOL not in unlisted  # a token without the tool's scope does not see it
    assert TOOL in bo_listed
    assert "read_only_sql" not in bo_listed


async def test_through_pgbouncer_in_transaction_mode_each_sees_only_their_rows_through_the_bound_tool(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # One backend for every caller: each call's role, claims and bound value end with its transaction.
    with open_pgbouncer(demo_cluster, {LOGIN: LOGIN_PASSWORD}, pool_size=1) as bouncer:
        parts = conninfo_to_dict(bouncer.dsn(LOGIN, LOGIN_PASSWORD, demo_cluster.dbname))
        parts.pop("password")
        extra = "pooler = 'transaction'\n" + MY_NOTES
        config = sources_file(tmp_path / "sources.toml", make_conninfo("", **parts), extra=extra)
        env = {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}
        with open_http_server(issuer, env) as server, trio.fail_after(60):
            async with (
                _client(server, issuer, ANN, "notes:mine") as ann,
                _client(server, issuer, BO, "notes:mine") as bo,
            ):
                for _ in range(3):  # interleaved on the one backend
                    assert await _rows(bo, {}) == [["bo", "bo: only"]]
                    assert await _rows(ann, {}) == [["ann", "ann: first"], ["ann", "ann: second"]]


async def test_the_demo_s_claim_bound_tool_shows_each_editor_their_own_pages(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster
) -> None:
    from mcp_suite.demo.sources_file import write_sources_file

    config = write_sources_file(demo_cluster, {}, directory=tmp_path)
    with open_http_server(issuer, {"MCP_CONFIG": str(config)}) as server, trio.fail_after(60):
        async with (
            _client(server, issuer, {"sub": "e-1"}, "sql:read:docs") as one,
            _client(server, issuer, {"sub": "e-2"}, "sql:read:docs") as two,
            _client(server, issuer, {"sub": "e-3"}, "sql:read:docs") as nobody,
        ):
            mine = {row[0] for row in await _pages(one)}
            theirs = {row[0] for row in await _pages(two)}
            none = await _pages(nobody)
    # Editor e-1 edits the even pages, e-2 the odd ones (the demo's seed).
    assert mine == {f"page-{n:02d}" for n in range(2, 31, 2)}
    assert theirs == {f"page-{n:02d}" for n in range(1, 30, 2)}
    assert none == []


async def _pages(client: Client) -> list[list[Any]]:
    result = await client.call_tool("docs_my_pages", {})
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    rows: list[list[Any]] = result.structured_content["rows"]
    return rows


# Each page's section stands for a team: the group claim lists the caller's teams.
TEAM_PAGES = """
[[sources.tools]]
name = "team_pages"
description = "How many pages each of the caller's teams has."
statement = '''SELECT section, count(*)::integer AS pages FROM docs.pages
  WHERE section = ANY($1) GROUP BY section ORDER BY section'''

[[sources.tools.parameters]]
name = "teams"
type = "text[]"
bind = "group:groups"
"""


async def test_a_group_bound_tool_shows_each_caller_their_groups_rows_and_refuses_a_token_without_groups(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster
) -> None:
    options = conninfo_to_dict(demo_cluster.reader_dsn)
    password = str(options.pop("password"))
    dsn = make_conninfo(**{k: str(v) for k, v in options.items()})
    config = tmp_path / "sources.toml"
    config.write_text(
        f'[[sources]]\nname = "docs"\ndescription = "The demo docs"\ndsn = "{dsn}"\n'
        f'password_env = "MCP_TEST_GROUP_PASSWORD"\n{TEAM_PAGES}'
    )
    env = {"MCP_CONFIG": str(config), "MCP_TEST_GROUP_PASSWORD": password}
    scope = "sql:read:docs"
    with open_http_server(issuer, env) as server, trio.fail_after(60):
        async with (
            _client(server, issuer, {"sub": "ann", "groups": ["guides"]}, scope) as ann,
            # A group whose name holds a quote and a comma is one element, never two.
            _client(server, issuer, {"sub": "bo", "groups": ["reference", 'x","changelog']}, scope) as bo,
            _client(server, issuer, {"sub": "cy"}, scope) as no_claim,
            _client(server, issuer, {"sub": "di", "groups": "guides"}, scope) as one_string,
            _client(server, issuer, {"sub": "ed", "groups": []}, scope) as no_group,
        ):
            anns = await ann.call_tool("docs_team_pages", {})
            bos = await bo.call_tool("docs_team_pages", {})
            forced = await ann.call_tool("docs_team_pages", {"teams": ["reference"]})
            refused = [await c.call_tool("docs_team_pages", {}) for c in (no_claim, one_string, no_group)]
            listed = {t.name: t for t in (await ann.list_tools()).tools}
    assert anns.structured_content is not None
    assert bos.structured_content is not None
    assert anns.structured_content["rows"] == [["guides", 10]]
    assert bos.structured_content["rows"] == [["reference", 10]]
    assert listed["docs_team_pages"].input_schema == {"type": "object", "properties": {}}
    assert forced.is_error is True
    assert json.loads(forced.content[0].text)["type"] == "urn:mcp-suite:problem:validation-error"  # type: ignore[union-attr]
    for result in refused:  # fail closed: never bound as NULL or as no group
        assert result.is_error is True
        problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # a text block
        assert problem["type"] == "urn:mcp-suite:problem:access-denied", problem
        assert "'groups'" in problem["detail"]
