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
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator
from typing import Any, Final

import httpx2
import trio

from bench.bench_peers import percentile
from bench.common import Figure
from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.runtime.http import serve_http
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import open_registry
from tests.support.harness import TEST_SCOPE, ToolLog, tool_opener
from tests.support.issuer import TestIssuer, open_issuer

SLOW_S: Final = 0.2  # one of Alice's calls
CALLS: Final = 300  # Bob's timed calls per series, after WARM_UP
WARM_UP: Final = 20
ALICE_CLIENTS: Final = 16  # MCP_HTTP_MAX_REQUESTS_PER_IDENTITY's default
RESOURCE: Final = "http://127.0.0.1/mcp"
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _call(tool: str, arguments: dict[str, Any], token: str) -> dict[str, Any]:
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


async def _bob(http: httpx2.AsyncClient, url: str, token: str, calls: int) -> list[float]:
    request = _call("echo", {"text": "hello"}, token)
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


async def _measure() -> dict[str, tuple[float, float]]:
    with open_issuer() as issuer:
        return {
            "idle": await _series(issuer, alice_saturating=False),
            "share": await _series(issuer, alice_saturating=True),
            "every slot": await _series(
                issuer, alice_saturating=True, max_concurrency=16, http_max_calls_per_identity=16
            ),
        }


def run() -> list[Figure]:
    measured = trio.run(_measure)
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
    ]
