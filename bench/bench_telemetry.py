"""What traces and metrics cost (issue 45; docs/performance.md, "Telemetry").

Three servers, alternated round by round on the same machine: **before**, the package as it was
just before telemetry came (`git archive` of the parent of the commit that added
`mcp_suite/observe.py`, or BENCH_BEFORE_REV); **off**, this tree with nothing configured; **on**,
this tree exporting spans and metrics over OTLP/HTTP to a sink on 127.0.0.1 that answers at once.
Each serves 32 pings in flight, then `sandbox_fs_read` calls of a small example file 8 in flight;
the figures are requests per second and the server's CPU microseconds per request (less sensitive
to other load), medians of the rounds. The floor of "off" is "before": its ratio is what the None
checks cost.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from bench.bench_runtime import round_trips_per_second
from bench.common import INIT, REPO, SERVER_ARGV, Figure, cpu_seconds, read_lines, server_env

ROUNDS = 5
PINGS = 30_000
CALLS = 10_000


def _before_rev() -> str:
    rev = os.environ.get("BENCH_BEFORE_REV")
    if rev:
        return rev
    added = subprocess.run(
        ["git", "-C", str(REPO), "log", "--diff-filter=A", "--format=%H", "--", "mcp_suite/observe.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return f"{added[-1]}^"


@contextlib.contextmanager
def _before_tree() -> Iterator[Path]:
    """The package at the revision before telemetry, unpacked in a private directory."""
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-bench-before-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", _before_rev(), "mcp_suite"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(base, filter="data")
        subprocess.run([SERVER_ARGV[0], "-m", "compileall", "-q", str(base / "mcp_suite")], check=True)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def _otlp_sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint on 127.0.0.1 that reads each export and answers 200 at once."""

    class Sink(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _calls(n: int) -> list[bytes]:
    return [
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sandbox_fs_read",'
        b'"arguments":{"relative_path":"README.md"}}}\n' % i
        for i in range(1, n + 1)
    ]


def _drive(proc: subprocess.Popen[bytes], frames: list[bytes], in_flight: int) -> float:
    """Send `frames` keeping `in_flight` unanswered; requests per second."""
    import time

    assert proc.stdin is not None and proc.stdout is not None
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()
    buffer = bytearray()
    start = time.perf_counter()
    os.write(in_fd, b"".join(frames[:in_flight]))
    sent, received = in_flight, 0
    while received < len(frames):
        got = len(read_lines(out_fd, buffer))
        received += got
        batch = b"".join(frames[sent : sent + got])
        sent += got
        if batch:
            os.write(in_fd, batch)
    return len(frames) / (time.perf_counter() - start)


def _measure(cwd: Path, env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.Popen(
        list(SERVER_ARGV),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**env, "PYTHONPATH": str(cwd)},
        cwd=cwd,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    read_lines(proc.stdout.fileno(), bytearray())
    round_trips_per_second(proc, 2_000, 32)  # warm up
    _drive(proc, _calls(300), 8)
    cpu = cpu_seconds(proc.pid)
    pings = round_trips_per_second(proc, PINGS, 32)
    ping_cpu = cpu_seconds(proc.pid) - cpu
    calls = _drive(proc, _calls(CALLS), 8)
    call_cpu = cpu_seconds(proc.pid) - cpu - ping_cpu
    proc.stdin.close()
    proc.wait(30)
    proc.stdout.close()
    return {
        "pings": pings,
        "ping_us": ping_cpu / PINGS * 1e6,
        "calls": calls,
        "call_us": call_cpu / CALLS * 1e6,
    }


def run() -> list[Figure]:
    samples: dict[str, list[dict[str, float]]] = {"before": [], "off": [], "on": []}
    with _before_tree() as before, _otlp_sink() as endpoint:
        env = server_env(MCP_SAFE_DATA_DIR=str(REPO / "examples" / "safe_data"), MCP_METRICS_ENABLED="false")
        on = {**env, "MCP_OTEL_ENDPOINT": endpoint, "MCP_OTEL_EXPORT_INTERVAL_S": "1"}
        for _ in range(ROUNDS):
            samples["before"].append(_measure(before, env))
            samples["off"].append(_measure(REPO, env))
            samples["on"].append(_measure(REPO, on))

    def median(variant: str, key: str) -> float:
        return statistics.median(sample[key] for sample in samples[variant])

    figures = []
    for key, unit, what in (
        ("pings", "req/s", "pings, 32 in flight"),
        ("ping_us", "us CPU/req", "server CPU per ping"),
        ("calls", "calls/s", "sandbox_fs_read calls, 8 in flight"),
        ("call_us", "us CPU/call", "server CPU per sandbox_fs_read call"),
    ):
        figures.append(
            Figure(
                f"telemetry off: {what}",
                median("off", key),
                unit,
                floor=median("before", key),
                note="floor: before",
            )
        )
        figures.append(
            Figure(
                f"telemetry on (OTLP): {what}",
                median("on", key),
                unit,
                floor=median("off", key),
                note="floor: off",
            )
        )
    return figures
