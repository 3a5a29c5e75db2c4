"""Where a read_only_sql call's time goes, stage by stage, for both bench_sql workloads.

In one process (no server), each stage of the tool's result path is timed on every call: the
executor's round trip (`pipeline.run_pipeline`), the rows through psycopg's loaders
(`result.load_rows`), the JSON rows and their exact size check (`result.json_rows`), the rest of the
executor (pool, definer check, type names, ticket), the result model, its JSON (pydantic's
serializer) and the frame with the text copy, and the audit record. Then the whole server over
pipes: what it adds on top of those stages is the runtime (reading, the session, the thread
hand-off, writing). The floor is the bare query on a psycopg pool (`execute().fetchall()`).
Medians of per-call microseconds; the slope is (100-row − 3-row) / 97.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.bench_sql import QUERY, ROWS, ROWS_QUERY, _server, floor_psycopg, server_sequential_ms
from bench.common import Figure, server_env

CALLS = 1_500
WORKLOADS = (("3 rows", QUERY), ("100 rows", ROWS_QUERY))


@contextlib.contextmanager
def _timing(module: Any, name: str, samples: list[float]) -> Iterator[None]:
    """Time every call of the function `module.name` (a public name the executor calls)."""
    original: Callable[..., Any] = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            samples.append(time.perf_counter() - start)

    setattr(module, name, timed)
    try:
        yield
    finally:
        setattr(module, name, original)


def _stages(dsn: str, sql: str) -> dict[str, float]:
    """Median µs per call of each in-process stage of one workload."""
    import mcp_suite.tools.read_only_sql.executor as executor_module
    from mcp_suite.protocol.jsonrpc import encode_tool_success
    from mcp_suite.protocol.mcp import structured_json
    from mcp_suite.runtime import audit
    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.read_only_sql.models import result_from_rows
    from mcp_suite.tools.read_only_sql.policy import vet_sql

    executor = executor_module.Executor(Settings(sql_dsn=SecretStr(dsn), metrics_enabled=False), dsn)
    executor.open()
    executor.mark_audited()
    vetted = vet_sql(sql, max_rows=ROWS)
    names = ("run_pipeline", "load_rows", "json_rows")
    inner: dict[str, list[float]] = {name: [] for name in names}
    outer: dict[str, list[float]] = {"call": [], "model": [], "json": [], "frame": [], "audit": []}
    with open(os.devnull, "w") as devnull, contextlib.ExitStack() as stack:
        audit.configure_logging("INFO", devnull)
        stack.callback(audit.shutdown_logging)
        stack.callback(executor.close)
        for name in names:
            stack.enter_context(_timing(executor_module, name, inner[name]))
        for i in range(CALLS + 200):
            start = time.perf_counter()
            result = executor.run_vetted(vetted, max_rows=ROWS, ticket=executor_module.CallTicket())
            t_call = time.perf_counter()
            model = result_from_rows(
                [(c.name, c.type) for c in result.columns], result.rows, truncated=result.truncated
            )
            t_model = time.perf_counter()
            data = structured_json(model)
            t_json = time.perf_counter()
            encode_tool_success(i, data)
            t_frame = time.perf_counter()
            audit.audit_statement(
                tool="read_only_sql", sql=sql, outcome="ok", started=start, rows=len(result.rows)
            )
            t_audit = time.perf_counter()
            for key, seconds in (
                ("call", t_call - start),
                ("model", t_model - t_call),
                ("json", t_json - t_model),
                ("frame", t_frame - t_json),
                ("audit", t_audit - t_frame),
            ):
                outer[key].append(seconds)

    def median_us(samples: list[float]) -> float:
        return statistics.median(samples[200:]) * 1e6

    stages = {name: median_us(samples) for name, samples in inner.items()}
    stages["rest of the executor"] = median_us(outer["call"]) - sum(stages.values())
    stages.update({key: median_us(outer[key]) for key in ("model", "json", "frame", "audit")})
    return stages


_LABELS = {
    "run_pipeline": "the round trip (libpq pipeline, rows streamed, text counted)",
    "load_rows": "rows through psycopg's loaders",
    "json_rows": "JSON rows and their exact size check",
    "rest of the executor": "rest of the executor (pool, definer check, type names)",
    "model": "result model (no validation)",
    "json": "structuredContent JSON (pydantic serializer)",
    "frame": "frame with the text copy",
    "audit": "audit record (when the audit trail is on)",
}


def run() -> list[Figure]:
    from mcp_suite.devdb.cluster import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        return _figures(cluster.reader_dsn)
    finally:
        if started_here:
            cluster.stop()


def _figures(dsn: str) -> list[Figure]:
    measured: dict[str, dict[str, float]] = {}
    floors: dict[str, float] = {}
    totals: dict[str, float] = {}
    for label, sql in WORKLOADS:
        floors[label] = floor_psycopg(dsn, CALLS, threads=1, sql=sql)[0] * 1000
        measured[label] = _stages(dsn, sql)
    with _server(server_env(MCP_SQL_DSN=dsn, MCP_METRICS_ENABLED="false")) as server:
        for label, sql in WORKLOADS:
            server_sequential_ms(server, 200, sql)  # warm-up
            totals[label] = server_sequential_ms(server, CALLS, sql)[0] * 1000
    figures: list[Figure] = []
    for label, _ in WORKLOADS:
        stages = measured[label]
        for key, value in stages.items():
            figures.append(Figure(f"stage, {label}: {_LABELS[key]}", value, "µs"))
        in_process = sum(v for k, v in stages.items() if k != "audit")
        figures.append(
            Figure(
                f"stage, {label}: runtime (read, session, thread hand-off, write)",
                totals[label] - in_process,
                "µs",
            )
        )
        figures.append(
            Figure(f"stage, {label}: the whole server, p50", totals[label], "µs", floor=floors[label])
        )
    for key in (*measured["3 rows"], "total"):
        if key == "total":
            slope = (totals["100 rows"] - totals["3 rows"]) / (ROWS - 3)
            floor = (floors["100 rows"] - floors["3 rows"]) / (ROWS - 3)
            figures.append(Figure("per extra row: the whole server", slope, "µs", floor=floor))
        else:
            slope = (measured["100 rows"][key] - measured["3 rows"][key]) / (ROWS - 3)
            figures.append(Figure(f"per extra row: {_LABELS[key]}", slope, "µs"))
    return figures


if __name__ == "__main__":
    import sys

    for figure in run():
        sys.stdout.write(figure.line() + "\n")
