"""What the database host gives to concurrent heavy aggregates under the default settings.

PostgreSQL has no per-backend memory limit, and the result byte cap does not bound what a query
builds on its way to a small result: `string_agg` of a million rows is one value in the backend.
This test runs as many such calls at once as the pool holds, against the real demo cluster, and
measures the backends' memory from /proc while they run. It reports the figure (stderr, `-s`; the
figure is in docs/operations/deployments.md) and asserts only what must hold: every call is
answered, with a result or a typed problem, nothing hangs, and the session goes on.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Final

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.settings import SecretStr, Settings
from tests.support.harness import open_session

pytestmark = pytest.mark.pg

# A heavy aggregate with a one-row result: string_agg builds one value, which grows until it
# fails at PostgreSQL's 1 GB limit on a single value (about two seconds on an idle machine) or the
# statement timeout stops it. (array_agg keeps its elements apart and grows until the timeout: by
# hand, with `array_agg(repeat('y', 1000))` over two joined series of 10,000, one backend reached
# 2.5 GB in the 5 s default; too heavy to run in every test run, so it is a figure in the docs.)
HEAVY_QUERY: Final = "SELECT length(string_agg(repeat('x', 1000), '')) FROM generate_series(1, 1100000)"
_PROBLEM_PREFIX: Final = "urn:mcp-suite:problem:"


@dataclass
class BackendMemory:
    """The peaks seen while sampling: per backend (VmHWM, the kernel's own high-water mark) and
    the largest sum of the backends' private memory (RssAnon) at one instant."""

    hwm_kib: dict[int, int] = field(default_factory=dict)
    peak_anon_sum_kib: int = 0
    samples: int = 0


def _status_kib(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in ("VmHWM", "RssAnon"):
                    values[key] = int(rest.split()[0])
    except (FileNotFoundError, ProcessLookupError):
        pass  # the backend ended between the query and the read
    return values


def _sample_until(admin_dsn: str, stop: threading.Event, memory: BackendMemory) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        while not stop.is_set():
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'mcp-suite/%'"
            ).fetchall()
            anon_sum = 0
            for (pid,) in rows:
                status = _status_kib(int(pid))
                anon_sum += status.get("RssAnon", 0)
                if "VmHWM" in status:
                    memory.hwm_kib[int(pid)] = max(memory.hwm_kib.get(int(pid), 0), status["VmHWM"])
            memory.peak_anon_sum_kib = max(memory.peak_anon_sum_kib, anon_sum)
            memory.samples += 1
            stop.wait(0.05)


def _outcome(response: dict[str, Any]) -> str:
    """`ok`, or the slug of the typed problem the call was answered with (and its SQLSTATE)."""
    result = response["result"]
    if not result["isError"]:
        return "ok"
    document = json.loads(result["content"][0]["text"])
    assert document["type"].startswith(_PROBLEM_PREFIX), document
    sqlstate = document["metadata"].get("sqlstate", "")
    return f"{document['type'].removeprefix(_PROBLEM_PREFIX)} {sqlstate}".strip()


async def test_as_many_heavy_aggregates_as_the_pool_holds_are_answered_and_measured(
    demo_cluster: Cluster,
) -> None:
    settings = Settings(sql_dsn=SecretStr(demo_cluster.reader_dsn), metrics_enabled=False)
    calls = settings.sql_pool_max_size
    memory = BackendMemory()
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_until, args=(demo_cluster.admin_dsn, stop, memory))
    outcomes: list[str] = []
    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            sampler.start()
            try:
                ids = [await h.call("read_only_sql", {"sql": HEAVY_QUERY}) for _ in range(calls)]
                for request_id in ids:
                    outcomes.append(_outcome(await h.response(request_id)))
            finally:
                stop.set()
                await trio.to_thread.run_sync(sampler.join)
            after = await h.response(await h.call("read_only_sql", {"sql": "SELECT 1 AS still_here"}))
    hwm_sum_mib = sum(memory.hwm_kib.values()) / 1024
    sys.stderr.write(
        f"db-memory: {calls} concurrent string_agg calls (pool {settings.sql_pool_max_size}, "
        f"statement timeout {settings.sql_statement_timeout_ms} ms): outcomes {sorted(outcomes)}; "
        f"backends {len(memory.hwm_kib)}, sum of their VmHWM {hwm_sum_mib:.0f} MiB, largest "
        f"{max(memory.hwm_kib.values(), default=0) / 1024:.0f} MiB; peak sum of RssAnon "
        f"{memory.peak_anon_sum_kib / 1024:.0f} MiB over {memory.samples} samples\n"
    )
    assert len(outcomes) == calls  # every call answered, none hung (fail_after)
    assert memory.samples > 0  # the backends were watched while they worked
    assert memory.hwm_kib
    assert after["result"]["structuredContent"]["rows"] == [[1]]
