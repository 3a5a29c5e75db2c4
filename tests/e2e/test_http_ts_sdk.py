"""The official TypeScript SDK's Streamable HTTP client against `mcp-suite serve-http`, run as a process.

A Node script (tests/support/ts_sdk/client.mjs, a pinned SDK from npm) connects with a bearer token
signed by a test issuer (keys and JWKS made here, served on loopback), lists the tools, calls
`read_only_sql` (on the throwaway PostgreSQL cluster) and `sandbox_fs_read`, lists the resources,
reads the schema resource and prints what it saw as JSON. Three clients:

- v2 (`@modelcontextprotocol/client`) pinned to 2026-07-28: `server/discover`, then stateless POSTs;
- v2 in its legacy mode: an `initialize` session (`Mcp-Session-Id`) at 2025-11-25, ended with DELETE;
- v1 (`@modelcontextprotocol/sdk`), which speaks the 2025 era only: the same legacy session.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import LATEST_VERSION, MODERN_VERSION
from tests.support.client import REPO, server_env
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.ts_sdk import ts_sdk_client

pytestmark = [pytest.mark.e2e, pytest.mark.pg]

ALL_SCOPES = "sql:read files:read metrics:read"


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def server(issuer: TestIssuer, tmp_path: Path, demo_cluster: Cluster) -> Iterator[HttpServer]:
    data = tmp_path / "data"
    data.mkdir()
    (data / "notes.txt").write_text("hello from the sandbox\n")
    env = {"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_SAFE_DATA_DIR": str(data)}
    with open_http_server(issuer, env) as running:
        yield running


def _run_client(sdk: str, era: str, url: str, token: str) -> dict[str, Any]:
    script = ts_sdk_client()
    proc = subprocess.run(
        ["node", str(script), sdk, era, url],
        capture_output=True,
        text=True,
        env=server_env({"MCP_TEST_TOKEN": token, "MCP_TEST_FILE": "notes.txt"}),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    seen: dict[str, Any] = json.loads(proc.stdout)
    return seen


def _check_calls(seen: dict[str, Any], dbname: str) -> None:
    assert seen["tools"] == [
        "sql_schema",
        "read_only_sql",
        "explain_sql",
        "sandbox_fs_list",
        "sandbox_fs_read",
        "system_metrics",
    ]
    sql = seen["sql"]
    assert sql["isError"] is False
    assert sql["structuredContent"]["rows"] == [[42]]
    assert [c["name"] for c in sql["structuredContent"]["columns"]] == ["answer"]
    read = seen["read"]
    assert read["isError"] is False
    assert read["structuredContent"]["content"] == "hello from the sandbox\n"
    assert seen["resources"] == [f"postgres://{dbname}/schema"]
    (content,) = seen["contents"]
    assert content["uri"] == f"postgres://{dbname}/schema"
    assert content["mimeType"] == "application/json"
    listing = json.loads(content["text"])  # the first page of sql_schema's unfiltered listing
    assert listing["database"] == dbname
    assert {(o["schema"], o["name"]) for o in listing["objects"]} >= {("docs", "pages")}


@pytest.mark.parametrize(
    ("sdk", "era", "version", "opening"),
    [
        ("v2", "modern", MODERN_VERSION, ["server/discover"]),
        ("v2", "legacy", LATEST_VERSION, ["initialize"]),
        ("v1", "legacy", LATEST_VERSION, ["initialize"]),
    ],
)
def test_the_typescript_sdk_lists_calls_and_reads_with_a_bearer_token(
    sdk: str,
    era: str,
    version: str,
    opening: list[str],
    server: HttpServer,
    issuer: TestIssuer,
    demo_cluster: Cluster,
) -> None:
    token = issuer.token(server.url, sub=f"ts-{sdk}-{era}", scope=ALL_SCOPES)
    seen = _run_client(sdk, era, server.url, token)
    assert seen["protocolVersion"] == version
    assert seen["protocolEra"] == era
    assert (seen["sessionId"] is not None) is (era == "legacy")  # 2026-07-28 keeps no session
    _check_calls(seen, demo_cluster.dbname)

    calls = ["tools/list", "tools/call", "tools/call", "resources/list", "resources/read"]
    audit = server.audit(len(opening) + len(calls))
    assert [r["method"] for r in audit] == [*opening, *calls]
    assert {r["sub"] for r in audit} == {f"ts-{sdk}-{era}"}
    assert [r["outcome"] for r in audit] == ["ok"] * len(audit)
    assert all(token not in json.dumps(r) for r in server.records())  # the token is never logged
