"""A backend that outlives its call keeps counting against the server's connections (issue 51;
docs/tools/read_only_sql.md, "Work that cannot be stopped" and "The connection arithmetic").

`@>` between two large arrays is quadratic and PostgreSQL does not look at the statement timeout
inside it, so the backend runs on long after the call's deadline has answered the caller. Over
arrays the query builds it is refused by default; these servers allow it
(MCP_SQL_ALLOW_UNINTERRUPTIBLE, as an operator may), as they would XML: the arithmetic must hold
for whatever work an operator lets run. Were its
connection dropped then, the pool would open another beside it, and a handful of such calls would
fill the role's CONNECTION LIMIT and refuse every other call. Through the real server (stdio) with a
pool of 2: the login role's backends, sampled while the stuck ones run, never pass the pool plus the
audit's one, no call is refused for want of a connection, and once PostgreSQL is done the same
client is served on the connections it got back. A held connection is given up only when it breaks:
its TCP keepalives find a silent peer within a few connect timeouts, unless the DSN says otherwise.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from tests.support.client import ServerProcess, problem_of
from tests.support.http_server import open_http_server
from tests.support.issuer import open_issuer
from tests.support.pg import open_executor
from tests.support.sql_calls import http_sql_call

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

POOL = 2
# Quadratic in N, and uninterruptible: a few seconds to tens of seconds past the 0.5 s timeout here.
N = 100_000
STUCK = (
    f"SELECT array(SELECT g FROM generate_series(1, {N}) AS g)"
    f" @> array(SELECT g FROM generate_series(1, {N}) AS g) AS contained"
)
ENV = {
    "MCP_METRICS_ENABLED": "false",
    "MCP_SQL_ALLOW_UNINTERRUPTIBLE": "true",
    "MCP_SQL_POOL_MAX_SIZE": str(POOL),
    "MCP_SQL_POOL_MIN_SIZE": "1",
    "MCP_SQL_STATEMENT_TIMEOUT_MS": "500",
    "MCP_SQL_CANCEL_GRACE_S": "0.5",
    "MCP_SQL_CONNECT_TIMEOUT_S": "1",
    "MCP_CALL_DEADLINE_S": "3",
}


class _Backends:
    """Samples, every 50 ms on an admin connection, how many client backends the login role has."""

    def __init__(self, admin_dsn: str) -> None:
        self._admin_dsn = admin_dsn
        self._stop = threading.Event()
        self.most = 0
        self.samples = 0
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _Backends:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _sample(self) -> None:
        with psycopg.connect(self._admin_dsn, autocommit=True) as admin:
            while not self._stop.is_set():
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE usename = %s AND backend_type = 'client backend'",
                    (READER_USER,),
                ).fetchone()
                self.most = max(self.most, int(row[0]) if row else 0)
                self.samples += 1
                self._stop.wait(0.05)


def _still_running(admin: psycopg.Connection[Any]) -> int:
    # The query runs in its FETCH (the DECLARE only plans it): that is the statement shown.
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND state = 'active'"
        " AND query LIKE 'FETCH%%mcp_suite_query%%'",
        (READER_USER,),
    ).fetchone()
    return int(row[0]) if row else 0


@contextlib.contextmanager
def _role_limit(admin: psycopg.Connection[Any], limit: int) -> Iterator[None]:
    row = admin.execute("SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (READER_USER,)).fetchone()
    assert row is not None
    admin.execute(f'ALTER ROLE "{READER_USER}" CONNECTION LIMIT {limit}'.encode())
    try:
        yield
    finally:
        admin.execute(f'ALTER ROLE "{READER_USER}" CONNECTION LIMIT {int(row[0])}'.encode())


def _not_starved(result: dict[str, Any]) -> None:
    """Served, or refused for its own time (its deadline): never for want of a database connection."""
    if result.get("isError") is not True:
        return
    problem = problem_of(result)
    assert problem["type"].endswith("execution-timeout"), json.dumps(problem)


def test_backends_that_outlive_their_calls_keep_their_slots_so_the_role_limit_is_never_passed(
    demo_cluster: Cluster,
) -> None:
    # The role guide's arithmetic (the pool and the audit's connection) and one spare, so a server
    # that let a backend outlive its connection shows in the count before the limit.
    with (
        psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin,
        _role_limit(admin, POOL + 2),
        _Backends(demo_cluster.admin_dsn) as backends,
        ServerProcess(env={**ENV, "MCP_SQL_DSN": demo_cluster.reader_dsn}) as server,
    ):
        server.initialize()
        warm = server.call_tool("read_only_sql", {"sql": "SELECT 41 + 1 AS n"}, timeout=60)
        assert warm.get("isError") is not True, json.dumps(warm)
        ids = [
            server.send_request("tools/call", {"name": "read_only_sql", "arguments": {"sql": STUCK}})
            for _ in range(POOL + 2)
        ]
        stuck = [server.response(i, timeout=60)["result"] for i in ids]
        # The premise: PostgreSQL still runs them after every call has been answered.
        assert _still_running(admin) > 0, server.stderr_text()
        after = server.call_tool("read_only_sql", {"sql": "SELECT 41 + 1 AS n"}, timeout=60)
        ends = time.monotonic() + 180
        while _still_running(admin) and time.monotonic() < ends:
            time.sleep(0.2)
        assert _still_running(admin) == 0
        served = server.call_tool("read_only_sql", {"sql": "SELECT 41 + 1 AS n"}, timeout=60)
        assert server.stop() == 0
    assert backends.samples > 10
    assert backends.most <= POOL + 1, backends.most
    for result in [*stuck, after]:
        _not_starved(result)
    assert served.get("isError") is not True, json.dumps(served)
    assert served["structuredContent"]["rows"] == [[42]]
    assert "PostgreSQL is not interrupting its work" in server.stderr_text()


async def test_one_caller_s_stuck_backends_leave_another_caller_served_over_http(
    demo_cluster: Cluster,
) -> None:
    # Alice's share of the threads is one (a pool of two); each of her calls would leave a backend
    # running were its connection given up, so Bob's call would find the role's slots full.
    with (
        psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin,
        _role_limit(admin, POOL + 2),
        open_issuer() as issuer,
        open_http_server(issuer, {**ENV, "MCP_SQL_DSN": demo_cluster.reader_dsn}) as server,
        _Backends(demo_cluster.admin_dsn) as backends,
    ):
        alice = issuer.token(server.url, sub="alice", scope="sql:read")
        bob = issuer.token(server.url, sub="bob", scope="sql:read")
        with trio.fail_after(240):
            async with httpx2.AsyncClient(timeout=120) as http:
                warm = await http.post(server.url, **http_sql_call("SELECT 1", bob, 0))
                assert warm.json()["result"]["isError"] is False, warm.content
                stuck: dict[int, dict[str, Any]] = {}

                async def post(request_id: int) -> None:
                    answer = await http.post(server.url, **http_sql_call(STUCK, alice, request_id))
                    stuck[request_id] = answer.json()["result"]

                async with trio.open_nursery() as nursery:
                    for n in range(1, POOL + 3):
                        nursery.start_soon(post, n)
                assert await trio.to_thread.run_sync(_still_running, admin) > 0  # the premise
                answered = await http.post(server.url, **http_sql_call("SELECT 41 + 1 AS n", bob, 100))
                bob_answer = answered.json()["result"]
                while await trio.to_thread.run_sync(_still_running, admin):
                    await trio.sleep(0.2)
    assert backends.samples > 10
    assert backends.most <= POOL + 1, backends.most
    for result in stuck.values():
        _not_starved(result)
    assert bob_answer.get("isError") is not True, json.dumps(bob_answer)
    assert bob_answer["structuredContent"]["rows"] == [[42]]


def _liveness(dsn: str) -> dict[str, str]:
    executor = open_executor(dsn, sql_connect_timeout_s=2.0)
    try:
        with executor.connections.connection(timeout=30) as conn:
            parameters = conn.info.get_parameters()
    finally:
        executor.close()
    names = ("keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout")
    return {name: parameters[name] for name in names if name in parameters}


def test_a_held_connection_finds_a_silent_peer_through_its_keepalives_unless_the_dsn_sets_them(
    demo_cluster: Cluster,
) -> None:
    # libpq's own default waits two hours of silence before its first probe.
    assert _liveness(demo_cluster.reader_dsn) == {
        "keepalives": "1",
        "keepalives_idle": "2",
        "keepalives_interval": "2",
        "keepalives_count": "3",
        "tcp_user_timeout": "8000",
    }
    own = _liveness(f"{demo_cluster.reader_dsn} keepalives_idle=60 tcp_user_timeout=0")
    assert own["keepalives_idle"] == "60"
    assert own.get("tcp_user_timeout", "0") == "0"
    assert own["keepalives_interval"] == "2"
