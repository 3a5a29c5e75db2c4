"""Three `mcp-suite serve-http` replicas behind HAProxy (the shipped template) and one PgBouncer in
transaction pooling mode, all started through the harness: 1,000 tagged `read_only_sql` calls from
several clients while one replica is killed (SIGKILL) and started again, then the answers, the
audit records and the database's backends are counted; and a legacy session stays on its replica.

A modern (2026-07-28) call that got no answer (the connection failed, or the proxy said 502/503) is
sent again: the server keeps nothing between modern requests and the tools are read-only, so a
second try is safe (docs/operations/remote.md, "Replicas behind a load balancer").
"""

from __future__ import annotations

import collections
import re
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Final

import httpx2
import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.deploy import password_of
from tests.support.devdb.pgbouncer import PgBouncer, open_pgbouncer
from tests.support.haproxy import HaProxy, open_haproxy
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, free_port, open_issuer
from tests.support.wire import initialize_request

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

CALLS: Final = 1_000
CLIENTS: Final = 8
KILL_AFTER: Final = 300  # answered calls before the second replica is killed
GATE_AT: Final = 700  # later calls wait until the killed replica is back in HAProxy's rotation
MAX_ATTEMPTS: Final = 20
RETRY_PAUSE_S: Final = 0.05
POOL_SIZE: Final = 4  # PgBouncer's server connections for the reader, shared by the three replicas
LEGACY_VERSION: Final = "2025-11-25"
TAG: Final = re.compile(r"'(lb-\w+-\d+)'")
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass
class Fleet:
    issuer: TestIssuer
    bouncer: PgBouncer
    proxy: HaProxy
    env: dict[str, str]
    ports: list[int]
    stack: ExitStack
    lives: list[list[HttpServer]] = field(default_factory=list)

    def start(self, index: int) -> HttpServer:
        """Replica `index` (again) on its own port, behind the proxy."""
        server = self.stack.enter_context(open_http_server(self.issuer, self.env, port=self.ports[index]))
        self.lives[index].append(server)
        return server

    def everyone(self) -> list[HttpServer]:
        return [server for lives in self.lives for server in lives]


@pytest.fixture(scope="module")
def fleet(demo_cluster: Cluster) -> Iterator[Fleet]:
    with ExitStack() as stack:
        issuer = stack.enter_context(open_issuer())
        reader_password = password_of(demo_cluster.reader_dsn)
        bouncer = stack.enter_context(
            open_pgbouncer(demo_cluster, {READER_USER: reader_password}, pool_size=POOL_SIZE)
        )
        ports: list[int] = []
        while len(ports) < 3:
            port = free_port()
            if port not in ports:
                ports.append(port)
        proxy = stack.enter_context(open_haproxy([f"127.0.0.1:{port}" for port in ports]))
        env = {
            "MCP_SQL_DSN": bouncer.dsn(READER_USER, reader_password, demo_cluster.dbname),
            "MCP_SQL_POOLER": "transaction",
            # Tokens name the proxy's address, the one the clients know: every replica is that resource.
            "MCP_HTTP_RESOURCE_URI": proxy.url,
        }
        running = Fleet(issuer, bouncer, proxy, env, ports, stack, [[], [], []])
        for index in range(3):
            running.start(index)
        proxy.wait_states({"mcp1": "UP", "mcp2": "UP", "mcp3": "UP"})
        yield running


def tagged_sql(tag: str) -> str:
    return f"SELECT '{tag}' AS tag, count(*) AS pages FROM docs.pages"


def modern_call(tag: str, request_id: int) -> dict[str, Any]:
    arguments = {"sql": tagged_sql(tag)}
    params = {"name": "read_only_sql", "arguments": arguments, "_meta": META}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern_headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "read_only_sql",
    }


def call_records(servers: list[HttpServer]) -> list[tuple[int, dict[str, Any]]]:
    """(which server, record) of every tools/call audit record the servers have written."""
    return [
        (n, record)
        for n, server in enumerate(servers)
        for record in server.records()
        if record.get("event") == "request" and record.get("method") == "tools/call"
    ]


def tag_of(record: dict[str, Any]) -> str | None:
    found = TAG.search(str(record.get("args_excerpt", "")))
    return found[1] if found else None


@dataclass
class Run:
    """What the clients saw: each call's tag and the subject that made it, the retries and why."""

    next_index: int = 0
    answered: dict[str, str] = field(default_factory=dict)
    answered_at: dict[str, float] = field(default_factory=dict)  # trio.current_time() of the answer
    killed_at: float = 0.0
    retries: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)
    killed: trio.Event = field(default_factory=trio.Event)
    due: trio.Event = field(default_factory=trio.Event)
    back: trio.Event = field(default_factory=trio.Event)

    def take(self) -> int | None:
        if self.next_index >= CALLS:
            return None
        self.next_index += 1
        return self.next_index - 1


async def call_until_answered(
    http: httpx2.AsyncClient, url: str, token: str, tag: str, index: int, run: Run
) -> httpx2.Response | None:
    """POST one modern call; again (a new request id) when no answer came. None after MAX_ATTEMPTS."""
    for attempt in range(MAX_ATTEMPTS):
        try:
            reply = await http.post(
                url, json=modern_call(tag, index * 100 + attempt), headers=modern_headers(token)
            )
        except httpx2.TransportError as exc:  # no answer reached us: safe to send again
            cause = type(exc).__name__
        else:
            if reply.status_code not in (502, 503):  # the proxy's "no replica answered"
                return reply
            cause = f"HTTP {reply.status_code}"
        run.retries[cause] += 1
        await trio.sleep(RETRY_PAUSE_S)
    return None


async def drive_client(fleet: Fleet, client: int, run: Run) -> None:
    subject = f"lb-client-{client}"
    token = fleet.issuer.token(fleet.proxy.url, sub=subject, scope="sql:read", expires_in=600)
    async with httpx2.AsyncClient(timeout=30) as http:
        while (index := run.take()) is not None:
            if index >= GATE_AT:
                await run.back.wait()
            tag = f"lb-call-{index:04d}"
            reply = await call_until_answered(http, fleet.proxy.url, token, tag, index, run)
            if reply is None:
                run.failures.append(f"{tag}: no answer after {MAX_ATTEMPTS} attempts")
                continue
            result = reply.json().get("result", {})
            rows = result.get("structuredContent", {}).get("rows")
            if reply.status_code != 200 or result.get("isError") or rows != [[tag, 30]]:
                run.failures.append(f"{tag}: HTTP {reply.status_code} {reply.text[:300]}")
                continue
            run.answered[tag] = subject
            run.answered_at[tag] = trio.current_time()
            if len(run.answered) == KILL_AFTER:
                run.due.set()


async def kill_and_restart(fleet: Fleet, run: Run) -> None:
    await run.due.wait()
    await trio.to_thread.run_sync(fleet.lives[1][-1].kill)
    run.killed_at = trio.current_time()
    run.killed.set()
    await trio.to_thread.run_sync(fleet.start, 1)
    await trio.to_thread.run_sync(fleet.proxy.wait_states, {"mcp2": "UP"})
    run.back.set()


def reader_backends(cluster: Cluster) -> list[str]:
    with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT state FROM pg_stat_activity WHERE usename = %s", (READER_USER,)
        ).fetchall()
    return [str(state) for (state,) in rows]


def pooler_servers_active(bouncer: PgBouncer) -> int:
    with psycopg.connect(bouncer.admin_dsn, autocommit=True) as console, console.cursor() as cur:
        cur.execute("SHOW POOLS")
        names = [column.name for column in cur.description or ()]
        pools = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    return sum(int(pool["sv_active"]) for pool in pools if pool["user"] == READER_USER)


def wait_for_quiet_database(cluster: Cluster, bouncer: PgBouncer, timeout_s: float = 15) -> list[str]:
    """The reader's backends once every one is idle and no more than the pool holds."""
    deadline = time.monotonic() + timeout_s
    while True:
        states = reader_backends(cluster)
        quiet = all(state == "idle" for state in states) and len(states) <= POOL_SIZE
        if quiet and pooler_servers_active(bouncer) == 0:
            return states
        assert time.monotonic() < deadline, f"backends left behind: {states}"
        time.sleep(0.1)


def test_a_legacy_session_keeps_reaching_the_replica_that_opened_it(fleet: Fleet) -> None:
    token = fleet.issuer.token(fleet.proxy.url, sub="lb-legacy", scope="sql:read")
    auth = {"Authorization": f"Bearer {token}"}
    initialize = initialize_request("t", version=LEGACY_VERSION)
    with httpx2.Client(timeout=30) as http:
        opened = http.post(fleet.proxy.url, json=initialize, headers=auth)
        assert opened.status_code == 200, opened.text
        session = {
            **auth,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": LEGACY_VERSION,
        }
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(fleet.proxy.url, json=ready, headers=session).status_code == 202
        # Round-robin alone would send two calls in three to a replica that never heard of the
        # session (which would resume it there): the audit records below, all on one replica, are
        # the stick table's doing.
        for n in range(12):
            tag = f"lb-legacy-{n}"
            call = {
                "jsonrpc": "2.0",
                "id": 10 + n,
                "method": "tools/call",
                "params": {"name": "read_only_sql", "arguments": {"sql": tagged_sql(tag)}},
            }
            reply = http.post(fleet.proxy.url, json=call, headers=session)
            assert reply.status_code == 200, reply.text
            assert reply.json()["result"]["structuredContent"]["rows"] == [[tag, 30]]
        assert http.delete(fleet.proxy.url, headers=session).status_code == 204
    table = fleet.proxy.command("show table mcp_replicas")
    assert opened.headers["mcp-session-id"] in table
    # An answer leaves a replica once its audit record is on stderr: no waiting for a writer here.
    legacy = [(n, r) for n, r in call_records(fleet.everyone()) if (tag_of(r) or "").startswith("lb-legacy-")]
    where = {n for n, _ in legacy}
    records = [r for _, r in legacy]
    assert len(where) == 1
    assert sorted(tag_of(r) or "" for r in records) == sorted(f"lb-legacy-{n}" for n in range(12))


async def test_a_thousand_calls_are_answered_while_a_replica_is_killed_and_restarted(
    fleet: Fleet, demo_cluster: Cluster
) -> None:
    run = Run()
    started = time.monotonic()
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(kill_and_restart, fleet, run)
            async with trio.open_nursery() as clients:
                for client in range(CLIENTS):
                    clients.start_soon(drive_client, fleet, client, run)
    elapsed = time.monotonic() - started
    assert run.failures == []
    assert len(run.answered) == CALLS
    assert run.killed.is_set()
    assert run.back.is_set()

    # Every answered call had its audit record written before its answer left, on the replica that
    # gave it (the killed one's first life included), under the subject of the client that made it.
    # No waiting for a log writer here.
    servers = fleet.everyone()
    records = [(n, r) for n, r in call_records(servers) if (tag_of(r) or "").startswith("lb-call-")]
    audited = {tag_of(r): r.get("sub") for _, r in records if r.get("outcome") == "ok"}
    missing = sorted(set(run.answered) - set(audited))
    before_kill = {tag: round(run.killed_at - run.answered_at[tag], 4) for tag in missing}
    assert missing == [], (
        f"{len(missing)} answered calls without an audit record (s before the kill): {before_kill}"
    )
    assert all(audited[tag] == subject for tag, subject in run.answered.items())
    per_server = collections.Counter(n for n, _ in records)
    first_life, second_life = fleet.lives[1][0], fleet.lives[1][1]
    assert per_server[servers.index(first_life)] > 0
    assert per_server[servers.index(second_life)] > 0

    backends = await trio.to_thread.run_sync(wait_for_quiet_database, demo_cluster, fleet.bouncer)
    # The run's figures, for whoever reads the output (pytest -s).
    sys.stderr.write(
        f"calls {len(run.answered)}, retries {sum(run.retries.values())} {dict(run.retries)},"
        f" {elapsed:.1f} s, audit records per server {dict(per_server)}, reader backends after: {backends}\n"
    )
