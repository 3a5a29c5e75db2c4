"""What one caller's load does to another's calls over HTTP (issue 47; docs/operations/remote.md,
"Hostile input"): ratios against the same call with the server idle, measured in the same run.

`serve-http` runs in process on a loopback port with the test tools (`sleep`, `echo`) and a test
issuer's tokens for two subjects. Alice keeps MCP_HTTP_MAX_REQUESTS_PER_IDENTITY (16) calls of
`sleep` (`SLOW_S` each) in flight, closed loop, from 16 clients; Bob calls `echo` `CALLS` times, one
after the other, and his p50 and p99 are taken:

- idle: Alice sends nothing (the floor);
- Alice saturating her share at the defaults: MCP_MAX_CONCURRENCY 16, MCP_HTTP_MAX_CALLS_PER_IDENTITY 8;
- Alice holding every slot (her share set to 16 of 16, which `serve-http` refuses to start with): what
  the turns between waiting callers alone give Bob, about one of her calls at most.

The target of each is the issue's: another caller's call delayed by at most about one call's time
(Bob's p99 under load within the idle p99 plus `SLOW_S`). The client runs in the server's event loop,
so both figures carry its cost alike.

Then one SQL source, the demo database (issue 52: fairness down to the database threads): its pool
has `POOL` threads; Alice keeps `ALICE_SQL_CLIENTS` (her share of the call slots) slow queries in
flight, each waiting on a lock the bench holds until the statement timeout (`SQL_SLOW_MS`) ends it;
Bob runs `SELECT 1` on the same source `SQL_CALLS` times:

- idle: Alice sends nothing (the floor);
- Alice at her share: Bob's p50 and p99 (before issue 52, one FIFO limiter of the pool's size for
  everyone: Bob waited behind Alice's queued queries; now she holds at most `POOL` - 1 threads).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import httpx2
import psycopg
import trio

from bench.bench_peers import percentile
from bench.common import Figure
from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.runtime.http import serve_http
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.registry import open_registry
from mcp_suite.turns import Turns
from tests.support.harness import TEST_SCOPE, ToolLog, tool_opener
from tests.support.issuer import TestIssuer, open_issuer

SLOW_S: Final = 0.2  # one of Alice's calls
POOL: Final = 4  # the SQL source's database threads (MCP_SQL_POOL_MAX_SIZE's default)
SQL_SLOW_MS: Final = 200  # one of Alice's queries: a lock wait ended by the statement timeout
SQL_CALLS: Final = 200
ALICE_SQL_CLIENTS: Final = 8  # MCP_HTTP_MAX_CALLS_PER_IDENTITY's default
LOCKED: Final = "SELECT count(*) FROM reports.releases"
CALLS: Final = 300  # Bob's timed calls per series, after WARM_UP
WARM_UP: Final = 20
ALICE_CLIENTS: Final = 16  # MCP_HTTP_MAX_REQUESTS_PER_IDENTITY's default
CROWD: Final = 5  # callers at 16 requests each: the 16 slots and the waiting room's 64 places
RESOURCE: Final = "http://127.0.0.1/mcp"
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _call(tool: str, arguments: dict[str, Any], token: str) -> dict[str, Any]:
    """The keyword arguments of one modern `tools/call` POST."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    headers = {
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Authorization": f"Bearer {token}",
    }
    return {"json": body, "headers": headers}


@contextlib.asynccontextmanager
async def _serving(issuer: TestIssuer, **overrides: Any) -> AsyncIterator[tuple[str, ToolLog]]:
    settings = Settings(
        http_port=0,
        http_resource_uri=RESOURCE,
        http_issuer=issuer.issuer,
        http_jwks_url=issuer.jwks_url,
        log_level="WARNING",
        **overrides,
    )
    log = ToolLog()
    with open_registry(settings, extra=[tool_opener(log)]) as registry:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(functools.partial(serve_http, settings, registry, shutdown=stop.wait))
            yield binds[0] + "/mcp", log
            stop.set()


async def _alice(http: httpx2.AsyncClient, url: str, token: str) -> None:
    request = _call("sleep", {"seconds": SLOW_S}, token)
    while True:
        answer = await http.post(url, **request)
        assert answer.status_code == 200, answer.content


async def _bob(
    http: httpx2.AsyncClient, url: str, token: str, calls: int, request: dict[str, Any] | None = None
) -> list[float]:
    request = request or _call("echo", {"text": "hello"}, token)
    latencies: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        answer = await http.post(url, **request)
        latencies.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, answer.content
        assert "error" not in answer.json(), answer.content
    return latencies


async def _series(issuer: TestIssuer, alice_saturating: bool, **overrides: Any) -> tuple[float, float]:
    """Bob's p50 and p99 (ms), with Alice saturating or not."""
    alice = issuer.token(RESOURCE, sub="alice", scope=TEST_SCOPE, expires_in=3_600)
    bob = issuer.token(RESOURCE, sub="bob", scope=TEST_SCOPE, expires_in=3_600)
    limits = httpx2.Limits(max_connections=ALICE_CLIENTS + 4, max_keepalive_connections=ALICE_CLIENTS + 4)
    async with (
        _serving(issuer, **overrides) as (url, log),
        httpx2.AsyncClient(timeout=60, limits=limits) as alice_http,
        httpx2.AsyncClient(timeout=60) as bob_http,
        trio.open_nursery() as nursery,
    ):
        await _bob(bob_http, url, bob, WARM_UP)  # the keys fetched, the models built
        if alice_saturating:
            for _ in range(ALICE_CLIENTS):
                nursery.start_soon(_alice, alice_http, url, alice)
            while len(log.started) < ALICE_CLIENTS:  # noqa: ASYNC110  # the tools' log has no event
                await trio.sleep(0.01)
        latencies = await _bob(bob_http, url, bob, CALLS)
        nursery.cancel_scope.cancel()
    return percentile(latencies, 50), percentile(latencies, 99)


async def _crowd_series(issuer: TestIssuer) -> tuple[float, float, int]:
    """Bob's p50 and p99 (ms) of his calls served, and how many were refused, while `CROWD` callers
    each keep 16 calls of `SLOW_S` in flight (issue 52: the slots and the waiting room taken)."""
    crowd = [
        issuer.token(RESOURCE, sub=f"crowd-{n}", scope=TEST_SCOPE, expires_in=3_600) for n in range(CROWD)
    ]
    bob = issuer.token(RESOURCE, sub="bob", scope=TEST_SCOPE, expires_in=3_600)
    request = _call("echo", {"text": "hello"}, bob)
    connections = CROWD * ALICE_CLIENTS + 4
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    served: list[float] = []
    refused = 0
    async with (
        _serving(issuer) as (url, _log),
        httpx2.AsyncClient(timeout=60, limits=limits) as crowd_http,
        httpx2.AsyncClient(timeout=60) as bob_http,
        trio.open_nursery() as nursery,
    ):
        await _bob(bob_http, url, bob, WARM_UP)
        for token in crowd:
            for _ in range(ALICE_CLIENTS):
                nursery.start_soon(_alice, crowd_http, url, token)
        await trio.sleep(5 * SLOW_S)  # every one of their calls in flight
        for _ in range(CALLS):
            started = time.perf_counter()
            answer = await bob_http.post(url, **request)
            if answer.json()["result"]["isError"]:  # concurrency-limit
                refused += 1
            else:
                served.append((time.perf_counter() - started) * 1000)
        nursery.cancel_scope.cancel()
    if not served:
        return math.nan, math.nan, refused
    return percentile(served, 50), percentile(served, 99), refused


async def _measure() -> dict[str, tuple[float, float]]:
    with open_issuer() as issuer:
        return {
            "idle": await _series(issuer, alice_saturating=False),
            "share": await _series(issuer, alice_saturating=True),
            "every slot": await _series(
                issuer, alice_saturating=True, max_concurrency=16, http_max_calls_per_identity=16
            ),
        }


async def _alice_sql(http: httpx2.AsyncClient, url: str, token: str, timed_out: list[int]) -> None:
    request = _call("read_only_sql", {"sql": LOCKED}, token)
    while True:
        answer = await http.post(url, **request)
        assert answer.status_code == 200, answer.content
        assert answer.json()["result"]["isError"] is True, answer.content  # the statement timeout
        timed_out.append(1)


async def _sql_series(
    issuer: TestIssuer, dsn: str, admin_dsn: str, alice_busy: bool
) -> tuple[float, float, int]:
    """Bob's `SELECT 1` on the source, p50 and p99 (ms), with Alice's slow queries or not, and how
    many of hers the statement timeout ended meanwhile."""
    timed_out: list[int] = []
    alice = issuer.token(RESOURCE, sub="alice", scope="sql:read", expires_in=3_600)
    bob = issuer.token(RESOURCE, sub="bob", scope="sql:read", expires_in=3_600)
    quick = _call("read_only_sql", {"sql": "SELECT 1"}, bob)
    limits = httpx2.Limits(max_connections=ALICE_SQL_CLIENTS + 4)
    lock: psycopg.Connection[Any] = await trio.to_thread.run_sync(
        functools.partial(psycopg.connect, admin_dsn)
    )
    try:
        overrides = {
            "sql_dsn": SecretStr(dsn),
            "sql_pool_max_size": POOL,
            "sql_statement_timeout_ms": SQL_SLOW_MS,
        }
        async with (
            _serving(issuer, **overrides) as (url, _log),
            httpx2.AsyncClient(timeout=60, limits=limits) as alice_http,
            httpx2.AsyncClient(timeout=60) as bob_http,
            trio.open_nursery() as nursery,
        ):
            await _bob(bob_http, url, bob, WARM_UP, quick)  # the pool, the policy, the keys
            if alice_busy:
                # Held until the series ends: each of her queries waits on it, then times out.
                await trio.to_thread.run_sync(
                    lock.execute, "LOCK TABLE reports.releases IN ACCESS EXCLUSIVE MODE"
                )
                for _ in range(ALICE_SQL_CLIENTS):
                    nursery.start_soon(_alice_sql, alice_http, url, alice, timed_out)
                await trio.sleep(2 * SQL_SLOW_MS / 1000)  # her queries in flight
            before = len(timed_out)
            latencies = await _bob(bob_http, url, bob, SQL_CALLS, quick)
            during = len(timed_out) - before
            nursery.cancel_scope.cancel()
    finally:
        await trio.to_thread.run_sync(lock.close)
    return percentile(latencies, 50), percentile(latencies, 99), during


def _sql() -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        dsn = cluster.reader_dsn

        async def measure() -> dict[str, tuple[float, float, int]]:
            with open_issuer() as issuer:
                return {
                    "idle": await _sql_series(issuer, dsn, cluster.admin_dsn, alice_busy=False),
                    "share": await _sql_series(issuer, dsn, cluster.admin_dsn, alice_busy=True),
                }

        measured = trio.run(measure)
    finally:
        if started_here:
            cluster.stop()
    idle_p50, idle_p99, _ = measured["idle"]
    busy_p50, busy_p99, ended = measured["share"]
    bound = idle_p99 + SQL_SLOW_MS
    load = f"{ended} of Alice's queries ended by the statement timeout meanwhile"
    name = f"Bob's SELECT 1, Alice's {ALICE_SQL_CLIENTS} slow queries on the source ({POOL} threads)"
    return [
        Figure("Bob's SELECT 1 on a source, the server idle: p50", idle_p50, "ms"),
        Figure("Bob's SELECT 1 on a source, the server idle: p99", idle_p99, "ms"),
        Figure(f"{name}: p50", busy_p50, "ms", floor=idle_p50, note=load),
        Figure(
            f"{name}: p99",
            busy_p99,
            "ms",
            target=f"<= idle p99 + one of Alice's queries ({bound:,.1f} ms)",
            ok=busy_p99 <= bound,
            floor=idle_p99,
        ),
    ]


COST_ROUNDS: Final = 100_000


async def _take_and_give() -> tuple[float, float]:
    """µs per uncontended take and give back of one database thread: a source's `Turns` (a
    verified caller's turn) against the `trio.CapacityLimiter` it replaced, in the same run."""
    limiter = trio.CapacityLimiter(POOL)
    turns = Turns(POOL, POOL - 1)
    borrower = object()
    started = time.perf_counter()
    for _ in range(COST_ROUNDS):
        await limiter.acquire_on_behalf_of(borrower)
        limiter.release_on_behalf_of(borrower)
    plain = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(COST_ROUNDS):
        ticket = turns.reserve("alice")
        await turns.wait(ticket)
        turns.release(ticket)
    fair = time.perf_counter() - started
    return plain / COST_ROUNDS * 1e6, fair / COST_ROUNDS * 1e6


def _cost() -> list[Figure]:
    plain, fair = trio.run(_take_and_give)
    return [Figure("a database thread taken and given back, in turn (Turns)", fair, "µs", floor=plain)]


def run() -> list[Figure]:
    return _cost() + _calls() + _sql()


def _calls() -> list[Figure]:
    measured = trio.run(_measure)
    with open_issuer() as issuer:
        crowd_p50, crowd_p99, refused = trio.run(_crowd_series, issuer)
    idle_p50, idle_p99 = measured["idle"]
    bound = idle_p99 + SLOW_S * 1000
    share_p50, share_p99 = measured["share"]
    every_p50, every_p99 = measured["every slot"]
    one_call = f"one of Alice's calls is {SLOW_S * 1000:g} ms"
    return [
        Figure("Bob's call, the server idle: p50", idle_p50, "ms"),
        Figure("Bob's call, the server idle: p99", idle_p99, "ms"),
        Figure("Bob's call, Alice saturating her share (8 of 16): p50", share_p50, "ms", floor=idle_p50),
        Figure(
            "Bob's call, Alice saturating her share (8 of 16): p99",
            share_p99,
            "ms",
            target=f"<= idle p99 + one of Alice's calls ({bound:,.1f} ms)",
            ok=share_p99 <= bound,
            floor=idle_p99,
        ),
        # Informational: a configuration serve-http refuses; what the turns alone bound.
        Figure(
            "Bob's call, Alice holding every slot (16 of 16): p50",
            every_p50,
            "ms",
            floor=idle_p50,
            note=one_call,
        ),
        Figure(
            "Bob's call, Alice holding every slot (16 of 16): p99",
            every_p99,
            "ms",
            floor=idle_p99,
            note=one_call,
        ),
        Figure(
            f"Bob's calls refused, {CROWD} callers filling the waiting room",
            refused,
            f"of {CALLS}",
            target="0",
            ok=refused == 0,
        ),
        Figure(
            f"Bob's call served, {CROWD} callers filling the waiting room: p50",
            crowd_p50,
            "ms",
            floor=idle_p50,
        ),
        Figure(
            f"Bob's call served, {CROWD} callers filling the waiting room: p99",
            crowd_p99,
            "ms",
            target=f"<= idle p99 + one of their calls ({bound:,.1f} ms)",
            ok=crowd_p99 <= bound,
            floor=idle_p99,
        ),
    ]
