"""An identity-changing helper given to one mapped role (issue 51), through `mcp-suite serve-http`, the
official SDK's client and tokens from a test issuer, directly and through PgBouncer in transaction
mode: a SECURITY INVOKER function that rewrites `request.jwt.claims` (with `set_config`), or one
declared `SET role = <the other mapped role>`, lets one person read another's rows. Granted to the
blue role while the server serves, the next re-audit refuses blue (`role-refused`, naming the
function) while red serves on. Before issue 51 every re-audit passed."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Final

import psycopg
import pytest
import trio
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.http_server import HttpServer, open_http_server
from tests.support.identity import (
    BLUE,
    LOGIN,
    LOGIN_PASSWORD,
    NOTES_SQL,
    PASSWORD_ENV,
    RED,
    login_dsn,
    people,
    sources_file,
)
from tests.support.issuer import TestIssuer, open_issuer

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

ANN = {"sub": "ann", "groups": ["red"], "team": "north"}
BO = {"sub": "bo", "roles": ["blue"]}
SCHEMA_URI: Final = "postgres://people/schema"
INTERVAL_S: Final = 1.5  # as test_http_identity's: a loaded machine's audit may outlast 0.3 s
# (name, the superuser's statements, the function the refusal names, the finding's kind)
HELPERS: Final = (
    (
        "claims-rewriter",
        "CREATE FUNCTION mcp_people.as_ann() RETURNS text LANGUAGE sql"
        " AS $$ SELECT pg_catalog.set_config('request.jwt.claims', '{\"sub\": \"ann\"}', true) $$",
        "mcp_people.as_ann()",
        "function-body",
    ),
    (
        "set-role",
        "SET check_function_bodies = off;"
        f" CREATE FUNCTION mcp_people.as_red() RETURNS text LANGUAGE sql SET role = {RED}"
        " AS $$ SELECT current_user::text $$",
        "mcp_people.as_red()",
        "function-config",
    ),
)


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with people(demo_cluster) as conn:
        yield conn


@contextlib.asynccontextmanager
async def _client(server: HttpServer, issuer: TestIssuer, claims: dict[str, Any]) -> AsyncIterator[Client]:
    token = issuer.token(server.url, scope="sql:read", **claims)
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as client,
    ):
        yield client


@contextlib.contextmanager
def _dsn(cluster: Cluster, via: str) -> Iterator[tuple[str, str]]:
    """The login role's DSN, straight or through PgBouncer in transaction mode, and the source's extra."""
    extra = f"reaudit_interval_s = {INTERVAL_S}"
    if via == "direct":
        yield login_dsn(cluster), extra
        return
    with open_pgbouncer(cluster, {LOGIN: LOGIN_PASSWORD}, pool_size=1) as bouncer:
        parts = conninfo_to_dict(bouncer.dsn(LOGIN, LOGIN_PASSWORD, cluster.dbname))
        parts.pop("password")
        yield make_conninfo("", **parts), f"{extra}\npooler = 'transaction'"


@pytest.mark.parametrize("via", ["direct", "pgbouncer-transaction"])
@pytest.mark.parametrize(("make", "named", "kind"), [h[1:] for h in HELPERS], ids=[h[0] for h in HELPERS])
async def test_a_mapped_role_given_an_identity_changing_helper_is_refused_while_the_other_serves(
    tmp_path: Path,
    issuer: TestIssuer,
    demo_cluster: Cluster,
    admin: psycopg.Connection[Any],
    via: str,
    make: str,
    named: str,
    kind: str,
) -> None:
    with _dsn(demo_cluster, via) as (dsn, extra):
        config = sources_file(tmp_path / "sources.toml", dsn, extra=extra)
        env = {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}
        with open_http_server(issuer, env) as server, trio.fail_after(90):
            async with _client(server, issuer, ANN) as ann, _client(server, issuer, BO) as bo:
                first = await bo.call_tool("read_only_sql", {"sql": NOTES_SQL})
                assert first.is_error is False, first.content
                admin.execute(make.encode())
                admin.execute("RESET check_function_bodies")
                admin.execute(f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA mcp_people TO {BLUE}".encode())
                while (result := await bo.call_tool("read_only_sql", {"sql": NOTES_SQL})).is_error is False:
                    await trio.sleep(INTERVAL_S / 3)
                problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # a text block
                assert problem["type"] == "urn:mcp-suite:problem:role-refused", problem
                assert BLUE in problem["detail"], problem["detail"]
                assert named in problem["detail"], problem["detail"]
                assert problem["metadata"]["findings"] == [kind], problem
                served = await ann.call_tool("read_only_sql", {"sql": NOTES_SQL})
                assert served.is_error is False, served.content  # red serves on
                assert served.structured_content is not None
                assert len(served.structured_content["rows"]) == 2


async def _read_schema(client: Client, uri: str) -> Any:
    """The schema resource's answer: its JSON, or the JSON-RPC error the SDK raised."""
    try:
        result = await client.read_resource(uri)
    except MCPError as error:
        return error.error
    return json.loads(result.contents[0].text)  # type: ignore[union-attr]  # a text resource


async def test_the_schema_resource_refuses_an_unmapped_or_unscoped_caller_with_the_tools_problem(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # A resource read has no in-band result (no isError): the same problem document travels as a
    # JSON-RPC error whose code says the caller's, not -32603 (the server failed).
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    env = {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}
    with open_http_server(issuer, env) as server, trio.fail_after(60):
        async with _client(server, issuer, {"sub": "carl", "groups": ["green"]}) as carl:
            tool = await carl.call_tool("sql_schema", {})
            assert tool.is_error is True
            in_band = json.loads(tool.content[0].text)  # type: ignore[union-attr]  # a text block
            error = await _read_schema(carl, SCHEMA_URI)
            assert error.code == -32600, error
            assert error.data["type"] == in_band["type"] == "urn:mcp-suite:problem:access-denied"
            assert error.data["metadata"]["mapping"] == "missing"
        token = issuer.token(server.url, scope="fs:read", sub="dan", groups=["red"])
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as dan,
        ):
            error = await _read_schema(dan, SCHEMA_URI)
            with pytest.raises(MCPError) as raised:
                await dan.call_tool("sql_schema", {})
            refused = raised.value.error
            assert (error.code, error.data["type"]) == (refused.code, refused.data["type"])
            assert error.data["type"] == "urn:mcp-suite:problem:insufficient-scope"


async def test_estimated_rows_is_not_told_of_a_table_row_level_security_filters(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # notes holds three rows; ann may see two. Its reltuples would tell her how many she cannot see.
    admin.execute("ANALYZE mcp_people.notes")
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    env = {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}
    with open_http_server(issuer, env) as server, trio.fail_after(60):
        async with _client(server, issuer, ANN) as ann:
            listed = await ann.call_tool("sql_schema", {})
            assert listed.structured_content is not None
            (notes,) = listed.structured_content["objects"]
            assert (notes["name"], notes["estimated_rows"]) == ("notes", None)
            page = await _read_schema(ann, SCHEMA_URI)
            assert [(o["name"], o["estimated_rows"]) for o in page["objects"]] == [("notes", None)]
