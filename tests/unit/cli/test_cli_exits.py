"""The CLI's exit statuses: a tool that refuses or cannot start, a crash, misplaced arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.client import REPO, server_env
from tests.support.markers import needs_two_cpus

# The server with one extra tool whose opener raises what argv[1] names, before any session starts.
PROGRAM = """
import contextlib, sys
from mcp_suite.cli import main
from mcp_suite.tools.base import StartupRefusedError, StartupUnavailableError

FAULTS = {
    "refused": StartupRefusedError("the role can write: grant it read access only"),
    "unavailable": StartupUnavailableError("the database cannot be reached"),
    "crash": RuntimeError("an unexpected bug"),
}

@contextlib.contextmanager
def failing_tool(settings):
    raise FAULTS[sys.argv[1]]
    yield None

sys.exit(main([], extra_tools=[failing_tool]))
"""


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=server_env({"MCP_METRICS_ENABLED": "false", **(env or {})}),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )


def _critical_lines(stderr: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("level") == "critical"]


@pytest.mark.parametrize(
    ("fault", "status", "says"),
    [
        ("refused", os.EX_CONFIG, "refusing to start: the role can write: grant it read access only"),
        ("unavailable", os.EX_UNAVAILABLE, "refusing to start: the database cannot be reached"),
        ("crash", os.EX_SOFTWARE, "the server failed"),
    ],
)
def test_a_tool_failing_to_open_gives_its_exit_status_and_one_critical_line(
    fault: str, status: int, says: str
) -> None:
    proc = _run(["-c", PROGRAM, fault])
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == ""
    critical = _critical_lines(proc.stderr)
    assert [line["msg"] for line in critical] == [says], proc.stderr


def test_check_role_without_a_dsn_exits_78_and_says_what_it_needs() -> None:
    proc = _run(["-m", "mcp_suite", "check-role"])
    assert proc.returncode == os.EX_CONFIG, proc.stderr
    assert [line["msg"] for line in _critical_lines(proc.stderr)] == [
        "check-role needs MCP_SQL_DSN or a configuration file (MCP_CONFIG)"
    ]


def test_a_demo_action_after_another_command_is_a_usage_error() -> None:
    proc = _run(["-m", "mcp_suite", "serve", "destroy"])
    assert proc.returncode == 2
    assert "'destroy' follows only demo" in proc.stderr
    assert proc.stdout == ""


@needs_two_cpus
@pytest.mark.parametrize(("affinity", "pinned"), [("single", True), ("off", False)])
def test_the_debug_log_says_when_the_server_pinned_itself(affinity: str, pinned: bool) -> None:
    proc = _run(["-c", PROGRAM, "refused"], {"MCP_LOG_LEVEL": "DEBUG", "MCP_CPU_AFFINITY": affinity})
    assert proc.returncode == os.EX_CONFIG, proc.stderr
    messages = [json.loads(line)["msg"] for line in proc.stderr.splitlines() if line.startswith("{")]
    assert any(str(m).startswith("pinned to CPU ") for m in messages) is pinned, proc.stderr
