"""Many clients on one database: 32 server processes, each a separate client with 2 calls in
flight, through PgBouncer (transaction pooling, a server pool of 8) in front of PostgreSQL.

Every reply is right and matched to its request (by id and by a tag unique in the run), none is
lost, PostgreSQL never holds more than the pool's 8 backends for the servers, and once they are
idle for PgBouncer's `server_idle_timeout` (1 s here) no backend at all is left, while all 32
servers keep running and answer again on demand. Its speed is measured by `make bench`
(bench_deploy), never here.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from tests.support.deploy import password_of
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.fleet import backend_counter, open_fleet, run_fleet

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

SERVERS = 32
IN_FLIGHT = 2
ROUNDS = 5
POOL = 8
IDLE_TIMEOUT_S = 1
BEHIND_POOLER = {"MCP_SQL_POOLER": "transaction"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    created = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-fleet-")))
    try:
        with psycopg.connect(created.admin_dsn, autocommit=True) as conn:
            # The demo role allows 5 sessions; the pool is allowed its 8 (and no more).
            conn.execute(f"ALTER ROLE {READER_USER} CONNECTION LIMIT {POOL}")
        yield created
    finally:
        created.destroy()


def wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_32_servers_share_a_pool_of_8_and_release_it_when_idle(cluster: Cluster) -> None:
    password = password_of(cluster.reader_dsn)
    with open_pgbouncer(
        cluster, {READER_USER: password}, pool_size=POOL, server_idle_timeout_s=IDLE_TIMEOUT_S
    ) as bouncer:
        dsn = bouncer.dsn(READER_USER, password, cluster.dbname)
        with (
            open_fleet(dsn, servers=SERVERS, in_flight=IN_FLIGHT, env=BEHIND_POOLER) as fleet,
            backend_counter(cluster.admin_dsn, READER_USER) as backends,
        ):
            result = run_fleet(fleet, in_flight=IN_FLIGHT, rounds=ROUNDS, watch=backends)
            assert result.wrong == []
            assert result.calls == SERVERS * IN_FLIGHT * ROUNDS
            assert 1 <= result.watched_max <= POOL
            # Idle servers pin nothing: PgBouncer closes its backends after server_idle_timeout
            # (its janitor looks every few seconds), while every server keeps its client session.
            assert wait_for(lambda: backends() == 0, timeout_s=IDLE_TIMEOUT_S + 20), backends()
            assert all(server.proc.poll() is None for server in fleet)
            again = run_fleet(fleet, in_flight=IN_FLIGHT, rounds=1, watch=backends)
            assert (again.wrong, again.calls) == ([], SERVERS * IN_FLIGHT)
            assert again.watched_max <= POOL
