"""Where a read_only_sql call's time goes, stage by stage, for both bench_sql workloads.

In one process (no server), each stage of the tool's result path is timed on every call, in CPU
time of the thread that runs it (steady on a shared machine, unlike wall time): the executor's
round trip (`pipeline.run_pipeline`; its wall time too, the rest of which is waiting for
PostgreSQL), the rows through psycopg's loaders (`result.load_rows`, a generator) with the JSON rows
and their exact size check (`result.json_rows`, which asks for each row and writes its JSON once,
the two timed together), the rest of the executor (pool,
definer check, type names, ticket), the `structuredContent` spliced around the rows' JSON
(`models.result_json`), the frame with the text copy, and the audit record. Then the whole server
over pipes, sequential: its CPU per call, less those stages, is the runtime (reading, the session,
the thread hand-off, writing). The floor is the bare query on a psycopg pool
(`execute().fetchall()`), its CPU per call and its p50. Medians of per-call microseconds; the
per-row figures are (100-row − 3-row) / 97.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.bench_sql import QUERY, ROWS, ROWS_QUERY, _server, server_sequential_ms
from bench.common import Figure, cpu_seconds, server_env

CALLS = 1_500
WORKLOADS = (("3 rows", QUERY), ("100 rows", ROWS_QUERY))


@contextlib.contextmanager
def _timing(module: Any, name: str, samples: list[float]) -> Iterator[None]:
    """Time every call of the function `module.name` (a public name the executor calls)."""
    original: Callable[..., Any] = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            samples.append(time.thread_time() - start)

    setattr(module, name, timed)
    try:
        yield
    finally:
        setattr(module, name, original)


def _stages(dsn: str, sql: str) -> dict[str, float]:
    """Median µs per call of each in-process stage of one workload."""
    import mcp_suite.tools.sql.engine.executor as executor_module
    from mcp_suite.protocol.jsonrpc import encode_tool_success
    from mcp_suite.runtime import log_sink
    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.sql.engine.policy import vet_sql
    from mcp_suite.tools.sql.read_only_sql.tool import result_json
    from mcp_suite.tools.sql.statement_log import log_statement

    executor = executor_module.Executor(Settings(sql_dsn=SecretStr(dsn), metrics_enabled=False), dsn)
    executor.open()
    executor.mark_audited()
    vetted = vet_sql(sql, max_rows=ROWS)
    # `load_rows` yields each row as `json_rows` asks for it: its loaders run inside `json_rows`.
    names = ("run_pipeline", "json_rows")
    inner: dict[str, list[float]] = {name: [] for name in names}
    outer: dict[str, list[float]] = {"call": [], "json": [], "frame": [], "audit": []}
    waits: list[float] = []
    with open(os.devnull, "w") as devnull, contextlib.ExitStack() as stack:
        log_sink.configure_logging("INFO", devnull)
        stack.callback(log_sink.shutdown_logging)
        stack.callback(executor.close)
        for name in names:
            stack.enter_context(_timing(executor_module, name, inner[name]))
        for i in range(CALLS + 200):
            wall = time.perf_counter()
            start = time.thread_time()
            result = executor.run_vetted(vetted, max_rows=ROWS, ticket=executor_module.CallTicket())
            t_call = time.thread_time()
            waits.append(time.perf_counter() - wall - (t_call - start))
            data = result_json(
                [(c.name, c.type) for c in result.columns],
                result.rows_json,
                row_count=len(result.rows),
                truncated=result.truncated,
            )
            t_json = time.thread_time()
            encode_tool_success(i, data)
            t_frame = time.thread_time()
            log_statement(tool="read_only_sql", sql=sql, outcome="ok", started=wall, rows=len(result.rows))
            t_audit = time.thread_time()
            for key, seconds in (
                ("call", t_call - start),
                ("json", t_json - t_call),
                ("frame", t_frame - t_json),
                ("audit", t_audit - t_frame),
            ):
                outer[key].append(seconds)

    def median_us(samples: list[float]) -> float:
        return statistics.median(samples[200:]) * 1e6

    stages = {name: median_us(samples) for name, samples in inner.items()}
    stages["rest of the executor"] = median_us(outer["call"]) - sum(stages.values())
    stages.update({key: median_us(outer[key]) for key in ("json", "frame", "audit")})
    stages["waiting"] = median_us(waits)
    return stages


def _floor(dsn: str, sql: str) -> tuple[float, float]:
    """(CPU µs per call, p50 µs) of the bare query on a one-connection psycopg pool."""
    from psycopg_pool import ConnectionPool

    with ConnectionPool(dsn, min_size=1, max_size=1, kwargs={"autocommit": True}) as pool:
        pool.wait()
        samples = []
        cpu = time.process_time()
        for _ in range(CALLS):
            start = time.perf_counter()
            with pool.connection() as conn:
                conn.execute(sql).fetchall()
            samples.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu
    return cpu / CALLS * 1e6, statistics.median(samples) * 1e6


_LABELS = {
    "run_pipeline": "the round trip (libpq pipeline, its bytes counted as they arrive)",
    "json_rows": "rows through psycopg's loaders, JSON rows and their exact size check, row by row",
    "rest of the executor": "rest of the executor (pool, definer check, type names)",
    "json": "structuredContent spliced around the rows' JSON (no model, no validation)",
    "frame": "frame with the text copy",
    "audit": "audit record (when the audit trail is on)",
    "waiting": "waiting for PostgreSQL (the round trip's wall time less CPU)",
}


def run() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        return _figures(cluster.reader_dsn)
    finally:
        if started_here:
            cluster.stop()


def _figures(dsn: str) -> list[Figure]:
    measured: dict[str, dict[str, float]] = {}
    floors: dict[str, tuple[float, float]] = {}
    server: dict[str, tuple[float, float]] = {}  # (CPU µs per call, p50 µs)
    for label, sql in WORKLOADS:
        floors[label] = _floor(dsn, sql)
        measured[label] = _stages(dsn, sql)
    with _server(server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false")) as running:
        for label, sql in WORKLOADS:
            server_sequential_ms(running, 200, sql)  # warm-up
            cpu = cpu_seconds(running.proc.pid)
            p50 = server_sequential_ms(running, CALLS, sql)[0] * 1000
            server[label] = ((cpu_seconds(running.proc.pid) - cpu) / CALLS * 1e6, p50)
    figures: list[Figure] = []
    for label, _ in WORKLOADS:
        stages = measured[label]
        for key, value in stages.items():
            unit = "µs" if key == "waiting" else "µs CPU"
            figures.append(Figure(f"stage, {label}: {_LABELS[key]}", value, unit))
        # The bench's server logs at WARNING: no audit record.
        in_process = sum(v for k, v in stages.items() if k not in {"audit", "waiting"})
        figures.append(
            Figure(
                f"stage, {label}: runtime (read, session, thread hand-off, write)",
                server[label][0] - in_process,
                "µs CPU",
            )
        )
        figures.append(
            Figure(f"stage, {label}: the whole server", server[label][0], "µs CPU", floor=floors[label][0])
        )
        figures.append(
            Figure(f"stage, {label}: the whole server, p50", server[label][1], "µs", floor=floors[label][1])
        )
    for key in measured["3 rows"]:
        slope = (measured["100 rows"][key] - measured["3 rows"][key]) / (ROWS - 3)
        figures.append(Figure(f"per extra row: {_LABELS[key]}", slope, "µs"))
    for index, what in ((0, "CPU"), (1, "p50")):
        slope = (server["100 rows"][index] - server["3 rows"][index]) / (ROWS - 3)
        floor = (floors["100 rows"][index] - floors["3 rows"][index]) / (ROWS - 3)
        figures.append(Figure(f"per extra row: the whole server, {what}", slope, "µs", floor=floor))
    return figures


if __name__ == "__main__":
    import sys

    for figure in run():
        sys.stdout.write(figure.line() + "\n")
