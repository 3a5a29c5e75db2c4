"""What issue 42's per-person reading costs (docs/performance.md), against the demo cluster.

- The switch per call: one executor on the identity map's login role, a trivial query (`SELECT 1`:
  the switch is all there is to see) without a role and with one (`set_config` of the role, the
  claims and `application_name` in the call's pipeline), alternated in the same run, sequential
  p50 of each; the ratio is the switch's share. The same with the per-transaction settings of
  `MCP_SQL_POOLER=transaction` (what PgBouncer needs).
- The re-audit with an identity map: one whole audit (`role_audit.audit.audit_mapped`, on one
  connection) of the login role alone (the floor), with 1 mapped role and with 20.
`python -m bench.bench_identity switch` (or `reaudit`) runs one part alone.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

from bench.common import Figure, median_seconds

CALLS = 2_000
AUDITS = 5
MANY = 20


def _p50_pair_ms(first: Any, second: Any, calls: int) -> tuple[float, float]:
    """Sequential p50 of each, alternated call by call (the machine's drift hits both alike)."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(calls):
        for fn, samples in ((first, a), (second, b)):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return statistics.median(a) * 1000, statistics.median(b) * 1000


def _switch(dsn: str) -> list[Figure]:
    from mcp_suite.tools.sql.engine.executor import CallTicket, Executor
    from mcp_suite.tools.sql.engine.identity import CallRole
    from mcp_suite.tools.sql.engine.policy import QueryPolicy, vet_sql
    from tests.support.identity import RED
    from tests.support.pg import sql_settings

    role = CallRole(RED, json.dumps({"sub": "ann", "team": "north"}), "mcp-suite/ann")
    vetted = QueryPolicy(cache_size=4, vet=vet_sql).vet("SELECT 1 AS one", max_rows=10)
    figures: list[Figure] = []
    for pooler in ("none", "transaction"):
        executor = Executor(sql_settings(dsn, sql_pooler=pooler), dsn, roles=(RED,))
        executor.open()
        executor.mark_audited()
        try:

            def call(as_role: CallRole | None, executor: Executor = executor) -> None:
                executor.run_vetted(vetted, max_rows=10, ticket=CallTicket(cancel_timeout_s=2), role=as_role)

            for _ in range(50):  # warm: the pool's connections, the type names
                call(None)
                call(role)
            plain, switched = _p50_pair_ms(lambda: call(None), lambda: call(role), CALLS)
        finally:
            executor.close()
        where = "direct" if pooler == "none" else "settings per transaction"
        figures.append(Figure(f"identity: a call without a role ({where}), p50", plain, "ms"))
        figures.append(
            Figure(
                f"identity: a call switched to its role ({where}), p50",
                switched,
                "ms",
                floor=plain,
                note="role, claims and application_name in the same round trip",
            )
        )
    return figures


def _audit_ms(dsn: str, roles: tuple[str, ...]) -> tuple[float, float]:
    """(the login role's own audit, the whole audit with `roles`), median ms of each."""
    import psycopg

    from mcp_suite.tools.sql.engine.role_audit.audit import audit_connection, audit_mapped
    from mcp_suite.tools.sql.engine.role_audit.finding import refusals

    with psycopg.connect(dsn, autocommit=True) as conn:
        refused = refusals(audit_mapped(conn, roles=roles))
        assert not refused, refused  # a refused audit stops early: not the cost asked for
        alone = median_seconds(lambda: audit_connection(conn, mapped=roles), AUDITS)
        whole = median_seconds(lambda: audit_mapped(conn, roles=roles), AUDITS)
    return alone * 1000, whole * 1000


def run(parts: tuple[str, ...] = ("switch", "reaudit")) -> list[Figure]:
    from psycopg.conninfo import make_conninfo

    from mcp_suite.demo.session import open_demo_cluster
    from tests.support.identity import BLUE, LOGIN_PASSWORD, RED, login_dsn, people

    cluster, started_here = open_demo_cluster()
    try:
        dsn = make_conninfo(login_dsn(cluster), password=LOGIN_PASSWORD)
        figures: list[Figure] = []
        if "switch" in parts:
            with people(cluster, (RED, BLUE)):
                figures += _switch(dsn)
        if "reaudit" in parts:
            for count in (1, MANY):
                roles = tuple(f"mcp_id_bench_{n}" for n in range(count))
                with people(cluster, roles):
                    alone, whole = _audit_ms(dsn, roles)
                figures.append(
                    Figure(
                        f"identity: one audit with {count} mapped role(s)",
                        whole,
                        "ms",
                        floor=alone,
                        note="floor: the login role's own audit; one transaction per mapped role",
                    )
                )
        return figures
    finally:
        if started_here:
            cluster.stop()


def _main() -> None:
    for figure in run(tuple(sys.argv[1:]) or ("switch", "reaudit")):
        sys.stdout.write(figure.line() + "\n")


if __name__ == "__main__":
    _main()
