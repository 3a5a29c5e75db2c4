"""Each person reads as themselves (issue 42), through `mcp-suite serve-http` and the official SDK's
client with tokens from a test issuer: the identity map switches each call's transaction to the
caller's role and tells it the caller's claims, so a row-level security policy on the subject shows
each person their own rows, directly and through PgBouncer in transaction mode; a caller no rule
maps is refused; PostgreSQL's `pg_stat_activity` names the caller; a mapped role that gains a
SECURITY DEFINER function is refused at the next re-audit while the other serves; and the statement
audit record names the subject and the role."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
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
from mcp_suite.demo.seed import ADMIN_USER
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.http_server import HttpServer, open_http_server
from tests.support.identity import (
    BLUE,
    DEFINER,
    LOGIN,
    LOGIN_PASSWORD,
    NOTES_SQL,
    OTHER,
    PASSWORD_ENV,
    RED,
    login_dsn,
    people,
    sources_file,
)
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.pg import LONG_QUERY

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

ANN = {"sub": "ann", "groups": ["red"], "team": "north"}
BO = {"sub": "bo", "roles": ["blue"]}


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with people(demo_cluster) as conn:
        yield conn


def _env(config: Path) -> dict[str, str]:
    return {"MCP_CONFIG": str(config), PASSWORD_ENV: LOGIN_PASSWORD}


@contextlib.asynccontextmanager
async def _client(server: HttpServer, issuer: TestIssuer, claims: dict[str, Any]) -> AsyncIterator[Client]:
    token = issuer.token(server.url, scope="sql:read", **claims)
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(server.url, http_client=http), mode=MODERN_VERSION) as client,
    ):
        yield client


async def _rows(client: Client, sql: str) -> list[list[Any]]:
    result = await client.call_tool("read_only_sql", {"sql": sql})
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    rows: list[list[Any]] = result.structured_content["rows"]
    return rows


async def _problem(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is True, result.structured_content
    document: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]  # a text block
    return document


async def _each_sees_their_own(server: HttpServer, issuer: TestIssuer) -> None:
    async with _client(server, issuer, ANN) as ann, _client(server, issuer, BO) as bo:
        assert await _rows(ann, NOTES_SQL) == [["ann", "ann: first"], ["ann", "ann: second"]]
        assert await _rows(bo, NOTES_SQL) == [["bo", "bo: only"]]
        assert await _rows(ann, "SELECT current_user, session_user") == [[RED, LOGIN]]
        assert await _rows(bo, "SELECT current_user") == [[BLUE]]
        # sql_schema shows what the mapped role may read; the login role itself reads nothing.
        listed = await ann.call_tool("sql_schema", {})
        assert listed.structured_content is not None
        assert [o["name"] for o in listed.structured_content["objects"]] == ["notes"]


async def test_two_people_mapped_to_two_roles_each_see_only_their_rows(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    with open_http_server(issuer, _env(config)) as server:
        with trio.fail_after(60):
            await _each_sees_their_own(server, issuer)
        server.audit(6)  # the requests' records: the statements' were written before them
        statements = [r for r in server.records() if r.get("event") == "statement"]
        assert {(r["sub"], r["role"]) for r in statements} == {("ann", RED), ("bo", BLUE)}


async def test_through_pgbouncer_in_transaction_mode_each_sees_only_their_rows(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # One backend for every caller: the role, the claims and the name must end with each call.
    with open_pgbouncer(demo_cluster, {LOGIN: LOGIN_PASSWORD}, pool_size=1) as bouncer:
        parts = conninfo_to_dict(bouncer.dsn(LOGIN, LOGIN_PASSWORD, demo_cluster.dbname))
        parts.pop("password")
        dsn = make_conninfo("", **parts)
        config = sources_file(tmp_path / "sources.toml", dsn, extra="pooler = 'transaction'")
        with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
            await _each_sees_their_own(server, issuer)
            async with _client(server, issuer, ANN) as ann, _client(server, issuer, BO) as bo:
                for _ in range(3):  # interleaved on the one backend
                    assert len(await _rows(bo, NOTES_SQL)) == 1
                    assert len(await _rows(ann, NOTES_SQL)) == 2


async def test_a_caller_no_rule_maps_is_refused_not_served_as_the_login_role(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, {"sub": "carl", "groups": ["green"]}) as carl:
            for tool, arguments in (
                ("read_only_sql", {"sql": "SELECT 1"}),
                ("sql_schema", {}),
                ("explain_sql", {"sql": "SELECT 1"}),
            ):
                problem = await _problem(carl, tool, arguments)
                assert problem["type"] == "urn:mcp-suite:problem:access-denied", problem
                assert "identity map" in problem["detail"]
                assert problem["metadata"]["mapping"] == "missing"


async def test_pg_stat_activity_names_the_caller_during_a_slow_call(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(
        tmp_path / "sources.toml", login_dsn(demo_cluster), extra="statement_timeout_ms = 20000"
    )
    seen: list[tuple[str, str]] = []

    def activity() -> list[tuple[str, str]]:
        return [
            (str(name), str(user))
            for name, user in admin.execute(
                # The FETCH runs the query (the DECLARE before it only plans it).
                "SELECT application_name, usename FROM pg_stat_activity"
                " WHERE state = 'active' AND query LIKE 'FETCH%%' AND usename = %s",
                (LOGIN,),
            ).fetchall()
        ]

    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, ANN) as ann, trio.open_nursery() as nursery:
            nursery.start_soon(ann.call_tool, "read_only_sql", {"sql": LONG_QUERY})
            while not seen:
                seen = await trio.to_thread.run_sync(activity)
                await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert seen == [("mcp-suite/ann", LOGIN)]


async def test_groups_are_read_where_the_map_says_keycloak_and_cognito_alike(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(
        tmp_path / "sources.toml",
        login_dsn(demo_cluster),
        identity_extra="group_claims = ['realm_access.roles', 'cognito:groups']",
    )
    keycloak = {"sub": "ann", "realm_access": {"roles": ["red"]}}
    cognito = {"sub": "bo", "cognito:groups": ["blue"]}
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, keycloak) as ann, _client(server, issuer, cognito) as bo:
            assert await _rows(ann, NOTES_SQL) == [["ann", "ann: first"], ["ann", "ann: second"]]
            assert await _rows(bo, "SELECT current_user") == [[BLUE]]
        # The default claims are no longer read: only the paths the map names.
        async with _client(server, issuer, ANN) as plain:
            problem = await _problem(plain, "read_only_sql", {"sql": "SELECT 1"})
            assert problem["metadata"]["mapping"] == "missing"


async def test_a_claim_passed_on_with_a_nul_is_refused_naming_the_claim_and_the_session_goes_on(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, {**ANN, "team": "north\u0000"}) as ann:
            problem = await _problem(ann, "read_only_sql", {"sql": NOTES_SQL})
            assert problem["type"] == "urn:mcp-suite:problem:access-denied", problem
            assert problem["metadata"]["claim"] == "team"
            assert "control character" in problem["detail"]
            listed = await ann.list_tools()  # the session goes on
            assert "read_only_sql" in [tool.name for tool in listed.tools]
        async with _client(server, issuer, ANN) as clean:  # the same person with a clean token reads
            assert len(await _rows(clean, NOTES_SQL)) == 2


async def test_a_personal_subject_is_named_by_its_keyed_hash_in_pg_stat_activity(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    key = tmp_path / "subject-key"
    key.write_bytes(b"s" * 32)
    key.chmod(0o600)
    config = sources_file(
        tmp_path / "sources.toml",
        login_dsn(demo_cluster),
        identity_extra=f"personal_subject = true\nsubject_key_file = '{key}'",
    )
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, ANN) as ann:
            assert await _rows(ann, "SELECT current_setting('application_name')") == [
                ["mcp-suite/~" + hmac.new(b"s" * 32, b"ann", hashlib.sha256).hexdigest()[:16]]
            ]


async def test_a_mapped_role_given_a_definer_function_is_refused_while_the_other_serves(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # A re-audit every 1.5 s, not the harness's 0.3 s: on a loaded machine an audit may take longer than two
    # short intervals, and the gate then answers role-unaudited (for every role) instead.
    interval_s = 1.5
    config = sources_file(
        tmp_path / "sources.toml", login_dsn(demo_cluster), extra=f"reaudit_interval_s = {interval_s}"
    )
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, ANN) as ann, _client(server, issuer, BO) as bo:
            assert len(await _rows(bo, NOTES_SQL)) == 1
            admin.execute(
                f"CREATE FUNCTION {DEFINER}() RETURNS integer LANGUAGE sql SECURITY DEFINER"
                " AS 'SELECT 1'".encode()
            )
            admin.execute(f"REVOKE EXECUTE ON FUNCTION {DEFINER}() FROM PUBLIC".encode())
            admin.execute(f"GRANT EXECUTE ON FUNCTION {DEFINER}() TO {BLUE}".encode())
            while (result := await bo.call_tool("read_only_sql", {"sql": NOTES_SQL})).is_error is False:
                await trio.sleep(interval_s / 3)
            problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # a text block
            assert problem["type"] == "urn:mcp-suite:problem:role-refused"
            assert BLUE in problem["detail"]
            assert len(await _rows(ann, NOTES_SQL)) == 2  # red serves on
        messages = [r.get("msg", "") for r in server.records()]
        assert any(f"stop serving the mapped role(s) {BLUE}" in m for m in messages)


def test_a_login_role_with_a_membership_the_map_does_not_name_is_refused_at_start(
    tmp_path: Path, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    import subprocess
    import sys

    from tests.support.client import REPO, server_env

    admin.execute(f"CREATE ROLE {OTHER} NOLOGIN".encode())
    admin.execute(f"GRANT {OTHER} TO {LOGIN}".encode())
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "check-role"],
        env=server_env({**_env(config), "PYTHONPATH": str(REPO)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == os.EX_CONFIG, done.stderr
    assert f'REVOKE "{OTHER}" FROM "{LOGIN}";' in done.stdout
    assert f"check-role: mapped role {RED}: can only read" in done.stdout
    assert ADMIN_USER not in done.stdout
