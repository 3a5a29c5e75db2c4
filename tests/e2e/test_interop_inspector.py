"""Interop with the MCP Inspector CLI (a pinned version from npm, on the machine's Node) in both eras.

The Inspector launches `python -m mcp_suite` itself. In its legacy era it opens with `initialize`
(then `logging/setLevel`, the server offering logging); in its modern era it probes
`server/discover`, finds a modern server and sends every request with the 2026-07-28 `_meta` and no
handshake. The server's audit lines (the Inspector passes the server's
stderr through) show which methods arrived.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.client import REPO, server_env
from tests.support.inspector import inspector_cli

pytestmark = pytest.mark.e2e


def _inspect(era: str, home: Path, *args: str) -> tuple[dict[str, Any], list[str]]:
    """Run the Inspector CLI once; returns its JSON output and the methods the server audited."""
    output, methods, _ = _inspect_with_stderr(era, home, *args)
    return output, methods


def _inspect_with_stderr(era: str, home: Path, *args: str) -> tuple[dict[str, Any], list[str], str]:
    """`_inspect`, and the Inspector's own stderr lines (the server's audit lines left out)."""
    env = server_env({"HOME": str(home), "NO_COLOR": "1"})
    proc = subprocess.run(
        [
            str(inspector_cli()),
            "--cli",
            "--protocol-era",
            era,
            "--format",
            "json",
            "-e",
            f"PYTHONPATH={REPO}",
            "-e",
            "MCP_LOG_LEVEL=INFO",
            *args,
            sys.executable,
            "-m",
            "mcp_suite",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    audit = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith('{"')]
    methods = [event["method"] for event in audit if event.get("event") == "request"]
    output: dict[str, Any] = json.loads(proc.stdout)
    own = "".join(line for line in proc.stderr.splitlines(keepends=True) if not line.startswith('{"'))
    return output, methods, own


@pytest.mark.parametrize(
    ("era", "opening", "modern"),
    # In the handshake eras the Inspector sets a log level once the server offers logging.
    [("legacy", ["initialize", "logging/setLevel"], False), ("modern", ["server/discover"], True)],
)
def test_the_inspector_lists_and_calls_in_each_era(
    era: str, opening: list[str], modern: bool, tmp_path: Path
) -> None:
    listed, methods = _inspect(era, tmp_path, "--method", "tools/list")
    assert methods == [*opening, "tools/list"]
    (tool,) = listed["result"]["tools"]
    assert tool["name"] == "system_metrics"
    assert tool["annotations"]["readOnlyHint"] is True

    called, methods = _inspect(era, tmp_path, "--method", "tools/call", "--tool-name", "system_metrics")
    assert methods == [*opening, "tools/list", "tools/call"]  # it lists first, to check the output
    result = called["result"]
    assert result["isError"] is False
    assert 0 <= result["structuredContent"]["cpu"]["percent"] <= 100
    assert ("io.modelcontextprotocol/serverInfo" in result.get("_meta", {})) is modern


def test_the_inspector_strict_schema_lint_finds_nothing_in_the_six_tools(tmp_path: Path) -> None:
    # `--strict` prints each schema portability finding (a `type` array for a nullable field, a
    # schema with no constraint such as `{}`...) with its path on stderr, then a count line; it
    # prints nothing when there is none. Every tool is served: the SQL tools against a database
    # nobody listens on (the start-up audit cannot connect, which is not fatal), the folder tools
    # on an empty folder.
    data = tmp_path / "data"
    data.mkdir()
    listed, _, stderr = _inspect_with_stderr(
        "legacy",
        tmp_path,
        "-e",
        "MCP_SQL_DSN=postgresql://reader:secret@127.0.0.1:1/mcp_demo",
        "-e",
        "MCP_SQL_CONNECT_TIMEOUT_S=1",
        "-e",
        f"MCP_SAFE_DATA_DIR={data}",
        "--strict",
        "--method",
        "tools/list",
    )
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert names == [
        "sql_schema",
        "read_only_sql",
        "explain_sql",
        "sandbox_fs_list",
        "sandbox_fs_read",
        "system_metrics",
    ]
    assert "Warning: tool" not in stderr, stderr
    assert "Error: tool" not in stderr, stderr
    assert "across" not in stderr, stderr  # the count line ("0 errors, 9 warnings across 3 tools")
