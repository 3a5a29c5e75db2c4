"""A curated tool against the same query through `read_only_sql` (issue 55, docs/performance.md
"Curated tools"), on the demo cluster (started here if not running), its source `ops`.

One server on the demo's configuration file answers, in each round, a block of sequential calls of
the curated `ops_incidents_of_service` (`service` = billing: its statement was judged at start-up,
the value is bound) and a block of `read_only_sql` with the same statement, the value written in
(its verdict cached after the first call), and a block of `read_only_sql` whose text is new at each
call (a verdict made each time, as for a model's varied questions), in turned order, so a slow
moment of the machine falls on all. Figures: the median over the rounds of each
block's p50 and of the server's CPU per call; each `read_only_sql` block is a floor.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_sql import _Server
from bench.common import Figure, cpu_seconds, server_env

ROUNDS = 8
BLOCK_CALLS = 500
WARM_CALLS = 200
STATEMENT = (
    "SELECT incident_id, severity, summary FROM ops.incidents WHERE service = 'billing' ORDER BY 1 DESC"
)
CALLS = {
    "curated": ("ops_incidents_of_service", {"service": "billing"}),
    "free": ("read_only_sql", {"source": "ops", "sql": STATEMENT}),
}


def _line(request_id: int, kind: str) -> bytes:
    if kind == "fresh":  # a text the policy has not judged yet: each call is a new verdict
        fresh = STATEMENT.replace(" ORDER BY", f" AND incident_id <> 'x-{request_id}' ORDER BY")
        name, arguments = "read_only_sql", {"source": "ops", "sql": fresh}
    else:
        name, arguments = CALLS[kind]
    call = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(call).encode() + b"\n"


def _check(line: bytes) -> None:
    message = json.loads(line)
    result = message.get("result") or {}
    if "error" in message or result.get("isError") or result["structuredContent"]["row_count"] != 2:
        raise RuntimeError(f"benchmark call failed: {line[:300]!r}")


class _Blocks:
    def __init__(self, server: _Server) -> None:
        self.server = server
        self._next_id = 1

    def block(self, kind: str, calls: int) -> tuple[float, float]:
        """(p50 ms, server CPU ms per call) of `calls` sequential calls of `kind`."""
        samples = []
        cpu_before = cpu_seconds(self.server.proc.pid)
        for index in range(calls):
            start = time.perf_counter()
            self.server.send(_line(self._next_id, kind))
            (line,) = self.server.read_lines(1)
            samples.append(time.perf_counter() - start)
            if index == 0:
                _check(line)
            self._next_id += 1
        cpu = (cpu_seconds(self.server.proc.pid) - cpu_before) / calls * 1000
        return statistics.median(samples) * 1000, cpu


def curated_against_free(config: Path) -> dict[str, tuple[float, float]]:
    """(p50 ms, CPU ms per call) of each kind: medians over the rounds."""
    server = _Server(server_env(MCP_CONFIG=str(config), MCP_METRICS_ENABLED="false"))
    taken: dict[str, list[tuple[float, float]]] = {"curated": [], "free": [], "fresh": []}
    try:
        server.initialize()
        blocks = _Blocks(server)
        for kind in taken:
            blocks.block(kind, WARM_CALLS)
        for index in range(ROUNDS):
            order = ("curated", "free", "fresh") if index % 2 == 0 else ("fresh", "free", "curated")
            for kind in order:
                taken[kind].append(blocks.block(kind, BLOCK_CALLS))
    finally:
        server.close()
    return {
        kind: (statistics.median(p for p, _ in runs), statistics.median(c for _, c in runs))
        for kind, runs in taken.items()
    }


def run() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster
    from mcp_suite.demo.sources_file import write_sources_file

    cluster, started_here = open_demo_cluster()
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-suite-bench-curated-") as tmp:
            config = write_sources_file(cluster, {}, directory=Path(tmp))
            found = curated_against_free(config)
    finally:
        if started_here:
            cluster.stop()
    note = f"floor: the same query through read_only_sql, {ROUNDS} interleaved rounds of {BLOCK_CALLS} calls"
    fresh = f"floor: read_only_sql, each call a text not judged before, {ROUNDS} interleaved rounds"
    return [
        Figure(
            "curated: a curated call, sequential p50",
            found["curated"][0],
            "ms",
            floor=found["free"][0],
            note=note,
        ),
        Figure(
            "curated: a curated call, server CPU per call",
            found["curated"][1],
            "ms",
            floor=found["free"][1],
            note=note,
        ),
        Figure(
            "curated: a curated call against new texts, p50",
            found["curated"][0],
            "ms",
            floor=found["fresh"][0],
            note=fresh,
        ),
        Figure(
            "curated: a curated call against new texts, CPU per call",
            found["curated"][1],
            "ms",
            floor=found["fresh"][1],
            note=fresh,
        ),
    ]


if __name__ == "__main__":
    for figure in run():
        sys.stdout.write(figure.line() + "\n")
