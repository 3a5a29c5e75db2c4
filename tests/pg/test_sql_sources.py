"""Several databases behind one server, with real clusters from the harness: the embedded PostgreSQL
18 (`demo`) and Debian's 15 (`legacy`), named in one configuration file. A query goes to each; the
tools and the instructions name both; a source made unsafe after start-up is refused alone while
the other serves, and serves again once a re-audit passes; a source that is down is unavailable
alone. The file's own errors stop the server with exit 78 (tests/unit/tools/sql/test_sources.py names each).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.settings import Settings
from tests.support.devdb.tls import ssl_pg_bin
from tests.support.harness import Harness, open_session
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import open_issuer

pytestmark = pytest.mark.pg

DEFINER = "docs.mcp_sources_definer"


@pytest.fixture(scope="module")
def legacy_cluster() -> Iterator[Cluster]:
    """Debian's PostgreSQL (15 on this distribution), seeded like the demo."""
    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-sources-")), pg_bin=ssl_pg_bin())
    try:
        yield cluster
    finally:
        cluster.destroy()


def _without_password(dsn: str) -> tuple[str, str]:
    options = conninfo_to_dict(dsn)
    password = str(options.pop("password"))
    return make_conninfo(**{k: str(v) for k, v in options.items()}), password


@pytest.fixture
def config(
    demo_cluster: Cluster, legacy_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    demo_dsn, demo_password = _without_password(demo_cluster.reader_dsn)
    legacy_dsn, legacy_password = _without_password(legacy_cluster.reader_dsn)
    secret = tmp_path / "demo-password"
    secret.write_text(demo_password + "\n")
    secret.chmod(0o600)
    monkeypatch.setenv("MCP_TEST_LEGACY_PASSWORD", legacy_password)
    path = tmp_path / "sources.toml"
    path.write_text(
        f"""
[[sources]]
name = "demo"
description = "The demo docs on PostgreSQL 18"
dsn = "{demo_dsn}"
password_file = "{secret}"

[[sources]]
name = "legacy"
description = "The same docs on PostgreSQL 15"
dsn = "{legacy_dsn}"
password_env = "MCP_TEST_LEGACY_PASSWORD"
max_rows = 20
reaudit_interval_s = 0.5
"""
    )
    return path


def _settings(path: Path) -> Settings:
    return Settings(
        config_file=path,
        sql_pool_max_size=2,
        sql_connect_timeout_s=2.0,
        sql_pool_wait_s=0.5,
        metrics_enabled=False,
    )


async def _sql(h: Harness, sql: str, source: str, **more: Any) -> dict[str, Any]:
    result: dict[str, Any] = await h.response(
        await h.call("read_only_sql", {"sql": sql, "source": source, **more})
    )
    return result


async def test_one_server_reads_two_databases_by_one_set_of_tools(config: Path) -> None:
    with trio.fail_after(60):
        async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
            init = await h.initialize()
            tools = {t["name"]: t for t in (await h.request("tools/list"))["result"]["tools"]}
            resources = (await h.request("resources/list"))["result"]["resources"]
            versions = {}
            for source in ("demo", "legacy"):
                answer = await _sql(
                    h, "SELECT current_setting('server_version_num')::int / 10000 AS v", source
                )
                assert "structuredContent" in answer["result"], answer
                versions[source] = answer["result"]["structuredContent"]["rows"][0][0]
            schema = await h.response(await h.call("sql_schema", {"source": "legacy", "detail": "names"}))
            over = await _sql(h, "SELECT 1", "legacy", max_rows=21)
            unknown = await _sql(h, "SELECT 1", "nowhere")
    assert versions == {"demo": 18, "legacy": 15}
    assert set(tools) == {"sql_schema", "read_only_sql", "explain_sql"}
    for name in tools:
        assert tools[name]["inputSchema"]["properties"]["source"]["enum"] == ["demo", "legacy"], name
    instructions = init["result"]["instructions"]
    assert "demo: The demo docs on PostgreSQL 18" in instructions
    assert "legacy: The same docs on PostgreSQL 15" in instructions
    assert {r["uri"] for r in resources} == {"postgres://demo/schema", "postgres://legacy/schema"}
    # Each schema resource says which source it is: no two look alike.
    by_uri = {r["uri"]: r for r in resources}
    demo, legacy = by_uri["postgres://demo/schema"], by_uri["postgres://legacy/schema"]
    assert (demo["name"], legacy["name"]) == ("schema-demo", "schema-legacy")
    assert (demo["title"], legacy["title"]) == ("Database schema of demo", "Database schema of legacy")
    assert "of the source demo (The demo docs on PostgreSQL 18)" in demo["description"]
    assert "of the source legacy (The same docs on PostgreSQL 15)" in legacy["description"]
    assert ("docs", "pages") in {
        (o["schema"], o["name"]) for o in schema["result"]["structuredContent"]["objects"]
    }
    problem = json.loads(over["result"]["content"][0]["text"])
    assert problem["invalid_params"] == ["max_rows"]
    assert problem["metadata"]["source"] == "legacy"
    assert "error" in unknown or unknown["result"]["isError"] is True


async def test_a_source_made_unsafe_after_start_up_is_refused_alone_and_a_source_down_is_unavailable_alone(
    config: Path, legacy_cluster: Cluster
) -> None:
    with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP FUNCTION IF EXISTS {DEFINER}()".encode())
    try:
        with trio.fail_after(90):
            async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
                await h.initialize()
                assert (await _sql(h, "SELECT 1 AS one", "legacy"))["result"]["isError"] is False
                with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
                    # As a careless DBA: a SECURITY DEFINER function PUBLIC may run.
                    admin.execute(
                        f"CREATE FUNCTION {DEFINER}() RETURNS int LANGUAGE sql SECURITY DEFINER "
                        f"AS 'SELECT 1'; GRANT EXECUTE ON FUNCTION {DEFINER}() TO PUBLIC".encode()
                    )
                refused = await _until(h, "legacy", lambda r: r["result"]["isError"] is True)
                problem = json.loads(refused["result"]["content"][0]["text"])
                assert problem["type"] == "urn:mcp-suite:problem:role-refused"
                assert problem["metadata"]["source"] == "legacy"
                assert (await _sql(h, "SELECT 1 AS one", "demo"))["result"]["isError"] is False
                with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
                    admin.execute(f"DROP FUNCTION {DEFINER}()".encode())
                await _until(h, "legacy", lambda r: r["result"]["isError"] is False)
                legacy_cluster.stop()
                try:
                    down = await _until(h, "legacy", lambda r: r["result"]["isError"] is True)
                    outage = json.loads(down["result"]["content"][0]["text"])
                    assert outage["type"] == "urn:mcp-suite:problem:database-unavailable"
                    assert outage["metadata"]["source"] == "legacy"
                    assert (await _sql(h, "SELECT 1 AS one", "demo"))["result"]["isError"] is False
                finally:
                    legacy_cluster.start()
    finally:
        with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP FUNCTION IF EXISTS {DEFINER}()".encode())


async def test_two_sources_on_one_login_role_share_its_audit_verdict(
    legacy_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same role read through two sources (other limits), one re-audited every 0.5 s, the other
    every 60 s: when the first finds the role unsafe, the second refuses at once too, and both
    serve again together."""
    dsn, password = _without_password(legacy_cluster.reader_dsn)
    monkeypatch.setenv("MCP_TEST_LEGACY_PASSWORD", password)
    config = tmp_path / "sources.toml"
    config.write_text(
        "".join(
            f'[[sources]]\nname = "{name}"\ndescription = "The legacy docs"\ndsn = "{dsn}"\n'
            f'password_env = "MCP_TEST_LEGACY_PASSWORD"\nreaudit_interval_s = {interval}\nmax_rows = {rows}\n'
            for name, interval, rows in (("fast", 0.5, 10), ("slow", 60, 20))
        )
    )
    with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP FUNCTION IF EXISTS {DEFINER}()".encode())
    try:
        with trio.fail_after(90):
            async with open_session(settings=_settings(config), builtins=True, test_tools=False) as h:
                await h.initialize()
                assert (await _sql(h, "SELECT 1 AS one", "slow"))["result"]["isError"] is False
                with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
                    admin.execute(
                        f"CREATE FUNCTION {DEFINER}() RETURNS int LANGUAGE sql SECURITY DEFINER "
                        f"AS 'SELECT 1'; GRANT EXECUTE ON FUNCTION {DEFINER}() TO PUBLIC".encode()
                    )
                await _until(h, "fast", lambda r: r["result"]["isError"] is True)
                slow = await _sql(h, "SELECT 1 AS one", "slow")  # once: no wait for its own re-audit
                assert slow["result"]["isError"] is True, slow
                problem = json.loads(slow["result"]["content"][0]["text"])
                assert problem["type"] == "urn:mcp-suite:problem:role-refused"
                with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
                    admin.execute(f"DROP FUNCTION {DEFINER}()".encode())
                await _until(h, "fast", lambda r: r["result"]["isError"] is False)
                assert (await _sql(h, "SELECT 1 AS one", "slow"))["result"]["isError"] is False
    finally:
        with psycopg.connect(legacy_cluster.admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP FUNCTION IF EXISTS {DEFINER}()".encode())


async def _until(h: Harness, source: str, done: Any) -> dict[str, Any]:
    """The first answer to a query of `source` for which `done(answer)` holds (polled)."""
    while True:
        answer = await _sql(h, "SELECT 1 AS one", source)
        if done(answer):
            return answer
        await trio.sleep(0.2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[[sources]]\nname="a"\ndescription="d"\ndsn="dbname=a"\nmax_rowz=3\n', "max_rowz: unknown key"),
        (
            '[[sources]]\nname="a"\ndescription="d"\ndsn="dbname=a"\n'
            '[[sources]]\nname="a"\ndescription="e"\ndsn="dbname=b"\n',
            "another source has the name 'a'",
        ),
        (
            '[[sources]]\nname="a"\ndescription="d"\ndsn="dbname=a"\npassword_file="/nonexistent/pw"\n',
            "password_file: cannot be read",
        ),
    ],
)
def test_an_invalid_file_stops_the_server_with_exit_78(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "--config", str(path)],
        input=b"",
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 78, done.stderr.decode()
    assert expected in done.stderr.decode()
    assert done.stdout == b""


def test_check_role_audits_each_source_under_its_name(config: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_") or k == "MCP_TEST_LEGACY_PASSWORD"}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "--config", str(config), "check-role"],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    out = done.stdout.decode()
    assert done.returncode == 0, (out, done.stderr.decode())
    assert out.index("== source demo") < out.index("== source legacy")
    assert out.count("the role can only read") == 2


def _modern(method: str, params: dict[str, Any], ident: int = 1) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": {**params, "_meta": meta}}


async def _post(
    raw: httpx2.AsyncClient, server: HttpServer, token: str, body: dict[str, Any], name: str = ""
) -> Any:
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": body["method"],
        **({"Mcp-Name": name} if name else {}),
    }
    return await raw.post(server.url, json=body, headers=headers)


async def test_over_http_a_scope_per_source_lists_and_serves_that_source_alone(config: Path) -> None:
    env = {"MCP_CONFIG": str(config), "MCP_TEST_LEGACY_PASSWORD": os.environ["MCP_TEST_LEGACY_PASSWORD"]}
    with open_issuer() as issuer, open_http_server(issuer, env) as server:
        one = issuer.token(server.url, sub="gina", scope="sql:read:legacy")
        every = issuer.token(server.url, sub="hal", scope="sql:read")
        with trio.fail_after(60):
            async with httpx2.AsyncClient() as raw:
                listed = (await _post(raw, server, one, _modern("tools/list", {}))).json()["result"]["tools"]
                everything = (await _post(raw, server, every, _modern("tools/list", {}))).json()["result"][
                    "tools"
                ]
                resources = (await _post(raw, server, one, _modern("resources/list", {}))).json()["result"]
                call = {"name": "read_only_sql", "arguments": {"sql": "SELECT 1 AS one", "source": "legacy"}}
                served = await _post(raw, server, one, _modern("tools/call", call), "read_only_sql")
                call["arguments"] = {"sql": "SELECT 1 AS one", "source": "demo"}
                refused = await _post(raw, server, one, _modern("tools/call", call), "read_only_sql")
                uri = "postgres://demo/schema"
                read = _modern("resources/read", {"uri": uri})
                denied = await _post(raw, server, one, read, uri)
                allowed = await _post(raw, server, every, read, uri)
                metadata = await raw.get(
                    f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"
                )
    # The metadata names the per-source scopes too: an operator or a client learns what it may ask.
    supported = metadata.json()["scopes_supported"]
    assert supported[-2:] == ["sql:read:demo", "sql:read:legacy"], supported
    assert "sql:read" in supported
    assert [t["name"] for t in listed] == ["sql_schema", "read_only_sql", "explain_sql"]
    assert {t["inputSchema"]["properties"]["source"]["enum"][0] for t in listed} == {"legacy"}
    assert all(len(t["inputSchema"]["properties"]["source"]["enum"]) == 1 for t in listed)
    assert all(t["inputSchema"]["properties"]["source"]["enum"] == ["demo", "legacy"] for t in everything)
    assert [r["uri"] for r in resources["resources"]] == ["postgres://legacy/schema"]
    assert served.status_code == 200
    assert served.json()["result"]["isError"] is False
    assert refused.status_code == 403
    assert 'scope="sql:read:demo"' in refused.headers["www-authenticate"]
    assert denied.status_code == 403
    assert 'scope="sql:read:demo"' in denied.headers["www-authenticate"]
    assert allowed.status_code == 200


async def test_over_http_the_instructions_and_errors_name_only_the_sources_the_caller_may_read(
    config: Path,
) -> None:
    env = {"MCP_CONFIG": str(config), "MCP_TEST_LEGACY_PASSWORD": os.environ["MCP_TEST_LEGACY_PASSWORD"]}
    with open_issuer() as issuer, open_http_server(issuer, env) as server:
        one = issuer.token(server.url, sub="gina", scope="sql:read:legacy")
        every = issuer.token(server.url, sub="hal", scope="sql:read")
        with trio.fail_after(60):
            async with httpx2.AsyncClient() as raw:
                hers = (await _post(raw, server, one, _modern("server/discover", {}))).json()["result"]
                his = (await _post(raw, server, every, _modern("server/discover", {}))).json()["result"]
                call = {"name": "read_only_sql", "arguments": {"sql": "SELECT 1", "source": "nowhere"}}
                unknown = await _post(raw, server, every, _modern("tools/call", call), "read_only_sql")
    assert "legacy: The same docs on PostgreSQL 15" in hers["instructions"]
    assert "demo" not in hers["instructions"]
    assert "PostgreSQL 18" not in hers["instructions"]
    assert "demo: The demo docs on PostgreSQL 18; legacy: The same docs" in his["instructions"]
    # A source no one serves: a validation error that lists no source (the inputSchema does).
    detail = json.loads(unknown.json()["result"]["content"][0]["text"])["detail"]
    assert "source: is not one of the sources the tool's inputSchema lists" in detail
    assert "demo" not in detail
    assert "legacy" not in detail


async def test_with_one_source_in_the_file_the_source_argument_may_be_left_out(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    dsn, password = _without_password(demo_cluster.reader_dsn)
    secret = tmp_path / "pw"
    secret.write_text(password)
    secret.chmod(0o600)
    path = tmp_path / "one.toml"
    path.write_text(
        f'[[sources]]\nname = "only"\ndescription = "The demo"\ndsn = "{dsn}"\npassword_file = "{secret}"\n'
    )
    with trio.fail_after(60):
        async with open_session(settings=_settings(path), builtins=True, test_tools=False) as h:
            await h.initialize()
            tools = {t["name"]: t for t in (await h.request("tools/list"))["result"]["tools"]}
            answer = await h.response(await h.call("read_only_sql", {"sql": "SELECT 1 AS one"}))
    assert "source" not in tools["read_only_sql"]["inputSchema"].get("required", [])
    assert tools["read_only_sql"]["inputSchema"]["properties"]["source"]["enum"] == ["only"]
    assert answer["result"]["structuredContent"]["rows"] == [[1]]
