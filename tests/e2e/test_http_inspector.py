"""The MCP Inspector CLI (a pinned version from npm, on the machine's Node) over Streamable HTTP.

`mcp-suite serve-http` runs as a process with a test issuer's key set (keys and JWKS made here,
served on loopback); the Inspector connects with `--transport http` and the bearer token in a
`--header`, in each era: modern (`server/discover`, then stateless POSTs) and legacy (an
`initialize` session). The server's audit log shows which methods arrived and under whose name.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.client import REPO, server_env
from tests.support.http_server import HttpServer, open_http_server
from tests.support.inspector import inspector_cli
from tests.support.issuer import TestIssuer, open_issuer

pytestmark = pytest.mark.e2e

# What the server sees of one CLI run, by era: the opening, then the method. In the modern era this
# CLI version sends tools/list twice (the stdio runs in test_interop_inspector.py send it once).
# The Inspector's CLI sets a log level right after `initialize` when the server offers logging (the
# handshake eras; 2026-07-28 deprecates it).
OPENING = {"modern": ["server/discover", "tools/list"], "legacy": ["initialize", "logging/setLevel"]}


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def server(issuer: TestIssuer, tmp_path: Path) -> Iterator[HttpServer]:
    data = tmp_path / "data"
    data.mkdir()
    (data / "notes.txt").write_text("hello over HTTP\n")
    with open_http_server(issuer, {"MCP_SAFE_DATA_DIR": str(data)}) as running:
        yield running


def _inspect(era: str, home: Path, url: str, token: str, *args: str) -> dict[str, Any]:
    """Run the Inspector CLI once against `url`; returns its JSON output."""
    proc = subprocess.run(
        [
            str(inspector_cli()),
            "--cli",
            url,
            "--protocol-era",
            era,
            "--format",
            "json",
            "--transport",
            "http",
            *args,
            "--header",  # takes several values: last
            f"Authorization: Bearer {token}",
        ],
        capture_output=True,
        text=True,
        env=server_env({"HOME": str(home), "NO_COLOR": "1"}),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    output: dict[str, Any] = json.loads(proc.stdout)
    return output


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_inspector_lists_and_calls_over_http_with_a_bearer_token(
    era: str, server: HttpServer, issuer: TestIssuer, tmp_path: Path
) -> None:
    token = issuer.token(server.url, sub=f"inspector-{era}", scope="files:read metrics:read")
    listed = _inspect(era, tmp_path, server.url, token, "--method", "tools/list")
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert names == ["sandbox_fs_list", "sandbox_fs_read", "system_metrics"]  # sql:read not granted

    called = _inspect(
        era,
        tmp_path,
        server.url,
        token,
        "--method",
        "tools/call",
        "--tool-name",
        "sandbox_fs_read",
        "--tool-arg",
        "relative_path=notes.txt",
    )
    result = called["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["content"] == "hello over HTTP\n"
    assert ("io.modelcontextprotocol/serverInfo" in result.get("_meta", {})) is (era == "modern")

    opening = OPENING[era]
    # The CLI lists the tools before it calls one, to check the call's output against its schema.
    expected = [*opening, "tools/list", *opening, "tools/list", "tools/call"]
    audit = server.audit(len(expected))
    assert [r["method"] for r in audit] == expected, json.dumps([r["method"] for r in server.audit(99)])
    assert {r["sub"] for r in audit} == {f"inspector-{era}"}
    assert all(token not in json.dumps(r) for r in server.records())  # the token is never logged


def test_the_inspector_without_a_token_is_refused_with_401(server: HttpServer, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            str(inspector_cli()),
            "--cli",
            server.url,
            "--transport",
            "http",
            "--method",
            "tools/list",
            "--stored-auth-only",
        ],
        capture_output=True,
        text=True,
        env=server_env({"HOME": str(tmp_path), "NO_COLOR": "1"}),
        cwd=REPO,
        timeout=120,
        check=False,
    )
    # `--stored-auth-only`: no interactive OAuth; the 401 ends the run with the server's reason.
    assert proc.returncode != 0
    refused = json.loads(proc.stderr)["error"]
    assert refused["code"] == "auth_required"
    assert "a bearer token is required" in refused["message"]
    assert server.audit(0) == []  # refused before the session core: nothing was served
