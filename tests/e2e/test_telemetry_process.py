"""Traces and metrics from the real server process on stdio: exported over OTLP/HTTP to a receiver in
the test (127.0.0.1) that decodes them with the official `opentelemetry-proto` messages, and scraped
as Prometheus text by Debian's Prometheus, whose HTTP API then answers a query for the series."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Final

import pytest

from tests.support.client import REPO, ServerProcess
from tests.support.issuer import free_port
from tests.support.telemetry import open_otlp_receiver, open_prometheus

pytestmark = pytest.mark.e2e

PARENT_TRACE: Final = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT: Final = f"00-{PARENT_TRACE}-00f067aa0ba902b7-01"
TOOL: Final = "system_metrics"


def test_a_stdio_server_exports_its_spans_and_metrics_over_otlp_http() -> None:
    with open_otlp_receiver() as receiver:
        env = {
            "MCP_METRICS_ENABLED": "true",
            "MCP_OTEL_ENDPOINT": receiver.url,
            "MCP_OTEL_EXPORT_INTERVAL_S": "0.2",
            "MCP_OTEL_SERVICE_NAME": "mcp-suite-under-test",
        }
        with ServerProcess(env=env) as server:
            server.initialize()
            params = {"name": TOOL, "arguments": {}, "_meta": {"traceparent": PARENT}}
            answer = server.request("tools/call", params)
            assert "result" in answer, answer
            assert server.stop() == 0  # the last spans and metrics are flushed on the way out
        spans = {span.name: span for span in receiver.spans()}
        assert {"initialize", f"tools/call {TOOL}", "mcp.encode"} <= set(spans), sorted(spans)
        call = spans[f"tools/call {TOOL}"]
        # The client's trace is a link; the span's trace is the server's own.
        assert call.trace_id.hex() != PARENT_TRACE
        assert call.parent_span_id == b""
        assert [(link.trace_id.hex(), link.span_id.hex()) for link in call.links] == [
            (PARENT_TRACE, "00f067aa0ba902b7")
        ]
        assert call.kind == call.SPAN_KIND_SERVER
        attributes = {a.key: a.value.string_value for a in call.attributes}
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == TOOL
        assert attributes["network.transport"] == "pipe"
        assert spans["mcp.encode"].parent_span_id == call.span_id
        with receiver.lock:
            resource = receiver.traces[0].resource_spans[0].resource
        service = {a.key: a.value.string_value for a in resource.attributes}["service.name"]
        assert service == "mcp-suite-under-test"
        names = receiver.metric_names()
        assert {"mcp.server.operation.duration", "mcp_suite.calls"} <= names, sorted(names)
        assert set(receiver.paths) == {"/v1/traces", "/v1/metrics"}
    # The call's audit record joins its trace; the start-up log names the outbound connection.
    records = [json.loads(line) for line in server.stderr_lines if line.startswith("{")]
    (record,) = [r for r in records if r.get("event") == "request" and r.get("tool") == TOOL]
    assert record["trace_id"] == call.trace_id.hex()
    assert record["client_trace_id"] == PARENT_TRACE
    assert any("an outbound connection" in r.get("msg", "") for r in records)


def test_prometheus_scrapes_the_metrics_listener_of_a_stdio_server() -> None:
    port = free_port()
    env = {"MCP_METRICS_ENABLED": "true", "MCP_PROMETHEUS_PORT": str(port)}
    with ServerProcess(env=env) as server:
        server.initialize()
        for _ in range(3):
            assert not server.call_tool(TOOL).get("isError")
        server.wait_for_stderr(f"http://127.0.0.1:{port}/metrics")
        with open_prometheus(f"127.0.0.1:{port}") as prometheus:
            series = prometheus.wait_series(f'mcp_suite_calls_total{{tool="{TOOL}",outcome="ok"}}')
            assert len(series) == 1, prometheus.log_text()
            assert series[0]["value"][1] == "3"
            assert series[0]["metric"]["job"] == "mcp-suite"
            durations = prometheus.wait_series(
                'sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})'
            )
            assert durations[0]["value"][1] == "3"
        assert server.stop() == 0


def scrape(port: int) -> str:
    """The Prometheus text of the listener on 127.0.0.1:`port`."""
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:  # loopback
                return str(answer.read().decode())
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_collector_that_hangs_delays_no_call_and_the_spans_it_cannot_take_are_counted() -> None:
    """Each export waits for the test; meanwhile every call is answered (the call timeout is far
    below the export's), the queue of 16 fills, and the dropped spans are counted."""
    answer = threading.Event()
    port = free_port()
    with open_otlp_receiver(answer) as receiver:
        env = {
            "MCP_METRICS_ENABLED": "true",
            "MCP_OTEL_ENDPOINT": receiver.url,
            "MCP_OTEL_QUEUE_SIZE": "16",
            "MCP_OTEL_EXPORT_TIMEOUT_S": "60",
            "MCP_PROMETHEUS_PORT": str(port),
        }
        with ServerProcess(env=env) as server:
            server.initialize()
            for _ in range(40):
                assert not server.call_tool(TOOL, timeout=10).get("isError")
            server.wait_for_stderr(f"http://127.0.0.1:{port}/metrics")
            text = scrape(port)
            dropped = [
                line
                for line in text.splitlines()
                if line.startswith("otel_sdk_processor_span_processed") and 'error_type="queue_full"' in line
            ]
            assert dropped, text
            assert float(dropped[0].rsplit(" ", 1)[1]) > 0
            answer.set()
            assert server.stop() == 0


def test_the_metrics_listener_serves_prometheus_text_on_loopback() -> None:
    port = free_port()
    with ServerProcess(env={"MCP_PROMETHEUS_PORT": str(port)}) as server:
        server.initialize()
        server.wait_for_stderr(f"http://127.0.0.1:{port}/metrics")
        text = scrape(port)
        assert "# TYPE mcp_server_operation_duration_seconds histogram" in text
        assert server.stop() == 0
    # Scraped, not pushed: no warning of an OTLP export the server does not make.
    records = [json.loads(line) for line in server.stderr_lines if line.startswith("{")]
    assert not [r for r in records if "OTLP" in r.get("msg", "")], records
    assert any("no outbound connection" in r.get("msg", "") for r in records)


def test_a_missing_otel_extra_is_refused_before_any_database_is_reached(tmp_path: Path) -> None:
    """OpenTelemetry made unimportable (as without the extra): exit 78 naming the extra, and the
    database's address never saw a connection."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['opentelemetry'] = None\n")
    with socket.socket() as database:
        database.bind(("127.0.0.1", 0))
        database.listen()
        database.setblocking(False)
        env = {
            "PYTHONPATH": f"{tmp_path}:{REPO}",
            "MCP_PROMETHEUS_PORT": str(free_port()),
            "MCP_SQL_DSN": f"host=127.0.0.1 port={database.getsockname()[1]} dbname=x connect_timeout=2",
        }
        with ServerProcess(env=env) as server:
            assert server.wait(30) == 78
        assert "install mcp-suite[otel]" in server.stderr_text()
        with pytest.raises(BlockingIOError):
            database.accept()  # nothing connected


def test_a_metrics_port_that_is_taken_refuses_the_start_with_exit_78() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with ServerProcess(env={"MCP_PROMETHEUS_PORT": str(port)}) as server:
            assert server.wait() == 78
        assert f"MCP_PROMETHEUS_PORT: cannot listen on 127.0.0.1:{port}" in server.stderr_text()
