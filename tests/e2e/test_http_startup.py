"""`mcp-suite serve-http` refusing to start: each refusal is its exit status and one line on stderr,
never a traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.support.client import REPO, server_env

pytestmark = pytest.mark.e2e


def test_a_port_in_use_stops_serve_http_with_exit_69_and_one_line_naming_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = server_env({"MCP_HTTP_PORT": str(port), "MCP_HTTP_AUTH": "none", "PYTHONPATH": str(REPO)})
        done = subprocess.run(
            [sys.executable, "-X", "dev", "-m", "mcp_suite", "serve-http"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            cwd=REPO,
            timeout=60,
            check=False,
        )
    assert done.returncode == os.EX_UNAVAILABLE, done.stderr.decode()
    lines = done.stderr.decode().splitlines()
    assert "Traceback" not in done.stderr.decode()
    assert all(line.startswith("{") for line in lines), lines
    (refusal,) = [json.loads(line) for line in lines if json.loads(line)["level"] in ("critical", "error")]
    assert f"cannot listen on 127.0.0.1:{port}" in refusal["msg"], refusal
    assert done.stdout == b""
