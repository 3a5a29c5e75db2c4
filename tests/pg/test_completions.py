"""completion/complete through the real server and the official Python SDK's `complete()`, on the
demo cluster (and the 2026-07-28 resource-not-found `data.uri` on both transports): over stdio
the reader completes only the schemas and tables `sql_schema` lists to it
(never `docs.editors`); over HTTP with the identity map, two people mapped to two roles each
complete only the tables their role may read, and a token without the SQL scope completes no source
and is refused the names."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import PromptReference, ResourceTemplateReference

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.completion import SOURCE_TEMPLATE
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.client import REPO
from tests.support.http_server import HttpServer, open_http_server
from tests.support.identity import LOGIN_PASSWORD, PASSWORD_ENV, RED, login_dsn, people, sources_file
from tests.support.issuer import TestIssuer, open_issuer

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

ANN = {"sub": "ann", "groups": ["red"]}
BO = {"sub": "bo", "roles": ["blue"]}
PEOPLE_URI = "postgres://people/schema"


def _stdio(cluster: Cluster) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-X", "dev", "-m", "mcp_suite"],
        env={"MCP_SQL_DSN": cluster.reader_dsn, "MCP_METRICS_ENABLED": "false", "PYTHONPATH": "."},
        cwd=REPO,
    )


async def _values(client: Client, uri: str, name: str, value: str, **context: str) -> list[str]:
    result = await client.complete(
        ResourceTemplateReference(uri=uri), {"name": name, "value": value}, context or None
    )
    completion = result.completion
    assert completion.total == len(completion.values)
    assert completion.has_more is False
    return completion.values


async def _not_found_names_the_uri(client: Client) -> None:
    """2026-07-28 resources, "Error Handling": -32602 whose data names the URI not found."""
    with pytest.raises(MCPError) as missing:
        await client.read_resource("postgres://nope/schema")
    assert missing.value.code == -32602
    assert missing.value.data["uri"] == "postgres://nope/schema"


async def test_over_stdio_the_reader_completes_only_what_sql_schema_lists_to_it(
    demo_cluster: Cluster,
) -> None:
    with trio.fail_after(60):
        async with Client(_stdio(demo_cluster)) as client:
            assert client.server_capabilities is not None
            assert client.server_capabilities.completions is not None
            (resource,) = (await client.list_resources()).resources
            uri = str(resource.uri)
            assert await _values(client, uri, "schema", "") == ["docs", "reports"]
            assert await _values(client, uri, "schema", "RE") == ["reports"]
            assert await _values(client, uri, "table", "") == ["pages", "releases", "words_per_section"]
            # docs.editors exists, but the reader may not select from it: never completed.
            assert await _values(client, uri, "table", "ed") == []
            assert await _values(client, uri, "table", "", schema="docs") == ["pages"]
            assert await _values(client, uri, "table", "w", schema="reports") == ["words_per_section"]
            assert await _values(client, uri, "table", "", schema="pg_catalog") == []
            # The prefix is a bound value: quotes, LIKE wildcards and SQL in it match nothing.
            for prefix in ("%", "_", "p%", "' OR '1'='1", "x'); DROP TABLE docs.pages; --"):
                assert await _values(client, uri, "table", prefix) == []
            # MCP_SQL_DSN: the tools take no source, and the one schema resource is named by its
            # database: the template completes to nothing.
            assert await _values(client, SOURCE_TEMPLATE, "source", "") == []
            # A prompt is refused with a typed error, and the session goes on.
            with pytest.raises(MCPError) as refused:
                await client.complete(
                    PromptReference(name="code_review"), {"name": "language", "value": "py"}
                )
            assert refused.value.code == -32602
            assert "serves no prompts" in refused.value.data["detail"]
            assert await _values(client, uri, "schema", "do") == ["docs"]
            await _not_found_names_the_uri(client)


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with people(demo_cluster) as conn:
        # A table only red (ann's role) may read.
        conn.execute("CREATE TABLE mcp_people.red_only (note text)")
        conn.execute(f"GRANT SELECT ON mcp_people.red_only TO {RED}")
        yield conn


@contextlib.asynccontextmanager
async def _client(
    server: HttpServer, issuer: TestIssuer, claims: dict[str, Any], scope: str, mode: str = MODERN_VERSION
) -> AsyncIterator[Client]:
    token = issuer.token(server.url, scope=scope, **claims)
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(server.url, http_client=http), mode=mode) as client,
    ):
        yield client


async def test_over_http_each_person_completes_only_the_tables_their_role_may_read(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    env = {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}
    with open_http_server(issuer, env) as server, trio.fail_after(90):
        async with (
            _client(server, issuer, ANN, "sql:read") as ann,
            _client(server, issuer, BO, "sql:read:people") as bo,
            _client(server, issuer, {"sub": "cy", "groups": ["red"]}, "metrics:read") as cy,
            _client(server, issuer, {"sub": "dee", "roles": ["blue"]}, "sql:read", "legacy") as dee,
        ):
            # The legacy era (a 2025-11-25 session): the capability, and the names as blue reads them.
            assert dee.server_capabilities is not None
            assert dee.server_capabilities.completions is not None
            assert await _values(dee, PEOPLE_URI, "table", "") == ["notes"]
            assert await _values(ann, PEOPLE_URI, "table", "") == ["notes", "red_only"]
            assert await _values(ann, PEOPLE_URI, "table", "R", schema="mcp_people") == ["red_only"]
            assert await _values(bo, PEOPLE_URI, "table", "") == ["notes"]
            assert await _values(bo, PEOPLE_URI, "table", "red") == []
            assert await _values(ann, PEOPLE_URI, "schema", "") == ["mcp_people"]
            assert await _values(bo, SOURCE_TEMPLATE, "source", "") == ["people"]
            await _not_found_names_the_uri(bo)
            # A token without a SQL scope completes no source and may not complete the names.
            assert await _values(cy, SOURCE_TEMPLATE, "source", "") == []
            with pytest.raises(MCPError) as forbidden:
                await cy.complete(ResourceTemplateReference(uri=PEOPLE_URI), {"name": "table", "value": ""})
            assert "insufficient-scope" in str(forbidden.value.data)
