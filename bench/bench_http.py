"""Over HTTP, side by side with DBHub (docs/performance.md, "HTTP"): the peers' two queries through
`mcp-suite serve-http` and through DBHub 1.x's HTTP transport, at 1, 8 and 32 clients.

Both servers run on loopback without authorization (DBHub's default; this server's
`MCP_HTTP_AUTH=none`, which it allows on loopback only), against the bench's cluster with the same
read-only role and the same `tools/call` bodies (MCP 2026-07-28, stateless: one POST per call, the
same body every time). Each server is pinned to one CPU, the load generator (`bench/http_client.py`,
one thread, plain sockets) to the others. Per server, workload and number of clients: p50 and p99,
calls/s by the wall clock, calls per CPU second of the server's process (psutil), and the client's
own CPU per call. Servers take turns round by round as in `bench_peers`; figures are medians of the
rounds, and each is printed as ours ÷ DBHub's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any, Final

import psutil

from bench.bench_peers import (
    WORKLOADS,
    Workload,
    check_answer,
    connections_unlimited,
    looks_failed,
    peers_home,
    percentile,
    url_dsn,
)
from bench.common import REPO, SERVER_ARGV, Figure, off_the_cpus_of, server_env
from bench.http_client import HttpResponse, drive, post_request
from tests.support.issuer import TestIssuer, open_issuer

ROUNDS: Final = 3
CLIENTS: Final = (1, 8, 32)
CALLS: Final = {1: 400, 8: 1_500, 32: 2_000}  # timed calls per series, after each client's first
WARM_UP_CALLS: Final = 200  # per server and workload, 8 clients, before the timed series
MODERN_VERSION: Final = "2026-07-28"
HOST: Final = "127.0.0.1"
PATH: Final = "/mcp"

OURS: Final = "mcp-suite serve-http"
DBHUB: Final = "dbhub 1.4.0 --transport http"
OURS_JWT: Final = "mcp-suite serve-http, bearer JWTs"
# The same with MCP_HTTP_TOKEN_CACHE_SIZE=0: every request's signature checked (what the cache saves).
OURS_JWT_UNCACHED: Final = "mcp-suite serve-http, bearer JWTs, every signature checked"


# --- the figures (pure) -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    """One server, one workload, one number of clients, one round."""

    p50_ms: float
    p99_ms: float
    rate: float  # calls/s by the wall clock
    per_core: float  # calls per CPU second of the server's process (user + system)
    client_us: float  # the load generator's CPU per call
    client_busy: float  # the load generator's CPU time ÷ the wall time (1.0: it was the limit)


def sample_of(
    latencies_ms: Sequence[float], wall_s: float, server_cpu_s: float, client_cpu_s: float
) -> Sample:
    calls = len(latencies_ms)
    return Sample(
        p50_ms=percentile(latencies_ms, 50),
        p99_ms=percentile(latencies_ms, 99),
        rate=calls / wall_s,
        per_core=calls / server_cpu_s if server_cpu_s > 0 else float("inf"),
        client_us=client_cpu_s / calls * 1e6,
        client_busy=client_cpu_s / wall_s,
    )


def median_sample(rounds: Sequence[Sample]) -> Sample:
    """Each figure's median over the rounds."""
    return Sample(*(statistics.median(getattr(s, f.name) for s in rounds) for f in fields(Sample)))


Level = tuple[Workload, int]  # a workload and a number of clients
Results = dict[str, dict[Level, Sample]]  # server -> level -> medians of the rounds
LEVELS: Final = tuple((w, n) for w in WORKLOADS for n in CLIENTS)


@dataclass(frozen=True, slots=True)
class Row:
    figure: str
    unit: str
    value: Callable[[Sample], float]
    digits: int


ROWS: Final = (
    Row("p50", "ms", lambda s: s.p50_ms, 2),
    Row("p99", "ms", lambda s: s.p99_ms, 2),
    Row("calls/s", "", lambda s: s.rate, 0),
    Row("calls/s per core", "", lambda s: s.per_core, 0),
)
# (heading, server, against): the ratio columns
RATIOS: Final = (
    ("ours ÷ DBHub's", OURS, DBHUB),
    ("with JWTs ÷ DBHub's", OURS_JWT, DBHUB),
    ("with JWTs ÷ without", OURS_JWT, OURS),
    ("token cache ÷ none", OURS_JWT, OURS_JWT_UNCACHED),
)


def level_name(level: Level) -> str:
    workload, clients = level
    return f"{workload.label}, {clients} client{'s' if clients > 1 else ''}"


def render_table(results: Results) -> str:
    """The side-by-side table (Markdown): per workload, clients and figure, each server's median
    and the ratios of `RATIOS`."""
    servers = (OURS, DBHUB, OURS_JWT, OURS_JWT_UNCACHED)
    head = ["workload, clients", "figure", *servers, *(heading for heading, _, _ in RATIOS)]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for level in LEVELS:
        for row in ROWS:
            value = {name: row.value(results[name][level]) for name in servers}
            suffix = f" {row.unit}" if row.unit else ""
            cells = [level_name(level), row.figure]
            cells += [f"{value[name]:,.{row.digits}f}{suffix}" for name in servers]
            cells += [f"{value[a] / value[b]:.2f}" for _, a, b in RATIOS]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_figures(results: Results, note: str) -> list[Figure]:
    """Per level, ours ÷ DBHub's: calls/s per core and by the wall clock (higher is better), p50
    and p99 (lower is better); then what the JWT check costs: calls/s per core with JWTs ÷
    without; then what the token cache saves: with it ÷ with every signature checked.
    Informational: the issue sets no target over HTTP."""
    figures = []
    for level in LEVELS:
        a, b = results[OURS][level], results[DBHUB][level]
        for name, mine, theirs in (
            ("calls/s per core", a.per_core, b.per_core),
            ("calls/s", a.rate, b.rate),
            ("p50", a.p50_ms, b.p50_ms),
            ("p99", a.p99_ms, b.p99_ms),
        ):
            figures.append(
                Figure(
                    f"http, no auth on loopback: {level_name(level)}: {name} ÷ DBHub's",
                    mine / theirs,
                    "x",
                    note=note,
                )
            )
    for level in LEVELS:
        with_jwt = results[OURS_JWT][level].per_core / results[OURS][level].per_core
        figures.append(
            Figure(f"http, bearer JWTs: {level_name(level)}: calls/s per core ÷ without", with_jwt, "x")
        )
    for level in LEVELS:
        cached = results[OURS_JWT][level].per_core / results[OURS_JWT_UNCACHED][level].per_core
        figures.append(
            Figure(
                f"http, bearer JWTs: {level_name(level)}: calls/s per core, token cache ÷ none", cached, "x"
            )
        )
    return figures


def client_figures(results: Results) -> list[Figure]:
    """What the load generator cost: its CPU per call and its busiest share of a CPU, over all runs."""
    samples = [s for by_level in results.values() for s in by_level.values()]
    return [
        Figure("http: load generator CPU per call, most", max(s.client_us for s in samples), "µs"),
        Figure("http: load generator busy share of its CPU, most", max(s.client_busy for s in samples), ""),
    ]


def call_body(tool: str, arguments: dict[str, Any]) -> bytes:
    """A stateless (2026-07-28) `tools/call`: its version and capabilities ride in `_meta`."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": arguments, "_meta": meta}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def call_request(port: int, tool: str, arguments: dict[str, Any], token: str | None = None) -> bytes:
    """The whole POST of one call, with the headers that mirror the body (2026-07-28)."""
    bearer = [("Authorization", f"Bearer {token}")] if token else []
    headers = [
        *bearer,
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", MODERN_VERSION),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ]
    return post_request(HOST, port, PATH, headers, call_body(tool, arguments))


def answer_line(response: HttpResponse) -> bytes:
    """The JSON-RPC answer of a response: its JSON body, or the last `data:` of an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.body.splitlines() if line.startswith(b"data:")]
        return data[-1] if data else b""
    return response.body


# --- the servers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def pinned_thread(cpu: int | None) -> Iterator[None]:
    """This thread (Linux: affinity is per thread) on `cpu` alone while the block runs; a process
    it starts meanwhile, and every thread that process starts, stays on that CPU."""
    if cpu is None:
        yield
        return
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, mine)


class HttpServer:
    """A server process listening on a loopback port, pinned to `cpu`, stopped with SIGTERM."""

    def __init__(
        self, name: str, argv: Sequence[str], env: dict[str, str], port: int, cpu: int | None
    ) -> None:
        self.name = name
        self.port = port
        self._errlog: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by close()

        with pinned_thread(cpu):  # a child inherits the CPUs of the thread that started it
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._errlog,
                env=env,
                cwd=REPO,
            )
        self.pid = self.proc.pid
        self._process = psutil.Process(self.pid)
        try:
            self._wait_listening()
        except BaseException:
            self.close()
            raise

    def _wait_listening(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}): {self.stderr_tail()}")
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), timeout=1):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not listen within {timeout_s} s: {self.stderr_tail()}")
            time.sleep(0.05)

    def stderr_tail(self) -> str:
        self._errlog.seek(0)
        return self._errlog.read()[-2_000:].decode(errors="replace")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server's process and its children (psutil)."""
        total = 0.0
        for member in [self._process, *self._process.children(recursive=True)]:
            with contextlib.suppress(Exception):  # a child gone meanwhile
                times = member.cpu_times()
                total += times.user + times.system
        return total

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._errlog.close()


@dataclass(frozen=True, slots=True)
class Contender:
    name: str
    open: Callable[[], HttpServer]
    requests: Callable[[int, Workload], list[bytes]]  # port, workload -> each client's POST


def server_cpu() -> int | None:
    """The CPU both servers are pinned to (the last this process may use); None without affinity."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def contenders(dsn: str, scratch: Path, issuer: TestIssuer) -> list[Contender]:
    """DBHub, this server without authorization (the pair compared), and this server with bearer
    JWTs of `issuer`, one subject (and token) per client, once with its token cache and once
    checking every signature (informational: what the check costs, and what the cache saves)."""
    home = peers_home() / "node_modules"
    config = scratch / "dbhub.toml"
    config.write_text(
        f'[[sources]]\nid = "default"\ndsn = {json.dumps(url_dsn(dsn))}\n\n'
        '[[tools]]\nname = "execute_sql"\nsource = "default"\nreadonly = true\n'
    )
    cpu = server_cpu()
    ours_env = server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false", MCP_HTTP_HOST=HOST)

    def ours() -> HttpServer:
        port = free_port()
        env = {
            **ours_env,
            "MCP_HTTP_PORT": str(port),
            "MCP_HTTP_AUTH": "none",
            # With no authorization every caller is one identity (`anonymous`); the bench's clients
            # stand for as many callers, each of whom a token would give a budget of its own.
            "MCP_HTTP_MAX_REQUESTS_PER_IDENTITY": str(max(CLIENTS)),
        }
        return HttpServer(OURS, [*SERVER_ARGV, "serve-http"], env, port, cpu)

    def ours_jwt(name: str, **extra: str) -> HttpServer:
        port = free_port()
        env = {
            **ours_env,
            "MCP_HTTP_PORT": str(port),
            "MCP_HTTP_RESOURCE_URI": resource_uri(port),
            "MCP_HTTP_ISSUER": issuer.issuer,
            "MCP_HTTP_JWKS_URL": issuer.jwks_url,
            **extra,
        }
        return HttpServer(name, [*SERVER_ARGV, "serve-http"], env, port, cpu)

    def dbhub() -> HttpServer:
        port = free_port()
        node = str(home / "node22/bin/node")
        argv = [node, str(home / "dbhub1/dist/index.js"), "--transport", "http", "--host", HOST]
        argv += ["--port", str(port), "--config", str(config)]
        return HttpServer(DBHUB, argv, server_env(), port, cpu)

    def our_calls(port: int, w: Workload) -> list[bytes]:
        return [call_request(port, "read_only_sql", {"sql": w.sql, "max_rows": w.rows})]

    def our_calls_with_tokens(port: int, w: Workload) -> list[bytes]:
        arguments = {"sql": w.sql, "max_rows": w.rows}
        tokens = [
            issuer.token(resource_uri(port), sub=f"bench-client-{i}", scope="sql:read", expires_in=900)
            for i in range(max(CLIENTS))
        ]
        return [call_request(port, "read_only_sql", arguments, token) for token in tokens]

    def dbhub_calls(port: int, w: Workload) -> list[bytes]:
        return [call_request(port, "execute_sql", {"sql": w.sql})]

    return [
        Contender(OURS, ours, our_calls),
        Contender(DBHUB, dbhub, dbhub_calls),
        Contender(OURS_JWT, lambda: ours_jwt(OURS_JWT), our_calls_with_tokens),
        Contender(
            OURS_JWT_UNCACHED,
            lambda: ours_jwt(OURS_JWT_UNCACHED, MCP_HTTP_TOKEN_CACHE_SIZE="0"),
            our_calls_with_tokens,
        ),
    ]


def resource_uri(port: int) -> str:
    return f"http://{HOST}:{port}{PATH}"


# --- the run ------------------------------------------------------------------------------------


def checker(name: str, workload: Workload) -> Callable[[HttpResponse], None]:
    """Every answer a 200 without an error at a glance; the first of each series read in full."""
    seen = [0]

    def check(response: HttpResponse) -> None:
        line = answer_line(response)
        if response.status != 200 or seen[0] == 0 or looks_failed(line):
            if response.status != 200:
                raise RuntimeError(f"{name}: HTTP {response.status}: {response.body[:300]!r}")
            check_answer(name, workload, line)
        seen[0] += 1

    return check


def measure(contender: Contender, server: HttpServer, workload: Workload, clients: int, calls: int) -> Sample:
    requests = contender.requests(server.port, workload)
    address = (HOST, server.port)
    with off_the_cpus_of(server.pid):
        before = server.cpu_seconds()
        run = drive(address, requests, clients, calls, checker(contender.name, workload))
        cpu = server.cpu_seconds() - before
    return sample_of(run.latencies_ms, run.wall_s, cpu, run.client_cpu_s)


def run_rounds(
    line_up: Sequence[Contender],
    rounds: int = ROUNDS,
    calls: dict[int, int] = CALLS,
    warm_up: int = WARM_UP_CALLS,
) -> Results:
    taken: dict[str, dict[Level, list[Sample]]] = {c.name: {lv: [] for lv in LEVELS} for c in line_up}
    for r in range(rounds):
        for contender in [*line_up[r % len(line_up) :], *line_up[: r % len(line_up)]]:
            server = contender.open()
            try:
                for workload in WORKLOADS:
                    measure(contender, server, workload, 8, warm_up)
                    for clients in CLIENTS:
                        sample = measure(contender, server, workload, clients, calls[clients])
                        taken[contender.name][(workload, clients)].append(sample)
            finally:
                server.close()
        print(f"round {r + 1} of {rounds} done", flush=True)
    return {name: {lv: median_sample(s) for lv, s in by.items()} for name, by in taken.items()}


def machine_note(cpus: int, load: float) -> str:
    """The CPUs and the load average (1 min) the figures were taken with: a load over half the
    CPUs before the run starts marks the figures as taken on a busy machine."""
    busy = ", BUSY" if load > cpus / 2 else ""
    return f"{cpus} CPUs, load {load:.1f} at the start{busy}"


def run() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster

    note = machine_note(os.cpu_count() or 1, os.getloadavg()[0])
    cluster, started_here = open_demo_cluster()
    try:
        with (
            tempfile.TemporaryDirectory() as scratch,
            connections_unlimited(cluster.admin_dsn),
            open_issuer() as issuer,
        ):
            line_up = contenders(cluster.reader_dsn, Path(scratch), issuer)
            results = run_rounds(line_up)
    finally:
        if started_here:
            cluster.stop()
    print(f"medians of {ROUNDS} interleaved rounds; same cluster, role and queries; {note}")
    print(f"load at the end {os.getloadavg()[0]:.1f}; servers pinned to CPU {server_cpu()}\n")
    print(render_table(results) + "\n", flush=True)
    return ratio_figures(results, note) + client_figures(results)
