"""What the telemetry tests share: the SDK's in-memory exporters behind a `Telemetry`, an OTLP/HTTP
receiver on 127.0.0.1 that decodes with the official `opentelemetry-proto` messages, and Debian's
Prometheus started with a small configuration that scrapes one loopback target.

    with in_memory(registry) as watched:          # spans and metric points, read in process
    with open_otlp_receiver() as receiver:        # MCP_OTEL_ENDPOINT=receiver.url
    with open_prometheus("127.0.0.1:9464") as prometheus:  prometheus.wait_value(query)
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_suite.demo.process import stop_escalating
from mcp_suite.runtime.telemetry import Telemetry
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import Registry
from tests.support.issuer import free_port

__all__ = [
    "InMemory",
    "OtlpReceiver",
    "Prometheus",
    "in_memory_telemetry",
    "open_otlp_receiver",
    "open_prometheus",
]


@dataclass
class InMemory:
    telemetry: Telemetry
    spans_out: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        """Every finished span so far (the batch processor flushed first)."""
        self.telemetry.tracer_provider.force_flush()
        return list(self.spans_out.get_finished_spans())

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """The data points of the metric `name`: (attributes, value) each; a histogram's value is
        its count."""
        data = self.reader.get_metrics_data()
        found: list[tuple[dict[str, Any], Any]] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = point.count  # type: ignore[union-attr]  # a histogram point
                        found.append((dict(point.attributes or {}), value))
        return found


def in_memory_telemetry(registry: Registry, settings: Settings | None = None) -> InMemory:
    """A `Telemetry` on `registry` exporting to the SDK's in-memory span exporter and metric reader
    (the caller closes it: `observe` keeps its tracer until then)."""
    spans_out = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    telemetry = Telemetry(settings or Settings(), registry, span_exporter=spans_out, metric_readers=[reader])
    return InMemory(telemetry, spans_out, reader)


@dataclass
class OtlpReceiver:
    """What the receiver got: decoded OTLP requests, and the paths they came to."""

    url: str
    traces: list[ExportTraceServiceRequest] = field(default_factory=list)
    metrics: list[ExportMetricsServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[Any]:
        with self.lock:
            return [
                span
                for request in self.traces
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]

    def metric_names(self) -> set[str]:
        with self.lock:
            return {
                metric.name
                for request in self.metrics
                for resource in request.resource_metrics
                for scope in resource.scope_metrics
                for metric in scope.metrics
            }


@contextlib.contextmanager
def open_otlp_receiver(answer: threading.Event | None = None) -> Iterator[OtlpReceiver]:
    """An OTLP/HTTP (protobuf) receiver on a free 127.0.0.1 port, in a thread, until the block ends.
    With `answer`, each export waits (at most a minute) until it is set: a collector that hangs."""
    port = free_port()
    receiver = OtlpReceiver(url=f"http://127.0.0.1:{port}")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            if answer is not None:
                answer.wait(60)
            body = self.rfile.read(int(self.headers["content-length"]))
            assert self.headers["content-type"] == "application/x-protobuf"
            with receiver.lock:
                receiver.paths.append(self.path)
                if self.path == "/v1/traces":
                    receiver.traces.append(ExportTraceServiceRequest.FromString(body))
                elif self.path == "/v1/metrics":
                    receiver.metrics.append(ExportMetricsServiceRequest.FromString(body))
            self.send_response(200 if self.path in ("/v1/traces", "/v1/metrics") else 404)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # http.server's name
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        if answer is not None:
            answer.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def find_prometheus() -> Path:
    """Debian's prometheus (PATH, else /usr/bin); `make system-packages` installs it."""
    found = shutil.which("prometheus", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin"]))
    assert found, "prometheus not found: `make system-packages` installs Debian's prometheus package"
    return Path(found)


class Prometheus:
    def __init__(self, proc: subprocess.Popen[bytes], base: Path, port: int) -> None:
        self.proc = proc
        self.base = base
        self.url = f"http://127.0.0.1:{port}"

    def log_text(self) -> str:
        return (self.base / "prometheus.log").read_text(errors="replace")

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of `expr`, through Prometheus's HTTP API."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as answer:  # loopback only
            body = json.load(answer)
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_series(self, expr: str, timeout_s: float = 60) -> list[dict[str, Any]]:
        """The series of `expr` once Prometheus has scraped some (or the last empty answer)."""
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.proc.poll() is None, self.log_text()
            try:
                result = self.query(expr)
            except OSError:
                result = []
            if result or time.monotonic() > deadline:
                return result
            time.sleep(0.2)


@contextlib.contextmanager
def open_prometheus(target: str) -> Iterator[Prometheus]:
    """Prometheus scraping `target` (host:port, /metrics) every second, its API on a free loopback
    port, its data in a private directory; stopped when the block ends."""
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-prometheus-"))
    port = free_port()
    config = base / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: mcp-suite\n    static_configs:\n"
        f"      - targets: ['{target}']\n"
    )
    try:
        with (base / "prometheus.log").open("wb") as log:
            proc = subprocess.Popen(
                [
                    str(find_prometheus()),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={base / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=base,
                start_new_session=True,
            )
        running = Prometheus(proc, base, port)
        try:
            yield running
        finally:
            stop_escalating(proc, ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
