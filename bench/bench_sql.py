"""read_only_sql benchmarks (docs/performance.md), against the demo cluster (started here if not running).

Through the whole server (`python -m mcp_suite` over pipes), two workloads: the small aggregate
(3 rows) and 100 rows × 7 columns. For each, the sequential p50 and p99 and the throughput with
calls in flight (32 for the aggregate, 8 for the rows); the cost of one extra row (the difference
of the two p50s over the 97 extra rows); the server's RSS under load, and cold start with all three
tools to the initialize response. Floors measured in the same run: the same query in a tight
psycopg pool loop in one process (sequential p50 and pool-size threads). Round trips per call are
counted twice: by the executor itself, and on the wire by a TCP proxy between server and PostgreSQL
(a round trip = the client speaking again after the server has answered).
"""

from __future__ import annotations

import json
import os
import select
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from bench.common import (
    INIT,
    REPO,
    Figure,
    cold_start_ms,
    cpu_seconds,
    median_seconds,
    rss_mb,
    server_env,
    spawn,
)

QUERY = "SELECT section, count(*) FROM docs.pages GROUP BY section"
# 100 rows × 7 columns: text, integers, a numeric, a computed text (the workload of a typical answer).
ROWS_QUERY = (
    "SELECT p.slug, p.editor_id, p.section, p.words, p.words * 1.5 AS weighted, g AS copy,"
    " 'text value ' || p.slug AS label FROM docs.pages p CROSS JOIN generate_series(1, 4) AS g"
    " ORDER BY p.slug, g LIMIT 100"
)
ROWS = 100
SEQUENTIAL_CALLS = 2_000
THROUGHPUT_CALLS = 10_000
IN_FLIGHT = 32
ROWS_IN_FLIGHT = 8


def _call_line(request_id: int, sql: str = QUERY, max_rows: int = ROWS) -> bytes:
    return (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "read_only_sql", "arguments": {"sql": sql, "max_rows": max_rows}},
            }
        ).encode()
        + b"\n"
    )


class _Server:
    """The real server over pipes, with a minimal line reader (no per-line checks: speed)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = spawn(env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        self._buffer = bytearray()

    def send(self, data: bytes) -> None:
        self._in.write(data)

    def read_lines(self, want: int) -> list[bytes]:
        while self._buffer.count(b"\n") < want:
            select.select([self._fd], [], [], 10)
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                raise EOFError("the server closed its output")
            self._buffer += chunk
        lines = bytes(self._buffer).split(b"\n")
        done, rest = lines[:want], lines[want:]
        self._buffer = bytearray(b"\n".join(rest))
        return done

    def initialize(self) -> None:
        self.send(INIT)
        self.read_lines(1)

    def close(self) -> None:
        self._in.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def rss_mb(self) -> float:
        return rss_mb(self.proc.pid)


@contextmanager
def _server(env: dict[str, str]) -> Iterator[_Server]:
    server = _Server(env)
    try:
        server.initialize()
        yield server
    finally:
        server.close()


def _check_ok(line: bytes, rows: int | None = None) -> None:
    message = json.loads(line)
    result = message.get("result") or {}
    if "error" in message or result.get("isError"):
        raise RuntimeError(f"benchmark call failed: {line[:300]!r}")
    if rows is not None and result["structuredContent"]["row_count"] != rows:
        raise RuntimeError(f"the benchmark query returned other than {rows} rows")


def server_sequential_ms(server: _Server, calls: int, sql: str = QUERY) -> tuple[float, float]:
    """(p50, p99) milliseconds of `calls` calls one after the other."""
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        server.send(_call_line(i + 1, sql))
        (line,) = server.read_lines(1)
        samples.append(time.perf_counter() - start)
        if i == 0:
            _check_ok(line, rows=ROWS if sql == ROWS_QUERY else None)
    cuts = statistics.quantiles(samples, n=100)
    return statistics.median(samples) * 1000, cuts[98] * 1000


def server_sequential_p50_ms(server: _Server, calls: int) -> float:
    return server_sequential_ms(server, calls)[0]


def server_ping_p50_ms(server: _Server, calls: int) -> float:
    """The runtime's own per-request cost in the same process (a `ping`, no tool, no thread)."""
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        server.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (900_000 + i))
        server.read_lines(1)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def server_throughput(server: _Server, calls: int, in_flight: int, sql: str = QUERY) -> tuple[float, float]:
    """(calls per second, peak RSS MB) with `in_flight` calls outstanding."""
    peak = [server.rss_mb()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak.append(server.rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    next_id = 100_000
    start = time.perf_counter()
    server.send(b"".join(_call_line(next_id + i, sql) for i in range(in_flight)))
    next_id += in_flight
    sent, received = in_flight, 0
    while received < calls:
        lines = server.read_lines(1)
        received += len(lines)
        if received == 1:
            _check_ok(lines[0])
        more = min(len(lines), calls - sent)
        if more > 0:
            server.send(b"".join(_call_line(next_id + i, sql) for i in range(more)))
            next_id += more
            sent += more
    elapsed = time.perf_counter() - start
    stop.set()
    sampler.join()
    return calls / elapsed, max(peak)


def floor_psycopg(dsn: str, calls: int, threads: int, sql: str = QUERY) -> tuple[float, float]:
    """(sequential p50 ms, calls/s with `threads` threads) of the bare query on a psycopg pool."""
    from psycopg_pool import ConnectionPool

    with ConnectionPool(dsn, min_size=threads, max_size=threads, kwargs={"autocommit": True}) as pool:
        pool.wait()
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            with pool.connection() as conn:
                conn.execute(sql).fetchall()
            samples.append(time.perf_counter() - start)
        per_thread = calls // threads

        def loop() -> None:
            for _ in range(per_thread):
                with pool.connection() as conn:
                    conn.execute(sql).fetchall()

        workers = [threading.Thread(target=loop) for _ in range(threads)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        rate = per_thread * threads / (time.perf_counter() - start)
    return statistics.median(samples) * 1000, rate


def executor_figures(dsn: str, calls: int) -> tuple[float, float, float]:
    """(sequential p50 ms, round trips per call, definer check µs per call) of our executor in this
    process (no server), on the tool's path: a vetted query, the definer check, the query."""
    import psycopg

    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.sql.engine.executor import CallTicket, Executor
    from mcp_suite.tools.sql.engine.policy import vet_sql

    settings = Settings(sql_dsn=SecretStr(dsn), metrics_enabled=False)
    executor = Executor(settings, dsn)
    executor.open()
    executor.mark_audited()
    vetted = vet_sql(QUERY, max_rows=50)
    try:
        for _ in range(20):
            executor.run_vetted(vetted, max_rows=50, ticket=CallTicket())
        before = executor.statistics().round_trips
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            executor.run_vetted(vetted, max_rows=50, ticket=CallTicket())
            samples.append(time.perf_counter() - start)
        trips = (executor.statistics().round_trips - before) / calls
        with psycopg.connect(dsn, autocommit=True) as conn:  # the check's reads, on a connection of its own
            check = executor.definers.check
            loops = 10_000
            seconds = median_seconds(
                lambda: [check(conn, vetted.functions, vetted.operators) for _ in range(loops)], runs=5
            )
    finally:
        executor.close()
    return statistics.median(samples) * 1000, trips, seconds / loops * 1e6


def pooler_ab(dsn: str, sql: str, *, rounds: int = 6, calls: int = 300) -> tuple[float, float]:
    """(p50 ms with the settings set once per connection, p50 ms with them set in every call) of
    `Executor.run_vetted` in this process: `MCP_SQL_POOLER=none` against `transaction`, the same
    query, rounds interleaved (ABBA), each figure the median of its rounds' p50s."""
    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.sql.engine.executor import CallTicket, Executor
    from mcp_suite.tools.sql.engine.policy import vet_sql

    vetted = vet_sql(sql, max_rows=200)
    executors = {}
    for mode in ("none", "transaction"):
        settings = Settings(
            sql_dsn=SecretStr(dsn), metrics_enabled=False, sql_pooler=mode, sql_max_result_bytes=1 << 20
        )
        executors[mode] = Executor(settings, dsn)
        executors[mode].open()
        executors[mode].mark_audited()
    p50s: dict[str, list[float]] = {"none": [], "transaction": []}
    try:
        for executor in executors.values():
            for _ in range(50):
                executor.run_vetted(vetted, max_rows=200, ticket=CallTicket())
        for index in range(rounds):
            order = ("none", "transaction") if index % 4 in (0, 3) else ("transaction", "none")
            for mode in order:
                samples = []
                for _ in range(calls):
                    start = time.perf_counter()
                    executors[mode].run_vetted(vetted, max_rows=200, ticket=CallTicket())
                    samples.append(time.perf_counter() - start)
                p50s[mode].append(statistics.median(samples) * 1000)
    finally:
        for executor in executors.values():
            executor.close()
    return statistics.median(p50s["none"]), statistics.median(p50s["transaction"])


class _CountingProxy:
    """A loopback TCP proxy counting round trips: client bytes after server bytes = one trip."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.trips = 0
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream))
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            state = {"last": "server"}
            threading.Thread(target=self._pump, args=(client, upstream, state, "client"), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, state, "server"), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, state: dict[str, str], side: str) -> None:
        try:
            while data := src.recv(1 << 16):
                with self._lock:
                    if side == "client" and state["last"] == "server":
                        self.trips += 1
                    state["last"] = side
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed = True
        self._listener.close()


def wire_round_trips_per_call(dsn: str, upstream_port: int, calls: int = 200) -> float:
    from psycopg.conninfo import make_conninfo

    proxy = _CountingProxy(upstream_port)
    try:
        env = server_env(
            MCP_SQL_DSN=make_conninfo(dsn, port=proxy.port),
            MCP_METRICS_ENABLED="false",
            MCP_SQL_POOL_MIN_SIZE="1",
            MCP_SQL_POOL_MAX_SIZE="1",
        )
        with _server(env) as server:
            server_sequential_p50_ms(server, 20)  # warm: the pool's connection exists
            before = proxy.trips
            server_sequential_p50_ms(server, calls)
            return (proxy.trips - before) / calls
    finally:
        proxy.close()


def run() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        return _figures(cluster.reader_dsn, cluster.port)
    finally:
        if started_here:
            cluster.stop()


def _figures(dsn: str, port: int) -> list[Figure]:
    figures: list[Figure] = []
    floor_p50, floor_rate = floor_psycopg(dsn, SEQUENTIAL_CALLS, threads=4)
    rows_floor_p50, rows_floor_rate = floor_psycopg(dsn, SEQUENTIAL_CALLS, threads=4, sql=ROWS_QUERY)
    exec_p50, exec_trips, check_us = executor_figures(dsn, SEQUENTIAL_CALLS)
    env = server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false")
    with _server(env) as server:
        server_sequential_p50_ms(server, 100)  # warm-up
        ping = server_ping_p50_ms(server, SEQUENTIAL_CALLS)
        cpu_before = cpu_seconds(server.proc.pid)
        p50, p99 = server_sequential_ms(server, SEQUENTIAL_CALLS)
        cpu_per_call = (cpu_seconds(server.proc.pid) - cpu_before) / SEQUENTIAL_CALLS * 1000
        rate, rss = server_throughput(server, THROUGHPUT_CALLS, IN_FLIGHT)
        server_sequential_ms(server, 100, ROWS_QUERY)  # warm-up
        cpu_before = cpu_seconds(server.proc.pid)
        rows_p50, rows_p99 = server_sequential_ms(server, SEQUENTIAL_CALLS, ROWS_QUERY)
        rows_cpu = (cpu_seconds(server.proc.pid) - cpu_before) / SEQUENTIAL_CALLS * 1000
        rows_rate, rows_rss = server_throughput(server, THROUGHPUT_CALLS // 4, ROWS_IN_FLIGHT, ROWS_QUERY)
    per_row_us = (rows_p50 - p50) / (ROWS - 3) * 1000
    floor_per_row_us = (rows_floor_p50 - floor_p50) / (ROWS - 3) * 1000
    wire_trips = wire_round_trips_per_call(dsn, port)
    all_tools = server_env(MCP_SQL_DSN=dsn)
    safe = REPO / "examples" / "safe_data"
    if safe.is_dir():
        all_tools["MCP_SAFE_DATA_DIR"] = str(safe)
    cold = cold_start_ms(all_tools, runs=7)
    figures.append(
        Figure(
            "sql: server sequential p50 (small aggregate)",
            p50,
            "ms",
            target="<= 1.0 ms",
            ok=p50 <= 1.0,
            floor=floor_p50,
        )
    )
    figures.append(
        Figure(
            f"sql: server throughput, {IN_FLIGHT} in flight",
            rate,
            "calls/s",
            target=">= 2,500 calls/s",
            ok=rate >= 2_500,
            floor=floor_rate,
            note="floor: bare query, psycopg pool, 4 threads",
        )
    )
    figures.append(Figure("sql: server sequential p99 (small aggregate)", p99, "ms"))
    figures.append(
        Figure("sql: server sequential p50 (100 rows × 7 columns)", rows_p50, "ms", floor=rows_floor_p50)
    )
    figures.append(Figure("sql: server sequential p99 (100 rows × 7 columns)", rows_p99, "ms"))
    figures.append(
        Figure(
            f"sql: server throughput, 100 rows, {ROWS_IN_FLIGHT} in flight",
            rows_rate,
            "calls/s",
            floor=rows_floor_rate,
            note="floor: bare query, psycopg pool, 4 threads",
        )
    )
    figures.append(
        Figure(
            "sql: cost of one more row (p50 slope, 3 → 100 rows)",
            per_row_us,
            "µs",
            floor=floor_per_row_us,
            note="floor: the same slope of the bare psycopg query",
        )
    )
    figures.append(Figure("sql: server CPU per sequential call (100 rows)", rows_cpu, "ms"))
    figures.append(
        Figure("sql: executor sequential p50 (in-process, no server)", exec_p50, "ms", floor=floor_p50)
    )
    figures.append(
        Figure(
            "sql: definer check per call (hot path, cache fresh)",
            check_us,
            "µs",
            floor=exec_p50 * 1000,
            note="ratio = its share of the executor p50",
        )
    )
    for label, sql in (("small aggregate", QUERY), ("100 rows × 7 columns", ROWS_QUERY)):
        direct_p50, pooled_p50 = pooler_ab(dsn, sql)
        figures.append(
            Figure(
                f"sql: executor p50, settings once per connection ({label})",
                direct_p50,
                "ms",
                floor=pooled_p50,
                note="floor: the same executor with MCP_SQL_POOLER=transaction, interleaved",
            )
        )
    figures.append(Figure("sql: server ping p50 (runtime alone, same process)", ping, "ms"))
    figures.append(Figure("sql: server CPU per sequential call", cpu_per_call, "ms"))
    figures.append(
        Figure(
            "sql: round trips per call (executor count)",
            exec_trips,
            "trips",
            target="1",
            ok=exec_trips <= 1.0,
        )
    )
    figures.append(
        Figure(
            "sql: round trips per call (on the wire, proxy)",
            wire_trips,
            "trips",
            target="1",
            ok=wire_trips <= 1.0,
        )
    )
    peak = max(rss, rows_rss)
    figures.append(Figure("sql: server RSS under load", peak, "MB", target="<= 80 MB", ok=peak <= 80))
    figures.append(
        Figure(
            "sql: cold start, all three tools, to initialize response",
            cold,
            "ms",
            target="<= 400 ms",
            ok=cold <= 400,
        )
    )
    return figures


def _main() -> None:
    for figure in run():
        sys.stdout.write(figure.line() + "\n")


if __name__ == "__main__":
    _main()
