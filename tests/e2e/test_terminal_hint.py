"""The server started by hand in a terminal says on stderr that it waits for JSON-RPC there; started
by a client (stdin a pipe) it does not."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from tests.support.client import REPO, server_env

pytestmark = pytest.mark.e2e

HINT = "stdin is a terminal: the server waits there for JSON-RPC messages"


def _serve_until_eof(stdin: int, end: bytes, write_to: int) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_suite"],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env({"MCP_METRICS_ENABLED": "false"}),
        cwd=REPO,
    )
    os.close(stdin)
    os.write(write_to, end)  # queued until the server reads: end of input
    os.close(write_to)
    stdout, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_a_terminal_on_stdin_is_told_the_server_waits_there_for_json_rpc() -> None:
    master, slave = pty.openpty()
    try:
        proc = _serve_until_eof(slave, b"\x04", os.dup(master))  # Ctrl-D on an empty line
    finally:
        os.close(master)
    assert proc.returncode == 0, proc.stderr.decode()
    assert HINT in proc.stderr.decode()
    assert proc.stdout == b""


def test_a_pipe_on_stdin_gets_no_terminal_hint() -> None:
    read_end, write_end = os.pipe()
    proc = _serve_until_eof(read_end, b"", write_end)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "serving mcp-suite" in proc.stderr.decode()
    assert HINT not in proc.stderr.decode()
