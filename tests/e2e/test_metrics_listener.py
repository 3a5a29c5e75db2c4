"""The Prometheus listener of the real server process (issue 52): idle connections cost no thread
beyond a small cap and are closed after a timeout, and the text carries the log sink's figures."""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path

import pytest

from mcp_suite.settings import PROMETHEUS_MAX_CONNECTIONS
from tests.e2e.test_telemetry_process import scrape
from tests.support.client import ServerProcess
from tests.support.issuer import free_port

pytestmark = pytest.mark.e2e


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no thread count")


def test_four_hundred_idle_connections_to_the_metrics_listener_cost_at_most_its_cap_of_threads() -> None:
    port = free_port()
    with ServerProcess(env={"MCP_PROMETHEUS_PORT": str(port)}) as server:
        server.initialize()
        server.wait_for_stderr(f"http://127.0.0.1:{port}/metrics")
        scrape(port)
        before = threads_of(server.pid)
        with contextlib.ExitStack() as idle:
            for _ in range(400):
                connection = idle.enter_context(socket.create_connection(("127.0.0.1", port)))
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\0" * 8)
            time.sleep(1)  # let the listener accept what it will
            assert threads_of(server.pid) - before <= PROMETHEUS_MAX_CONNECTIONS
            # The idle ones time out and free their slots: a scrape is served again meanwhile.
            text = scrape(port)
        assert "# TYPE mcp_suite_log_lines_dropped_total counter" in text
        assert "# TYPE mcp_suite_log_requests_held_back_total counter" in text
        assert "mcp_suite_log_bytes_waiting" in text
        assert server.stop() == 0
