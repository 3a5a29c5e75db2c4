"""Fairness all the way down (issue 52): a source's database threads are shared per caller. Through
`mcp-suite serve-http` with two verified callers and the demo database: while Alice runs her whole
share of slow queries (each waits on a lock an administrator holds, so it runs until released),
Bob's quick query on the same source is answered at once, not after hers. Where there is one caller
(MCP_HTTP_AUTH=none, stdio) it has no share to keep: every thread is its own."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import httpx2
import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from tests.support.harness import open_session
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.pg import sql_settings
from tests.support.sql_calls import http_sql_call

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

POOL = 4  # the source's database threads; a caller's share of them is one fewer
ALICE_CALLS = 8  # her share of the call slots (MCP_HTTP_MAX_CALLS_PER_IDENTITY's default)
LOCKED = "SELECT count(*) FROM reports.releases"


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def server(issuer: TestIssuer, demo_cluster: Cluster) -> Iterator[HttpServer]:
    env = {
        "MCP_SQL_DSN": demo_cluster.reader_dsn,
        "MCP_SQL_POOL_MAX_SIZE": str(POOL),
        # Far above what the test needs: a query waiting on the lock runs until it is released.
        "MCP_SQL_STATEMENT_TIMEOUT_MS": "20000",
    }
    with open_http_server(issuer, env) as running:
        yield running


def _waiting_on_the_lock(admin_dsn: str) -> list[str]:
    """The server's sessions waiting on a lock: Alice's queries that hold a database thread."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT query FROM pg_stat_activity"
            " WHERE application_name LIKE 'mcp-suite/%' AND wait_event_type = 'Lock'"
        ).fetchall()
    return [r[0] for r in rows]


async def test_one_caller_s_slow_queries_leave_another_caller_a_database_thread(
    server: HttpServer, issuer: TestIssuer, demo_cluster: Cluster
) -> None:
    alice = issuer.token(server.url, sub="alice", scope="sql:read")
    bob = issuer.token(server.url, sub="bob", scope="sql:read")
    answers: dict[int, httpx2.Response] = {}

    async def post(http: httpx2.AsyncClient, sql: str, token: str, request_id: int) -> None:
        answers[request_id] = await http.post(server.url, **http_sql_call(sql, token, request_id))

    lock = psycopg.connect(demo_cluster.admin_dsn)  # a transaction holding the table's lock
    try:
        lock.execute("LOCK TABLE reports.releases IN ACCESS EXCLUSIVE MODE")
        with trio.fail_after(60):
            async with httpx2.AsyncClient(timeout=120) as http, trio.open_nursery() as nursery:
                warm = await http.post(
                    server.url, **http_sql_call("SELECT 1", bob, 0)
                )  # the pool and policy ready
                assert warm.json()["result"]["isError"] is False, warm.content
                for n in range(1, ALICE_CALLS + 1):
                    nursery.start_soon(post, http, LOCKED, alice, n)
                while len(await trio.to_thread.run_sync(_waiting_on_the_lock, demo_cluster.admin_dsn)) < (
                    POOL - 1
                ):
                    await trio.sleep(0.05)
                # Alice holds her share of the threads; her other calls wait for her own threads.
                answered = await http.post(server.url, **http_sql_call("SELECT 42 AS answer", bob, 100))
                assert answered.json()["result"]["structuredContent"]["rows"] == [[42]], answered.content
                # Bob was served while every one of Alice's queries still waits on the lock, and she
                # never held more than her share of the source's threads.
                assert answers == {}
                waiting = await trio.to_thread.run_sync(_waiting_on_the_lock, demo_cluster.admin_dsn)
                assert len(waiting) == POOL - 1, waiting
                assert all(LOCKED in query for query in waiting), waiting
                lock.commit()  # the lock goes: Alice's queries run, in turns of her share
        assert sorted(answers) == list(range(1, ALICE_CALLS + 1))
        for answer in answers.values():
            assert answer.json()["result"]["structuredContent"]["rows"] == [[3]], answer.content
    finally:
        lock.close()


async def test_without_authorization_the_one_caller_holds_every_database_thread(
    demo_cluster: Cluster,
) -> None:
    env = {"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_SQL_POOL_MAX_SIZE": str(POOL)}
    lock = psycopg.connect(demo_cluster.admin_dsn)
    try:
        lock.execute("LOCK TABLE reports.releases IN ACCESS EXCLUSIVE MODE")
        with open_http_server(None, env) as server, trio.fail_after(60):
            async with httpx2.AsyncClient(timeout=120) as http, trio.open_nursery() as nursery:
                for n in range(1, POOL + 1):
                    call = http_sql_call(LOCKED, "", n)
                    del call["headers"]["Authorization"]
                    nursery.start_soon(functools.partial(http.post, server.url, **call))
                # `anonymous` is everyone, as on stdio: no share to keep, every thread is its own.
                while len(await trio.to_thread.run_sync(_waiting_on_the_lock, demo_cluster.admin_dsn)) < POOL:
                    await trio.sleep(0.05)
                lock.commit()
    finally:
        lock.close()


async def test_over_stdio_the_one_caller_holds_every_database_thread(demo_cluster: Cluster) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_pool_max_size=POOL, sql_statement_timeout_ms=20_000)
    lock = psycopg.connect(demo_cluster.admin_dsn)
    try:
        lock.execute("LOCK TABLE reports.releases IN ACCESS EXCLUSIVE MODE")
        with trio.fail_after(60):
            async with open_session(settings=settings, builtins=True, test_tools=False) as h:
                await h.initialize()
                calls = [await h.call("read_only_sql", {"sql": LOCKED}) for _ in range(POOL)]
                while len(await trio.to_thread.run_sync(_waiting_on_the_lock, demo_cluster.admin_dsn)) < POOL:
                    await trio.sleep(0.05)
                lock.commit()
                for call in calls:
                    answer = await h.response(call)
                    assert answer["result"]["structuredContent"]["rows"] == [[3]], answer
    finally:
        lock.close()
