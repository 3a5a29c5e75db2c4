"""Many clients on one database (docs/operations/deployments.md): 32 server processes, each a separate
client with 2 calls in flight, against PostgreSQL directly and through PgBouncer (transaction
pooling, a server pool of 8), in the same run.

Figures: calls per second and p95 latency through PgBouncer as ratios of the same load directly
against PostgreSQL (the floor), and the most backends PostgreSQL held for the servers either way.
A fresh cluster of its own (more max_connections than the demo's: directly, 32 servers with pools of
2 need 64 backends). Every reply is checked; a wrong or missing one makes the figure a MISS.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.common import Figure

SERVERS = 32
IN_FLIGHT = 2
ROUNDS = 40
POOL = 8


def run() -> list[Figure]:
    import psycopg

    from mcp_suite.demo.cluster import Cluster
    from mcp_suite.demo.seed import READER_USER
    from tests.support.deploy import password_of
    from tests.support.devdb.pgbouncer import open_pgbouncer
    from tests.support.fleet import FleetResult, backend_counter, open_fleet, run_fleet

    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-bench-deploy-")))
    try:
        with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET max_connections = 150")
            conn.execute(f"ALTER ROLE {READER_USER} CONNECTION LIMIT -1")
        cluster.stop()
        cluster.start()
        password = password_of(cluster.reader_dsn)

        def load(dsn: str, pooler: str) -> FleetResult:
            with (
                open_fleet(
                    dsn, servers=SERVERS, in_flight=IN_FLIGHT, env={"MCP_SQL_POOLER": pooler}
                ) as fleet,
                backend_counter(cluster.admin_dsn, READER_USER) as backends,
            ):
                return run_fleet(fleet, in_flight=IN_FLIGHT, rounds=ROUNDS, watch=backends)

        direct = load(cluster.reader_dsn, "none")
        with open_pgbouncer(cluster, {READER_USER: password}, pool_size=POOL) as bouncer:
            pooled = load(bouncer.dsn(READER_USER, password, cluster.dbname), "transaction")
    finally:
        cluster.destroy()
    expected = SERVERS * IN_FLIGHT * ROUNDS
    right = not direct.wrong and not pooled.wrong and direct.calls == pooled.calls == expected
    label = f"deploy: {SERVERS} servers x {IN_FLIGHT} in flight"
    return [
        Figure(f"{label}, direct: calls/s", direct.calls / direct.seconds, "calls/s", ok=right or None),
        Figure(
            f"{label}, PgBouncer pool {POOL}: calls/s",
            pooled.calls / pooled.seconds,
            "calls/s",
            ok=right,
            floor=direct.calls / direct.seconds,
            note="floor: the same load directly",
        ),
        Figure(f"{label}, direct: p95", direct.p95_ms(), "ms"),
        Figure(
            f"{label}, PgBouncer pool {POOL}: p95",
            pooled.p95_ms(),
            "ms",
            floor=direct.p95_ms(),
            note="floor: the same load directly",
        ),
        Figure(f"{label}, direct: most backends", direct.watched_max, "backends"),
        Figure(
            f"{label}, PgBouncer pool {POOL}: most backends",
            pooled.watched_max,
            "backends",
            target=f"<= {POOL}",
            ok=pooled.watched_max <= POOL,
        ),
    ]


def _main() -> None:
    for figure in run():
        sys.stdout.write(figure.line() + "\n")


if __name__ == "__main__":
    _main()
