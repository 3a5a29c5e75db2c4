"""`mcp-suite serve-http` as a child process for the tests: started on a free loopback port with a
test issuer's key set (or with `MCP_HTTP_AUTH=none` when there is no issuer), its stderr (JSON lines)
collected, stopped with SIGTERM (exit 0 expected), or killed on purpose (`kill()`: SIGKILL, as a crash
or the OOM killer ends it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tests.support.client import REPO, server_env
from tests.support.issuer import TestIssuer, free_port

__all__ = ["HttpServer", "open_http_server"]


class HttpServer:
    def __init__(self, process: subprocess.Popen[bytes], errlog: Any, port: int) -> None:
        self.process = process
        self.errlog = errlog
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.killed = False

    def kill(self) -> None:
        """SIGKILL: no drain, nothing flushed; its records so far stay readable."""
        self.killed = True
        self.process.kill()
        self.process.wait(15)

    def records(self) -> list[dict[str, Any]]:
        self.errlog.seek(0)
        return [json.loads(line) for line in self.errlog.read().splitlines() if line.startswith("{")]

    def messages_once(self, needle: str, timeout: float = 10.0) -> list[str]:
        """Every log message so far, once one holds `needle` (the log is written in batches, so a
        line can follow what its event changed, such as the readiness probe's body)."""
        deadline = time.monotonic() + timeout
        while True:
            messages = [str(r.get("msg", "")) for r in self.records()]
            if any(needle in message for message in messages) or time.monotonic() > deadline:
                return messages
            time.sleep(0.02)

    def audit(self, count: int) -> list[dict[str, Any]]:
        """The audit records once `count` are written (the log is written in batches)."""
        deadline = time.monotonic() + 10
        while True:
            records = [r for r in self.records() if r.get("event") == "request"]
            if len(records) >= count or time.monotonic() > deadline:
                return records
            time.sleep(0.02)


@contextmanager
def open_http_server(
    issuer: TestIssuer | None,
    env: Mapping[str, str],
    *,
    port: int | None = None,
    module: str = "mcp_suite",
) -> Iterator[HttpServer]:
    """serve-http with `env` (tools; it may name another MCP_HTTP_RESOURCE_URI, a proxy's) and
    authorization by `issuer` (None: `MCP_HTTP_AUTH=none`, the loopback-only setting), on `port`
    (None: a free one), until the block ends. `module`: the entry point run with `python -m` (a
    test server's, which adds its tools: the conformance fixture server's,
    `tests.support.fixture_server`, is the same server with more tools)."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    if issuer is None:
        auth = {"MCP_HTTP_AUTH": "none"}
    else:
        auth = {
            "MCP_HTTP_RESOURCE_URI": url,
            "MCP_HTTP_ISSUER": issuer.issuer,
            "MCP_HTTP_JWKS_URL": issuer.jwks_url,
        }
    full_env = server_env({"MCP_HTTP_PORT": str(port), **auth, "PYTHONPATH": str(REPO), **env})
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-X", "dev", "-m", module, "serve-http"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=full_env,
            cwd=REPO,
        )
        running = HttpServer(process, errlog, port)
        try:
            deadline = time.monotonic() + 30
            while not any("serving over HTTP" in r.get("msg", "") for r in running.records()):
                assert process.poll() is None, running.records()
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
            yield running
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            expected = -signal.SIGKILL if running.killed else os.EX_OK
            assert process.wait(15) == expected, running.records()
