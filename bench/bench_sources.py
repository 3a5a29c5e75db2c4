"""Several databases behind one server (issue 43, docs/performance.md "Sources"), against the demo
cluster (started here if not running), whose two databases are the demo's sources `docs` and `ops`.

1. **One source through the configuration file against `MCP_SQL_DSN`**: the same database, role
   and pool, the one named `docs` in a file (`MCP_CONFIG`, its password in a file of mode 0600),
   the other given as today's single DSN. Both servers run at once; in each round each answers a
   block of sequential `read_only_sql` calls (the small aggregate of bench_sql), in turned order
   (A B, B A, ...), so a slow moment of the machine falls on both. Figures: the median over the
   rounds of each block's p50 and of the server's CPU per call; the DSN server is the floor.
2. **An extra idle source**: the RSS of a server whose file names `docs` alone against one naming
   `docs` and `ops`, after the same warm-up (the start-up warm-up of every source, then calls to
   `docs` only), started afresh in turned order each round; the one-source server is the floor.
   Also the backends the idle source keeps open in PostgreSQL once its warm-up is done.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.bench_sql import QUERY, _Server
from bench.common import Figure, cpu_seconds, server_env

ROUNDS = 8
BLOCK_CALLS = 600  # sequential calls per server per round
WARM_CALLS = 200
MEMORY_ROUNDS = 4
SETTLE_S = 1.5  # after the warm-up calls: the idle source's warm-up (its audit) has long finished
SETTLE_POLLS = 20  # then RSS is read until two readings 0.1 s apart agree (at most this many)


def _call_line(request_id: int, source: str | None) -> bytes:
    arguments: dict[str, object] = {"sql": QUERY, "max_rows": 100}
    if source is not None:
        arguments["source"] = source
    params = {"name": "read_only_sql", "arguments": arguments}
    call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(call).encode() + b"\n"


class _Variant:
    """One running server and the `source` its calls name (None: the single DSN's, unnamed)."""

    def __init__(self, env: dict[str, str], source: str | None) -> None:
        self.server = _Server(env)
        self.source = source
        self._next_id = 1
        self.server.initialize()

    def block(self, calls: int) -> tuple[float, float]:
        """(p50 ms, server CPU ms per call) of `calls` sequential calls."""
        samples = []
        cpu_before = cpu_seconds(self.server.proc.pid)
        for _ in range(calls):
            start = time.perf_counter()
            self.server.send(_call_line(self._next_id, self.source))
            (line,) = self.server.read_lines(1)
            samples.append(time.perf_counter() - start)
            if self._next_id == 1:
                _check(line)
            self._next_id += 1
        cpu = (cpu_seconds(self.server.proc.pid) - cpu_before) / calls * 1000
        return statistics.median(samples) * 1000, cpu

    def settled_rss_mb(self) -> float:
        time.sleep(SETTLE_S)
        last = self.server.rss_mb()
        for _ in range(SETTLE_POLLS):
            time.sleep(0.1)
            now = self.server.rss_mb()
            if abs(now - last) < 0.1:
                return now
            last = now
        return last

    def close(self) -> None:
        self.server.close()


def _check(line: bytes) -> None:
    message = json.loads(line)
    result = message.get("result") or {}
    if "error" in message or result.get("isError") or result["structuredContent"]["row_count"] != 3:
        raise RuntimeError(f"benchmark call failed: {line[:300]!r}")


@contextmanager
def _variants(*envs: tuple[dict[str, str], str | None]) -> Iterator[list[_Variant]]:
    started: list[_Variant] = []
    try:
        for env, source in envs:
            started.append(_Variant(env, source))
        yield started
    finally:
        for variant in started:
            variant.close()


def file_against_dsn(
    dsn: str, one_source: Path
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    """((p50 ms, CPU ms/call) through the file, the same through `MCP_SQL_DSN`: medians of rounds;
    the range of the rounds' p50 ratios, file to DSN)."""
    by_file = server_env(MCP_CONFIG=str(one_source), MCP_METRICS_ENABLED="false")
    by_dsn = server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false")
    taken: dict[str, list[tuple[float, float]]] = {"file": [], "dsn": []}
    with _variants((by_file, "docs"), (by_dsn, None)) as (file_server, dsn_server):
        servers = {"file": file_server, "dsn": dsn_server}
        for server in servers.values():
            server.block(WARM_CALLS)
        for index in range(ROUNDS):
            order = ("file", "dsn") if index % 4 in (0, 3) else ("dsn", "file")
            for name in order:
                taken[name].append(servers[name].block(BLOCK_CALLS))

    def medians(name: str) -> tuple[float, float]:
        return (
            statistics.median(p50 for p50, _ in taken[name]),
            statistics.median(cpu for _, cpu in taken[name]),
        )

    ratios = [f[0] / d[0] for f, d in zip(taken["file"], taken["dsn"], strict=True)]
    return medians("file"), medians("dsn"), (min(ratios), max(ratios))


def idle_source_rss(
    one_source: Path, two_sources: Path, admin_dsn: str
) -> tuple[list[float], list[float], float]:
    """(RSS MB of each start with one source, the same with an extra idle source, the idle
    source's backends: median)."""
    import psycopg

    rss: dict[str, list[float]] = {"one": [], "two": []}
    backends: list[int] = []
    files = {"one": one_source, "two": two_sources}
    for index in range(MEMORY_ROUNDS):
        for name in ("one", "two") if index % 2 == 0 else ("two", "one"):
            env = server_env(MCP_CONFIG=str(files[name]), MCP_METRICS_ENABLED="false")
            with _variants((env, "docs")) as (variant,):
                variant.block(WARM_CALLS)
                rss[name].append(variant.settled_rss_mb())
                if name == "two":
                    with psycopg.connect(admin_dsn, autocommit=True) as conn:
                        row = conn.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'mcp_ops_reader'"
                        ).fetchone()
                    backends.append(int(row[0]) if row else 0)
    return rss["one"], rss["two"], statistics.median(backends)


def run() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster
    from mcp_suite.demo.sources_file import write_sources_file

    cluster, started_here = open_demo_cluster()
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-suite-bench-sources-") as tmp:
            one, two = Path(tmp, "one"), Path(tmp, "two")
            one.mkdir(mode=0o700)
            two.mkdir(mode=0o700)
            one_source = write_sources_file(cluster, {}, directory=one, names=("docs",))
            two_sources = write_sources_file(cluster, {}, directory=two)
            (file_p50, file_cpu), (dsn_p50, dsn_cpu), (low, high) = file_against_dsn(
                cluster.reader_dsn, one_source
            )
            ones, twos, backends = idle_source_rss(one_source, two_sources, cluster.admin_dsn)
    finally:
        if started_here:
            cluster.stop()
    interleaved = f"{ROUNDS} interleaved rounds of {BLOCK_CALLS} calls, medians"
    rss_one, rss_two = statistics.median(ones), statistics.median(twos)
    starts = f"one {min(ones):.1f}–{max(ones):.1f}, two {min(twos):.1f}–{max(twos):.1f} MB"
    return [
        Figure(
            "sources: one source through the file, sequential p50",
            file_p50,
            "ms",
            floor=dsn_p50,
            note=f"floor: the same database as MCP_SQL_DSN, {interleaved}; rounds ×{low:.2f}–{high:.2f}",
        ),
        Figure(
            "sources: one source through the file, server CPU per call",
            file_cpu,
            "ms",
            floor=dsn_cpu,
            note=f"floor: the same as MCP_SQL_DSN, {interleaved}",
        ),
        Figure(
            "sources: server RSS with an extra idle source",
            rss_two,
            "MB",
            floor=rss_one,
            note=f"floor: one source; after warm-up, medians of {MEMORY_ROUNDS} starts each",
        ),
        Figure("sources: RSS an extra idle source takes", rss_two - rss_one, "MB", note=f"starts: {starts}"),
        Figure("sources: backends the idle source holds after warm-up", backends, "connections"),
    ]


def _main() -> None:
    for figure in run():
        sys.stdout.write(figure.line() + "\n")


if __name__ == "__main__":
    _main()
