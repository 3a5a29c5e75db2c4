"""Function indirection: a SELECT of a SECURITY DEFINER wrapper runs whatever its owner may.

Each wrapper is made by the superuser in `docs` (PUBLIC may EXECUTE it, PostgreSQL's default), around
something the policy refuses by name. It must be refused at start-up (the role audit) and, with the
audit skipped as the layer tests skip it, at run time (the executor's definer check); where a witness
can show the harm, the same call without the check shows it happening.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import QueryViolationError, ResourceLimitError
from mcp_suite.tools.base import StartupRefusedError
from mcp_suite.tools.sql.engine.definers import DefinerGuard
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.policy import vet_sql
from mcp_suite.tools.sql.engine.role_audit.connect import audit_dsn
from mcp_suite.tools.sql.engine.ticket import CallTicket
from mcp_suite.tools.sql.opener import open_sql
from tests.support.client import ServerProcess, problem_of, server_env
from tests.support.fakes import Clock
from tests.support.harness import open_session
from tests.support.pg import open_executor, run_unvetted, sql_settings

pytestmark = pytest.mark.pg

DBLINK_WITNESS = "public.mcp_dblink_witness"


@dataclass(frozen=True)
class Wrapper:
    """A SECURITY DEFINER function around one capability, and how to see that it was used."""

    name: str
    body: str  # plpgsql, formatted with {witness} (a directory) and {admin_dsn}
    returns: str = "integer"
    needs: str | None = None  # an extension the body calls
    harmed: Callable[[psycopg.Connection[Any], Path], bool] | None = None


def _file_written(name: str) -> Callable[[psycopg.Connection[Any], Path], bool]:
    return lambda _admin, witness: (witness / name).exists()


def _table_made(admin: psycopg.Connection[Any], _witness: Path) -> bool:
    return admin.execute("SELECT to_regclass(%s) IS NOT NULL", (DBLINK_WITNESS,)).fetchone() == (True,)


WRAPPERS = {
    # the probe that found the hole: COPY TO is a read, so it runs inside the read-only transaction
    "copy-to-program": Wrapper(
        "page_export",
        "BEGIN COPY (SELECT 1) TO PROGRAM 'touch {witness}/copied; cat >/dev/null'; RETURN 1; END",
        harmed=_file_written("copied"),
    ),
    "pg_read_file": Wrapper(
        "page_source", "BEGIN RETURN pg_catalog.pg_read_file('PG_VERSION'); END", returns="text"
    ),
    "dblink_exec": Wrapper(
        "page_sync",
        "BEGIN RETURN dblink_exec('{admin_dsn}', 'CREATE TABLE " + DBLINK_WITNESS + " ()'); END",
        returns="text",
        needs="dblink",
        harmed=_table_made,
    ),
    "advisory-lock": Wrapper("page_hold", "BEGIN PERFORM pg_catalog.pg_advisory_lock(4242); RETURN 1; END"),
    "lo_import": Wrapper("page_import", "BEGIN RETURN pg_catalog.lo_import('{witness}/source'); END", "oid"),
}


def _create(admin: psycopg.Connection[Any], wrapper: Wrapper, witness: Path, cluster: Cluster) -> None:
    if wrapper.needs:
        admin.execute(f"CREATE EXTENSION IF NOT EXISTS {wrapper.needs} SCHEMA public".encode())
    body = wrapper.body.format(witness=witness, admin_dsn=cluster.admin_dsn)
    admin.execute(
        f"CREATE FUNCTION docs.{wrapper.name}() RETURNS {wrapper.returns} LANGUAGE plpgsql"
        f" SECURITY DEFINER SET search_path = pg_catalog, public AS $body${body}$body$".encode()
    )
    # The demo's default privileges keep new functions from PUBLIC; the careless DBA grants it.
    admin.execute(f"GRANT EXECUTE ON FUNCTION docs.{wrapper.name}() TO PUBLIC".encode())


def _drop(admin: psycopg.Connection[Any], wrapper: Wrapper) -> None:
    admin.execute(f"DROP FUNCTION IF EXISTS docs.{wrapper.name}()".encode())
    admin.execute(f"DROP TABLE IF EXISTS {DBLINK_WITNESS}".encode())
    if wrapper.needs:
        admin.execute(f"DROP EXTENSION IF EXISTS {wrapper.needs}".encode())
    admin.execute("SELECT pg_catalog.lo_unlink(oid) FROM pg_catalog.pg_largeobject_metadata")


@pytest.fixture(params=sorted(WRAPPERS))
def wrapper(
    request: pytest.FixtureRequest,
    demo_cluster: Cluster,
    admin: psycopg.Connection[Any],
    witness_dir: Path,
) -> Iterator[Wrapper]:
    chosen = WRAPPERS[request.param]
    (witness_dir / "source").write_text("imported\n")
    (witness_dir / "source").chmod(0o644)
    _create(admin, chosen, witness_dir, demo_cluster)
    try:
        yield chosen
    finally:
        _drop(admin, chosen)


def _advisory_locks(admin: psycopg.Connection[Any]) -> int:
    (count,) = admin.execute(
        "SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND objid IN (4242, 4243)"
    ).fetchone() or (0,)
    return int(count)


def _large_objects(admin: psycopg.Connection[Any]) -> int:
    (count,) = admin.execute("SELECT count(*) FROM pg_catalog.pg_largeobject_metadata").fetchone() or (0,)
    return int(count)


def _refused(executor: Executor, sql: str) -> QueryViolationError:
    with pytest.raises(QueryViolationError) as caught:
        executor.run_vetted(vet_sql(sql, max_rows=5), max_rows=5, ticket=CallTicket())
    assert caught.value.metadata["rule"] == "definer-function"
    return caught.value


def test_each_definer_wrapper_is_a_start_up_finding_naming_it_its_owner_and_the_fix(
    demo_cluster: Cluster, wrapper: Wrapper
) -> None:
    findings = audit_dsn(demo_cluster.reader_dsn, connect_timeout_s=5)
    definers = [f for f in findings if f.capability == "definer-function"]
    assert len(definers) == 1, findings
    (finding,) = definers
    assert not finding.warning
    assert f'"docs"."{wrapper.name}"()' in finding.problem
    assert "owner devdb_admin" in finding.problem
    assert finding.fix.startswith(f'REVOKE EXECUTE ON FUNCTION "docs"."{wrapper.name}"() FROM PUBLIC')
    with (
        pytest.raises(StartupRefusedError) as refused,
        open_sql(sql_settings(demo_cluster.reader_dsn)),
    ):
        pass
    assert wrapper.name in str(refused.value)


def test_each_definer_wrapper_is_refused_at_run_time_with_the_audit_skipped(
    demo_cluster: Cluster, admin: psycopg.Connection[Any], wrapper: Wrapper, witness_dir: Path
) -> None:
    executor = open_executor(demo_cluster.reader_dsn)  # the start-up audit is skipped
    objects = _large_objects(admin)
    try:
        problem = _refused(executor, f"SELECT docs.{wrapper.name}() AS v")
        assert f"docs.{wrapper.name}()" in problem.detail
        assert problem.metadata["function"] == f"docs.{wrapper.name}()"
        if wrapper.harmed is not None:
            assert not wrapper.harmed(admin, witness_dir)
            # The same call without the check (the policy alone passes it) does the harm: the
            # witness is real, and so was the hole.
            run_unvetted(executor, f"SELECT docs.{wrapper.name}() AS v", max_rows=5, ticket=CallTicket())
            assert wrapper.harmed(admin, witness_dir)
    finally:
        executor.close()
    assert _advisory_locks(admin) == 0
    assert _large_objects(admin) == objects


REAUDIT_S = 0.3  # the re-audit interval of the server below: short, so tests wait little


@pytest.fixture(scope="module")
def server(demo_cluster: Cluster) -> Iterator[ServerProcess]:
    """The real server, started (and audited) before any wrapper exists: a careless DBA makes them
    while it runs, so the re-audit (and behind it the run-time check) stands between the model and
    each one."""
    env = {
        "MCP_SQL_DSN": demo_cluster.reader_dsn,
        "MCP_METRICS_ENABLED": "false",
        "MCP_SQL_REAUDIT_INTERVAL_S": str(REAUDIT_S),
    }
    with ServerProcess(env=env) as process:
        process.initialize()
        counted = process.call_tool("read_only_sql", {"sql": "SELECT count(*) AS n FROM docs.pages"})
        assert counted["structuredContent"]["rows"] == [[30]]
        yield process


def _count_until(server: ServerProcess, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Call a harmless query until `done(result)`, for at most a few re-audit intervals."""
    deadline = time.monotonic() + 20 * REAUDIT_S + 5
    while True:
        result = server.call_tool("read_only_sql", {"sql": "SELECT count(*) AS n FROM docs.pages"})
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(REAUDIT_S / 3)


def _refused_for(name: str) -> Callable[[dict[str, Any]], bool]:
    def check(result: dict[str, Any]) -> bool:
        return bool(result.get("isError")) and name in problem_of(result)["detail"]

    return check


def test_each_definer_wrapper_made_after_start_up_is_refused_through_the_real_server(
    server: ServerProcess, admin: psycopg.Connection[Any], wrapper: Wrapper, witness_dir: Path
) -> None:
    objects = _large_objects(admin)
    # No call names the wrapper before the re-audit has seen it: the guard caches negatively, so a
    # new name alone is no reason to read the catalogue, and until the next re-audit (one interval)
    # the wrapper is as callable as PostgreSQL's default privileges make it (issue 26, item 3).
    refused = _count_until(server, _refused_for(wrapper.name))
    problem = problem_of(refused)
    assert problem["type"].endswith(":role-refused")
    assert "definer-function" in problem["metadata"]["findings"]
    result = server.call_tool("read_only_sql", {"sql": f"SELECT docs.{wrapper.name}()"})
    assert problem_of(result)["type"].endswith(":role-refused")
    assert wrapper.name in problem_of(result)["detail"]
    if wrapper.harmed is not None:
        assert not wrapper.harmed(admin, witness_dir)
    assert _advisory_locks(admin) == 0
    assert _large_objects(admin) == objects
    _drop(admin, wrapper)  # the fix: served again after the next re-audit
    again = _count_until(server, lambda r: not r.get("isError"))
    assert again["structuredContent"]["rows"] == [[30]]


def test_the_server_process_refuses_to_start_beside_each_definer_wrapper(
    demo_cluster: Cluster, wrapper: Wrapper
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_suite"],
        env=server_env({"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_METRICS_ENABLED": "false"}),
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == os.EX_CONFIG
    stderr = proc.stderr.decode()
    assert "SECURITY DEFINER function" in stderr
    assert wrapper.name in stderr
    assert "REVOKE EXECUTE ON FUNCTION" in stderr
    assert proc.stdout == b""


def test_an_invoker_wrapper_around_an_advisory_lock_leaves_no_lock_behind(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute(
        "CREATE FUNCTION docs.page_pin() RETURNS integer LANGUAGE plpgsql"
        " AS $$ BEGIN PERFORM pg_catalog.pg_advisory_lock(4243); RETURN 1; END $$"
    )
    admin.execute("GRANT EXECUTE ON FUNCTION docs.page_pin() TO PUBLIC")
    executor = open_executor(demo_cluster.reader_dsn)
    try:
        result = executor.run_vetted(
            vet_sql("SELECT docs.page_pin() AS v", max_rows=5), max_rows=5, ticket=CallTicket()
        )
        assert result.rows == [[1]]
        assert _advisory_locks(admin) == 0
    finally:
        executor.close()
        admin.execute("DROP FUNCTION docs.page_pin()")


def test_an_accepted_definer_function_is_a_logged_warning_and_runs(
    demo_cluster: Cluster, admin: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    admin.execute(
        "CREATE FUNCTION docs.page_total() RETURNS bigint LANGUAGE sql SECURITY DEFINER"
        " AS 'SELECT count(*) FROM docs.pages'"
    )
    admin.execute("GRANT EXECUTE ON FUNCTION docs.page_total() TO PUBLIC")
    accepted = {"sql_accept_definer_functions": ("docs.page_total",)}
    try:
        findings = audit_dsn(demo_cluster.reader_dsn, connect_timeout_s=5, accepted=("docs.page_total",))
        assert [(f.capability, f.warning) for f in findings] == [("definer-accepted", True)]
        assert "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS" in findings[0].problem
        with (
            caplog.at_level("WARNING"),
            open_sql(sql_settings(demo_cluster.reader_dsn, **accepted)),
        ):
            pass
        assert "accepted as a known risk" in caplog.text
        # One connection each: the role's CONNECTION LIMIT (5) also counts the backends of the
        # tool just closed (its pool and its audit connection) until PostgreSQL has ended them.
        executor = open_executor(demo_cluster.reader_dsn, sql_pool_max_size=1, **accepted)
        plain = open_executor(demo_cluster.reader_dsn, sql_pool_max_size=1)
        try:
            query = vet_sql("SELECT docs.page_total() AS n", max_rows=5)
            assert executor.run_vetted(query, max_rows=5, ticket=CallTicket()).rows == [[30]]
            _refused(plain, "SELECT docs.page_total() AS n")
        finally:
            executor.close()
            plain.close()
        # An unaccepted overload of the same name elsewhere: PostgreSQL might pick either.
        admin.execute(
            "CREATE FUNCTION public.page_total() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'"
        )
        admin.execute("GRANT EXECUTE ON FUNCTION public.page_total() TO PUBLIC")
        executor = open_executor(demo_cluster.reader_dsn, **accepted)
        try:
            problem = _refused(executor, "SELECT page_total() AS n FROM docs.pages")
            assert problem.metadata["function"] == "public.page_total()"
        finally:
            executor.close()
    finally:
        admin.execute("DROP FUNCTION IF EXISTS public.page_total()")
        admin.execute("DROP FUNCTION IF EXISTS docs.page_total()")


def test_an_operator_backed_by_a_definer_function_is_refused(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute(
        "CREATE FUNCTION docs.page_cmp(integer, integer) RETURNS boolean LANGUAGE sql SECURITY DEFINER"
        " AS 'SELECT $1 < $2'"
    )
    admin.execute("GRANT EXECUTE ON FUNCTION docs.page_cmp(integer, integer) TO PUBLIC")
    admin.execute(
        "CREATE OPERATOR docs.<<< (FUNCTION = docs.page_cmp, LEFTARG = integer, RIGHTARG = integer)"
    )
    executor = open_executor(demo_cluster.reader_dsn)
    try:
        problem = _refused(executor, "SELECT slug FROM docs.pages WHERE words OPERATOR(docs.<<<) 300")
        assert "operator <<<" in problem.detail
        assert problem.metadata["function"] == "docs.page_cmp(integer, integer)"
        # Other operators stay usable beside it.
        honest = vet_sql("SELECT count(*) AS n FROM docs.pages WHERE words >= 300 AND words <> 1", max_rows=5)
        assert executor.run_vetted(honest, max_rows=5, ticket=CallTicket()).rows == [[27]]
    finally:
        executor.close()
        admin.execute("DROP FUNCTION docs.page_cmp(integer, integer) CASCADE")


def test_the_catalogue_is_read_once_then_again_after_its_time_or_on_a_refresh(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute("CREATE FUNCTION docs.page_flip() RETURNS integer LANGUAGE sql AS 'SELECT 1'")
    admin.execute("GRANT EXECUTE ON FUNCTION docs.page_flip() TO PUBLIC")
    clock = Clock()
    guard = DefinerGuard(cache_s=60, clock=clock)
    try:
        with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as conn:
            for _ in range(20):
                guard.check(conn, frozenset({"count", "page_flip"}), frozenset({"="}))
            assert guard.statistics().catalogue_reads == 1
            # A change to a known name is seen once the cache's time is up, not before.
            admin.execute("ALTER FUNCTION docs.page_flip() SECURITY DEFINER")
            guard.check(conn, frozenset({"page_flip"}), frozenset())
            clock.now += 61
            with pytest.raises(QueryViolationError):
                guard.check(conn, frozenset({"page_flip"}), frozenset())
            assert guard.statistics().catalogue_reads == 2
            # A name the catalogue did not have is no reason to ask again (negative caching): the
            # re-audit's refresh is, on its own connection.
            admin.execute(
                "CREATE FUNCTION docs.page_new() RETURNS integer LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'"
            )
            admin.execute("GRANT EXECUTE ON FUNCTION docs.page_new() TO PUBLIC")
            guard.check(conn, frozenset({"page_new"}), frozenset())
            assert guard.statistics().catalogue_reads == 2
            with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as other:
                guard.refresh(other)
            with pytest.raises(QueryViolationError):
                guard.check(conn, frozenset({"page_new"}), frozenset())
            assert guard.statistics() == type(guard.statistics())(catalogue_reads=3, refused=2)
    finally:
        admin.execute("DROP FUNCTION IF EXISTS docs.page_flip()")
        admin.execute("DROP FUNCTION IF EXISTS docs.page_new()")


def test_a_query_past_the_demo_roles_temp_file_limit_is_refused_by_postgresql(
    reader_executor: Executor, admin: psycopg.Connection[Any]
) -> None:
    limit = admin.execute(
        "SELECT setconfig FROM pg_catalog.pg_db_role_setting WHERE setrole = 'mcp_reader'::regrole"
    ).fetchone()
    assert limit is not None
    assert "temp_file_limit=256MB" in limit[0]
    sql = "SELECT md5(g::text) FROM generate_series(1, 200000000) g ORDER BY 1 DESC"
    with pytest.raises(ResourceLimitError) as caught:
        reader_executor.run_vetted(vet_sql(sql, max_rows=200), max_rows=200, ticket=CallTicket())
    assert caught.value.metadata == {"sqlstate": "53400"}
    assert "Aggregate or filter" in caught.value.detail
    assert run_unvetted(reader_executor, "SELECT 1 AS v", max_rows=1, ticket=CallTicket()).rows == [[1]]


@pytest.mark.parametrize("analyze", [False, True])
async def test_explain_sql_refuses_a_definer_wrapper_and_analyze_does_not_run_it(
    demo_cluster: Cluster, admin: psycopg.Connection[Any], witness_dir: Path, analyze: bool
) -> None:
    probe = WRAPPERS["copy-to-program"]
    settings = sql_settings(demo_cluster.reader_dsn)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True) as h:
            await h.initialize()  # audited before the wrapper exists, as a server that runs on
            _create(admin, probe, witness_dir, demo_cluster)
            try:
                arguments = {"sql": "SELECT docs.page_export()", "analyze": analyze}
                answer = (await h.response(await h.call("explain_sql", arguments)))["result"]
            finally:
                _drop(admin, probe)
    assert answer["isError"] is True
    document = json.loads(answer["content"][0]["text"])
    assert document["metadata"]["rule"] == "definer-function"
    assert not (witness_dir / "copied").exists()
