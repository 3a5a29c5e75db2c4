"""What issue 26's guarantees cost (docs/performance.md), against the demo cluster (started if not running).

- The definer guard per call, with names the catalogue holds and with names it does not (a
  misspelt function, `BETWEEN`'s operators): with negative caching neither reads the catalogue.
  Ratio: its share of the executor's sequential p50.
- The re-audit: how long one takes (`reaudit.audit_once`, the whole audit on its own connection plus
  the guard's refresh), and the executor's sequential p50 while re-audits run back to back in
  another thread (the worst case; the default interval is 30 s), against the p50 without.
- The clean-backend reset: one call's pipeline with the reset it sends now (`DEALLOCATE ALL`, then
  unlock and reseed) against the same pipeline with the former reset (unlock only), p50 of each,
  alternated in the same run.
- The window of issue 40: from a superuser's `ALTER FUNCTION ... SECURITY DEFINER` on a helper
  PUBLIC may execute until a call of it through the real engine (its re-audit loop running, at the
  default MCP_SQL_REAUDIT_INTERVAL_S) is refused. Without the role guide's event trigger, once, with
  the ALTER made just after an audit (the worst case: about one interval); with it, WINDOW_SAMPLES
  times (each followed by the fix, `SECURITY INVOKER`, and the time until calls are served again).
  `python -m bench.bench_reaudit window` runs this part alone.
- Issue 51: one whole audit (`audit_mapped`, one connection: the login role, then each mapped role
  in its own transaction, as a re-audit runs it) with MAPPED roles that may each execute FUNCTIONS
  functions (string-bodied and SQL-standard LANGUAGE sql, and plpgsql) and read VIEWS views: without
  the checks issue 51 added (the floor: the audit's list as it was), with them judging every body
  afresh (the verdict caches emptied: the first audit after a start), and with them as a re-audit
  finds the bodies (cached), alternated in one process. `python -m bench.bench_reaudit bodies` runs
  it alone; on the code before issue 51 all three are the audit of then.
"""

from __future__ import annotations

import functools
import statistics
import sys
import threading
import time
from typing import Any

from bench.common import Figure, median_seconds

CALLS = 2_000
QUERY = "SELECT section, count(*) FROM docs.pages GROUP BY section"
UNKNOWN = "SELECT no_such_function(words) FROM docs.pages WHERE words BETWEEN 1 AND 2"


def _checks(check: Any, conn: Any, functions: frozenset[str], operators: frozenset[str], loops: int) -> None:
    for _ in range(loops):
        check(conn, functions, operators)


def _p50_ms(fn: Any, calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def _figures(dsn: str) -> list[Figure]:
    import psycopg

    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.sql.engine.connections import pinned_settings, reset_statements
    from mcp_suite.tools.sql.engine.executor import CallTicket, Executor
    from mcp_suite.tools.sql.engine.pipeline import run_pipeline
    from mcp_suite.tools.sql.engine.policy import vet_sql
    from mcp_suite.tools.sql.engine.role_audit.link import AuditLink
    from mcp_suite.tools.sql.engine.role_audit.reaudit import audit_once

    settings = Settings(sql_dsn=SecretStr(dsn), metrics_enabled=False)
    executor = Executor(settings, dsn)
    executor.open()
    executor.mark_audited()
    known = vet_sql(QUERY, max_rows=50)
    unknown = vet_sql(UNKNOWN, max_rows=50)

    link = AuditLink(dsn, connect_timeout_s=settings.sql_connect_timeout_s, listen=True)

    def call() -> None:
        executor.run_vetted(known, max_rows=50, ticket=CallTicket())

    figures: list[Figure] = []
    try:
        for _ in range(50):
            call()
        base_p50 = _p50_ms(call, CALLS)

        # The guard, per call, known and unknown names (its reads counted: they must not grow)
        with psycopg.connect(dsn, autocommit=True) as conn:
            check = executor.definers.check
            loops = 10_000
            reads = 0
            for label, vetted in (("known names", known), ("unknown names", unknown)):
                before = executor.definers.statistics().catalogue_reads
                seconds = median_seconds(
                    functools.partial(_checks, check, conn, vetted.functions, vetted.operators, loops), runs=5
                )
                reads = executor.definers.statistics().catalogue_reads - before
                figures.append(
                    Figure(
                        f"reaudit: definer guard per call ({label})",
                        seconds / loops * 1e6,
                        "µs",
                        floor=base_p50 * 1000,
                        note="ratio = its share of the executor p50",
                    )
                )
            figures.append(
                Figure(
                    f"reaudit: catalogue reads during {5 * loops:,} checks with unknown names",
                    reads,
                    "reads",
                    target="0",
                    ok=reads == 0,
                )
            )

        # The re-audit: its own duration, and the calls' p50 while it runs back to back
        once = median_seconds(lambda: audit_once(link, settings, refresh=executor.definers.refresh), runs=5)
        figures.append(
            Figure("reaudit: one re-audit (dedicated connection, audit + guard refresh)", once * 1000, "ms")
        )
        stop = threading.Event()
        audits = 0

        def reaudit_loop() -> None:
            nonlocal audits
            while not stop.is_set():
                audit_once(link, settings, refresh=executor.definers.refresh)
                audits += 1

        worker = threading.Thread(target=reaudit_loop)
        worker.start()
        try:
            busy_p50 = _p50_ms(call, CALLS)
        finally:
            stop.set()
            worker.join()
        quiet_p50 = _p50_ms(call, CALLS)
        figures.append(
            Figure(
                f"reaudit: executor p50 while re-audits run back to back ({audits} audits)",
                busy_p50,
                "ms",
                floor=quiet_p50,
                note="floor: the same calls, no re-audit",
            )
        )

        # The reset: today's two statements against the former one, the same pipeline otherwise
        # the executor's own statement
        set_local = pinned_settings(settings, dsn, local=True)
        declare = f'DECLARE "c" NO SCROLL CURSOR FOR {known.sql}'.encode()
        head = [
            b"BEGIN READ ONLY",
            b"RESET ALL",
            set_local,
            declare,
            b'FETCH FORWARD 51 FROM "c"',
            b"ROLLBACK",
        ]
        former = [*head, b"SELECT pg_advisory_unlock_all()"]
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:

            def send(commands: list[bytes]) -> None:
                run_pipeline(conn, commands, max_bytes=1 << 20, timeout_s=10)

            now_samples: list[float] = []
            former_samples: list[float] = []
            for _ in range(CALLS):
                for commands, samples in (
                    ([*head, *reset_statements()], now_samples),  # as a call sends it
                    (former, former_samples),
                ):
                    start = time.perf_counter()
                    send(commands)
                    samples.append(time.perf_counter() - start)
        figures.append(
            Figure(
                "reaudit: one call's pipeline with the clean-backend reset (DEALLOCATE ALL, reseed)",
                statistics.median(now_samples) * 1000,
                "ms",
                floor=statistics.median(former_samples) * 1000,
                note="floor: the same pipeline with the former reset (unlock only)",
            )
        )
    finally:
        link.close()
        executor.close()
    return figures


WINDOW_SAMPLES = 5
HELPER = "docs.mcp_bench_fmt_ticket"
HELPER_CALL = f"SELECT {HELPER}('T-1')"


async def _refused_after(engine: Any, admin: Any, statement: str, *, refused: bool) -> tuple[float, str]:
    """Seconds from `statement` (as the superuser) until a call of the helper is refused (or,
    `refused=False`, served again), and the problem's slug (or "served")."""
    import trio

    from mcp_suite.problems import ProblemError

    def call(ticket: Any) -> object:
        return engine.vet_and_run(HELPER_CALL, 1, ticket)

    start = time.perf_counter()
    await trio.to_thread.run_sync(admin.execute, statement.encode())
    with trio.fail_after(120):
        while True:
            try:
                await engine.run_blocking(call)
                outcome = "served"
            except ProblemError as exc:
                outcome = exc.slug
            if (outcome != "served") == refused:
                return time.perf_counter() - start, outcome
            await trio.sleep(0.01)


async def _windows(dsn: str, admin: Any, *, samples: int) -> list[tuple[float, str]]:
    """One engine at the default settings, its re-audit loop running: the ALTER `samples` times
    (each followed by the fix), the first right after the loop started (just after an audit)."""
    import trio

    from mcp_suite.settings import SecretStr, Settings
    from mcp_suite.tools.sql.engine.engine import open_engine

    engine = open_engine(Settings(sql_dsn=SecretStr(dsn), metrics_enabled=False), dsn)
    windows: list[tuple[float, str]] = []
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(engine.serve_reaudit)
            for _ in range(samples):
                await _refused_after(engine, admin, "SELECT 1", refused=False)  # served, guard warm
                windows.append(
                    await _refused_after(
                        engine, admin, f"ALTER FUNCTION {HELPER}(text) SECURITY DEFINER", refused=True
                    )
                )
                windows.append(
                    await _refused_after(
                        engine, admin, f"ALTER FUNCTION {HELPER}(text) SECURITY INVOKER", refused=False
                    )
                )
            nursery.cancel_scope.cancel()
    finally:
        engine.close()
    return windows


def _window_figures(dsn: str, admin_dsn: str) -> list[Figure]:
    import logging

    import psycopg
    import trio

    from tests.support.reaudit import drop_event_trigger, install_event_trigger

    # The engine's refusals and recoveries are logged (CRITICAL, WARNING): not the bench's output.
    logging.getLogger("mcp_suite").setLevel(logging.CRITICAL + 1)
    figures: list[Figure] = []
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(
            f"CREATE FUNCTION {HELPER}(t text) RETURNS text LANGUAGE sql SET search_path = pg_catalog"
            " AS $$ SELECT t || ' by ' || current_user $$".encode()
        )
        admin.execute(f"GRANT EXECUTE ON FUNCTION {HELPER}(text) TO PUBLIC".encode())
        try:
            drop_event_trigger(admin)
            (before, slug), _ = trio.run(lambda: _windows(dsn, admin, samples=1))
            figures.append(
                Figure(
                    "reaudit: ALTER ... SECURITY DEFINER window, no event trigger (worst case)",
                    before,
                    "s",
                    note=f"refused as {slug}; interval 30 s",
                )
            )
            install_event_trigger(admin)
            windows = trio.run(lambda: _windows(dsn, admin, samples=WINDOW_SAMPLES))
            refusals = [seconds for seconds, _ in windows[0::2]]
            recoveries = [seconds for seconds, _ in windows[1::2]]
            slugs = sorted({slug for _, slug in windows[0::2]})
            for label, values, note in (
                ("refused", refusals, f"; refused as {', '.join(slugs)}"),
                ("served again after the fix", recoveries, ""),
            ):
                figures.append(
                    Figure(
                        f"reaudit: with the event trigger, {label} (median of {len(values)})",
                        statistics.median(values),
                        "s",
                        target="< 1 s",
                        ok=max(values) < 1.0,
                        note=f"max {max(values):.3f} s{note}",
                    )
                )
        finally:
            drop_event_trigger(admin)
            admin.execute(f"DROP FUNCTION IF EXISTS {HELPER}(text)".encode())
    return figures


MAPPED = 20
FUNCTIONS = 200
VIEWS = 20
AUDITS = 9
BODIES_SCHEMA = "mcp_bench_bodies"


def _bodies_sql(roles: tuple[str, ...]) -> list[str]:
    """FUNCTIONS clean helpers and VIEWS clean views in one schema, each granted to every role."""
    statements = [f"DROP SCHEMA IF EXISTS {BODIES_SCHEMA} CASCADE", f"CREATE SCHEMA {BODIES_SCHEMA}"]
    for n in range(FUNCTIONS):
        name = f"{BODIES_SCHEMA}.f{n}"
        if n % 10 < 6:  # a string body, as most helpers are written
            statements.append(
                f"CREATE FUNCTION {name}(t text) RETURNS text LANGUAGE sql STABLE"
                f" AS $$ SELECT upper(t) || '-{n}' || lower(pg_catalog.btrim(t)) $$"
            )
        elif n % 10 < 8:  # a SQL-standard body
            statements.append(
                f"CREATE FUNCTION {name}(t text) RETURNS text LANGUAGE sql STABLE"
                f" RETURN pg_catalog.concat(upper(t), '-{n}')"
            )
        else:
            statements.append(
                f"CREATE FUNCTION {name}(n integer) RETURNS integer LANGUAGE plpgsql STABLE"
                f" AS $$ BEGIN IF n > {n} THEN RETURN abs(n) * 2; END IF; RETURN {n}; END $$"
            )
    for n in range(VIEWS):
        statements.append(
            f"CREATE VIEW {BODIES_SCHEMA}.v{n} WITH (security_barrier) AS"
            f" SELECT owner, length(body) AS size FROM mcp_people.notes WHERE length(body) > {n}"
        )
    for role in roles:
        statements += [
            f"GRANT USAGE ON SCHEMA {BODIES_SCHEMA} TO {role}",
            f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {BODIES_SCHEMA} TO {role}",
            f"GRANT SELECT ON ALL TABLES IN SCHEMA {BODIES_SCHEMA} TO {role}",
        ]
    return statements


def _issue_51_checks() -> tuple[Any, ...]:
    """The checks issue 51 added to the audit's list (none before it)."""
    try:
        from mcp_suite.tools.sql.engine.role_audit.bodies import function_body_findings
        from mcp_suite.tools.sql.engine.role_audit.views import view_findings
    except ImportError:
        return ()
    return (function_body_findings, view_findings)


def _clear_verdicts() -> None:
    """Empty the audit's verdict caches (absent before issue 51: nothing to clear)."""
    try:
        from mcp_suite.tools.sql.engine.role_audit.bodies import judge_body
        from mcp_suite.tools.sql.engine.role_audit.views import judge_view
    except ImportError:
        return
    judge_body.cache_clear()
    judge_view.cache_clear()


def _audit_ms(conn: Any, roles: tuple[str, ...], checks: tuple[Any, ...], *, cold: bool) -> float:
    """One whole audit on `conn` with the list `checks`, in ms (no refusal: one stops the audit early).
    Before issue 51 `audit_mapped` takes no list: the audit of then runs whatever is passed."""
    import inspect

    from mcp_suite.tools.sql.engine.role_audit.audit import audit_mapped
    from mcp_suite.tools.sql.engine.role_audit.finding import refusals

    seam = {"checks": checks} if "checks" in inspect.signature(audit_mapped).parameters else {}
    if cold:
        _clear_verdicts()
    start = time.perf_counter()
    refused = refusals(audit_mapped(conn, roles=roles, **seam))
    elapsed = time.perf_counter() - start
    assert not refused, refused
    return elapsed * 1000


def _bodies_figures(cluster: Any) -> list[Figure]:
    """One whole audit without issue 51's checks (the floor), with them judging every body afresh,
    and with them as a re-audit (verdicts cached), alternated AUDITS times on one connection with
    MAPPED roles, FUNCTIONS functions and VIEWS views: the shared machine's drift hits all alike."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from mcp_suite.tools.sql.engine.role_audit import audit
    from tests.support.identity import LOGIN_PASSWORD, login_dsn, people

    dsn = make_conninfo(login_dsn(cluster), password=LOGIN_PASSWORD)
    roles = tuple(f"mcp_id_bench_{n}" for n in range(MAPPED))
    added = _issue_51_checks()
    after = audit.CHECKS
    before = tuple(check for check in after if check not in added)
    samples: dict[str, list[float]] = {"before": [], "cold": [], "warm": []}
    with people(cluster, roles) as admin, psycopg.connect(dsn, autocommit=True) as conn:
        try:
            for statement in _bodies_sql(roles):
                admin.execute(statement.encode())
            _audit_ms(conn, roles, after, cold=False)  # the connection and the caches warm
            runs = (("before", before, False), ("cold", after, True), ("warm", after, False))
            for cycle in range(AUDITS):
                # Each cycle in another order: what comes first in a cycle gains or loses nothing.
                for name, checks, cold in runs[cycle % 3 :] + runs[: cycle % 3]:
                    samples[name].append(_audit_ms(conn, roles, checks, cold=cold))
        finally:
            admin.execute(f"DROP SCHEMA IF EXISTS {BODIES_SCHEMA} CASCADE".encode())
    shape = f"{MAPPED} mapped roles, {FUNCTIONS} functions, {VIEWS} views"
    floor = statistics.median(samples["before"])
    note = f"floor: the same audit without issue 51's checks; median of {AUDITS}, order rotated"
    return [
        Figure(f"reaudit: one whole audit, {shape}, without issue 51's checks", floor, "ms"),
        Figure(
            "reaudit: the same with them, every body judged afresh",
            statistics.median(samples["cold"]),
            "ms",
            floor=floor,
            note=note,
        ),
        Figure(
            "reaudit: the same with them, as a re-audit (verdicts cached)",
            statistics.median(samples["warm"]),
            "ms",
            floor=floor,
            note=note,
        ),
    ]


def run(parts: tuple[str, ...] = ("costs", "window", "bodies")) -> list[Figure]:
    from mcp_suite.demo.session import open_demo_cluster

    cluster, started_here = open_demo_cluster()
    try:
        figures = _figures(cluster.reader_dsn) if "costs" in parts else []
        if "window" in parts:
            figures += _window_figures(cluster.reader_dsn, cluster.admin_dsn)
        if "bodies" in parts:
            figures += _bodies_figures(cluster)
        return figures
    finally:
        if started_here:
            cluster.stop()


def _main() -> None:
    parts = tuple(sys.argv[1:]) or ("costs", "window", "bodies")
    for figure in run(parts):
        sys.stdout.write(figure.line() + "\n")


if __name__ == "__main__":
    _main()
