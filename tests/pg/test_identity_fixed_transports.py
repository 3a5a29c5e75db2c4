"""Issue 51 through the real server: over Streamable HTTP (the official SDK's client, tokens from a test
issuer) and over stdio, directly and through PgBouncer in transaction mode. A helper planted after the
audit passed, which switches the claims, gets no row back (and the audit refuses it at start-up); a
cast's error on a row the caller may not read does not quote it (read_only_sql and explain_sql); a
login role whose sessions start as a mapped role (`ALTER ROLE <login> SET role`) serves no call as
that role, over HTTP through the map and over stdio (no map: the login role's memberships are
refused); a mapped role reaching a privileged role stops every call; `check-role` names the login
role in its fix."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
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
from tests.support.client import REPO, ServerProcess, problem_of, server_env
from tests.support.devdb.pgbouncer import PgBouncer, open_pgbouncer
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
from tests.support.identity_attacks import (
    CLAIM_AS_SQL,
    HIDDEN_VALUE,
    LEAKY_VIEW_SQL,
    SUPER,
    drop_super,
    install_attacks,
)
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.reaudit import drop_event_trigger

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

ANN = {"sub": "ann", "groups": ["red"], "team": "north"}
BO = {"sub": "bo", "groups": ["blue"], "team": "south"}
LONG_REAUDIT = "reaudit_interval_s = 60"  # the longest allowed: far beyond the test
WITHHELD = "[value withheld: not in the query's text]"
WHO = "SELECT current_user"


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def bare(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    """The people's database without the planted helpers (a test plants them when it says so)."""
    with people(demo_cluster) as conn:
        drop_event_trigger(conn)  # no re-audit on DDL: a change is seen at the next interval only
        try:
            yield conn
        finally:
            conn.execute(f"ALTER ROLE {LOGIN} RESET ALL".encode())
            drop_super(conn)


@pytest.fixture
def admin(bare: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    install_attacks(bare)
    return bare


@contextlib.contextmanager
def _dsn(demo_cluster: Cluster, via: str) -> Iterator[tuple[str, str]]:
    """The login role's DSN (no password: it is in `PASSWORD_ENV`) and the source's extra lines;
    through a PgBouncer in transaction mode when `via` says so."""
    if via == "direct":
        yield login_dsn(demo_cluster), ""
        return
    with open_pgbouncer(demo_cluster, {LOGIN: LOGIN_PASSWORD}, pool_size=1) as bouncer:
        parts = conninfo_to_dict(bouncer.dsn(LOGIN, LOGIN_PASSWORD, demo_cluster.dbname))
        parts.pop("password")
        _BOUNCERS.append(bouncer)
        try:
            yield make_conninfo("", **parts), "pooler = 'transaction'"
        finally:
            _BOUNCERS.remove(bouncer)


_BOUNCERS: list[PgBouncer] = []


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


async def _problem(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is True, result.structured_content
    document: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]  # a text block
    return document


@pytest.mark.parametrize("via", ["direct", "pgbouncer"])
async def test_over_http_a_helper_that_switches_the_claims_gets_no_row_and_no_value_leaks_in_errors(
    via: str, tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, bare: psycopg.Connection[Any]
) -> None:
    # The window the per-call check exists for: the helpers are planted after the audit passed and
    # before the next re-audit (a minute away, the longest interval; no event trigger asks sooner).
    with _dsn(demo_cluster, via) as (dsn, extra):
        config = sources_file(tmp_path / "sources.toml", dsn, extra=f"{extra}\n{LONG_REAUDIT}")
        with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
            async with _client(server, issuer, ANN) as ann:
                first = await ann.call_tool("read_only_sql", {"sql": NOTES_SQL})
                assert first.is_error is False, first.content
                install_attacks(bare)
                switched = await _problem(ann, "read_only_sql", {"sql": CLAIM_AS_SQL})
                assert switched["type"] == "urn:mcp-suite:problem:query-violation", switched
                assert switched["metadata"]["finding"] == "identity-changed"
                assert "bo: only" not in json.dumps(switched)
                for tool, arguments in (
                    ("read_only_sql", {"sql": LEAKY_VIEW_SQL}),
                    ("explain_sql", {"sql": LEAKY_VIEW_SQL, "analyze": True}),
                ):
                    failed = await _problem(ann, tool, arguments)
                    assert failed["metadata"]["sqlstate"] == "22P02"
                    assert HIDDEN_VALUE not in json.dumps(failed)
                    assert f"invalid input syntax for type integer: {WITHHELD}" in failed["detail"]
                rows = await ann.call_tool("read_only_sql", {"sql": NOTES_SQL})  # still ann, and only ann
                assert rows.structured_content is not None
                assert rows.structured_content["rows"] == [["ann", "ann: first"], ["ann", "ann: second"]]


async def test_over_http_the_audit_refuses_the_role_given_the_claim_switching_helper_at_start_up(
    tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # The same helper, there before the server starts: red, which may execute it, is refused.
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        async with _client(server, issuer, ANN) as ann:
            refused = await _problem(ann, "read_only_sql", {"sql": CLAIM_AS_SQL})
            assert refused["type"] == "urn:mcp-suite:problem:role-refused", refused
            assert RED in refused["detail"], refused["detail"]
            assert "function-body" in refused["metadata"]["findings"], refused
            assert "bo: only" not in json.dumps(refused)


@pytest.mark.parametrize("via", ["direct", "pgbouncer"])
async def test_over_http_sessions_that_start_as_another_mapped_role_serve_no_call_as_it(
    via: str, tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, bare: psycopg.Connection[Any]
) -> None:
    # bo's calls run as blue. Once `ALTER ROLE <login> SET role` makes new sessions start as red,
    # none of bo's calls may run as red (stdio offers no source with an identity map: no caller).
    with _dsn(demo_cluster, via) as (dsn, extra):
        config = sources_file(tmp_path / "sources.toml", dsn, extra=f"{extra}\n{LONG_REAUDIT}")
        with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
            async with _client(server, issuer, BO) as bo:
                who = await bo.call_tool("read_only_sql", {"sql": WHO})
                assert who.structured_content is not None, who.content
                assert who.structured_content["rows"] == [[BLUE]]
                bare.execute(f"ALTER ROLE {LOGIN} SET role = {RED}".encode())
                if _BOUNCERS:  # PgBouncer makes its backend anew, as it does after server_lifetime
                    with psycopg.connect(_BOUNCERS[0].admin_dsn, autocommit=True) as console:
                        console.execute("RECONNECT")
                else:  # the pool makes its connections anew, as after a restart
                    bare.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (LOGIN,)
                    )
                answers = []
                problem: dict[str, Any] = {}
                for _ in range(20):  # the pool notices its closed connections within a few calls
                    result = await bo.call_tool("read_only_sql", {"sql": WHO})
                    if not result.is_error:
                        assert result.structured_content is not None
                        answers.append(result.structured_content["rows"])
                        continue
                    problem = json.loads(result.content[0].text)  # type: ignore[union-attr]  # a text block
                    if problem["type"].endswith("database-unavailable"):
                        await trio.sleep(0.2)  # a connection the server ended: the next call takes another
                        continue
                    break
                assert all(rows == [[BLUE]] for rows in answers), answers
                assert problem["type"] == "urn:mcp-suite:problem:query-violation", problem
                assert problem["metadata"]["finding"] == "session-role"


@pytest.mark.parametrize(
    "setting", ["", f"ALTER ROLE {LOGIN} SET role = {RED}"], ids=["member", "starts-as-red"]
)
def test_over_stdio_a_login_role_that_could_become_a_mapped_role_serves_no_call(
    setting: str, tmp_path: Path, demo_cluster: Cluster, bare: psycopg.Connection[Any]
) -> None:
    # stdio has no caller to map: the source has no identity map, and the login role, a member of
    # red and blue (and its sessions maybe starting as red), is refused before any call runs as them.
    if setting:
        bare.execute(setting.encode())
    config = tmp_path / "sources.toml"
    config.write_text(
        "[[sources]]\nname = 'people'\ndescription = 'Notes'\n"
        f"dsn = {json.dumps(login_dsn(demo_cluster))}\npassword_env = '{PASSWORD_ENV}'\n"
    )
    with ServerProcess(env={**_env(config), "MCP_METRICS_ENABLED": "false"}) as server:
        server.initialize()
        result = server.call_tool("read_only_sql", {"sql": WHO})
        assert result.get("isError") is True, result
        problem = problem_of(result)
        assert problem["type"] == "urn:mcp-suite:problem:role-refused", problem
        assert "membership" in problem["metadata"]["findings"], problem
        if setting:
            assert "session-role" in problem["metadata"]["findings"], problem


def test_check_role_names_the_login_role_whatever_its_sessions_start_as(
    tmp_path: Path, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute(f"ALTER ROLE {LOGIN} SET role = {RED}".encode())
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
    assert f'fix: ALTER ROLE "{LOGIN}" RESET role;' in done.stdout
    assert "inherit" not in done.stdout  # the login role is NOINHERIT; red is not audited as it


@pytest.mark.parametrize(
    "grant",
    [f"GRANT {SUPER} TO {RED}", f"GRANT pg_read_all_data TO {BLUE}"],
    ids=["mapped-role-member-of-a-superuser", "mapped-role-member-of-pg_read_all_data"],
)
async def test_no_call_is_served_when_any_call_could_become_someone_else(
    grant: str, tmp_path: Path, issuer: TestIssuer, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # The login role's finding, not one mapped role's: any call's code could switch there (through
    # the mapped role), so neither red's caller nor blue's is served. (A function declared
    # `SET role` is the finding of each role that may execute it: tests/pg/test_http_identity_bodies.py.)
    admin.execute(grant.encode())
    config = sources_file(tmp_path / "sources.toml", login_dsn(demo_cluster))
    with open_http_server(issuer, _env(config)) as server, trio.fail_after(60):
        for claims in (ANN, BO):
            async with _client(server, issuer, claims) as client:
                problem = await _problem(client, "read_only_sql", {"sql": WHO})
                assert problem["type"] == "urn:mcp-suite:problem:role-refused", problem
                assert "reach-privileged" in problem["metadata"]["findings"], problem
