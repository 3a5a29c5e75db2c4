"""Names as PostgreSQL resolves them (issue 51), through the real server over stdio and HTTP, and
behind PgBouncer in transaction mode (docs/tools/read_only_sql.md, "Names as PostgreSQL reads them").

The superuser plants what the probes read: a schema the reader has no USAGE on, holding a table (whose
row type is a type) and a text search configuration; a custom setting holding a host path; an
extension not on the reviewed list (intarray), its function executable by PUBLIC; on
Debian's PostgreSQL 15, a function named like SQL/JSON syntax, in an extension not on the reviewed
list. Each probe is a query the walk used to read as something else than PostgreSQL does:
- `g.regtype`, `(g).regclass`: attribute notation is the cast `regtype(g)`, so a series of numbers
  listed every type's and relation's schema-qualified name, hidden schemas included;
- `(n).current_setting`: the call `current_setting(n)` with a computed name;
- `(a).icount`: an extension's function the allow-list refuses as a call;
- `current_setting('mcp.export_dir')`: a setting off the reviewed allow-list;
- `to_tsvector(g, ...)`: a configuration chosen by number, in a schema the role cannot use;
- `JSON_SCALAR(1)` on PostgreSQL 15, whose grammar reads it as the call `json_scalar(1)`.
Each is refused with its rule and nothing of the secret is in the answer; the same work written
plainly is still served.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import ADMIN_USER, READER_USER
from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.policy import vet_sql
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.deploy import password_of
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.devdb.tls import ssl_pg_bin
from tests.support.pg import open_executor, run_unvetted
from tests.support.sql_calls import http_calls, refused_with, served, stdio_calls

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

HIDDEN = "mcp_names_hidden"
SECRET_TABLE = "secret_vault_5e1f"
SECRET_CONFIG = "secret_stemmer_c0de"
SECRET_PATH = "/srv/h51-secret-export"
SQL_JSON_MARK = "planted-json-scalar-ran"

# (what, sql with {config} for the hidden configuration's number, the rule that refuses it, the
# secret that must not be in the answer).
PROBES_18 = (
    (
        "a cast in attribute notation lists every type",
        "SELECT g.regtype::text AS t FROM generate_series(16384, 40000) AS g "
        f"WHERE g.regtype::text LIKE '%{SECRET_TABLE}%'",
        "attribute-call",
        SECRET_TABLE,
    ),
    (
        "a cast in field-selection notation lists every relation",
        "SELECT (g).regclass::text AS c FROM generate_series(16384, 40000) AS g "
        f"WHERE (g).regclass::text LIKE '%{SECRET_TABLE}%'",
        "attribute-call",
        SECRET_TABLE,
    ),
    (
        "current_setting in field-selection notation, with a computed name",
        "SELECT (n).current_setting AS v FROM (VALUES ('mcp.export_dir')) AS s(n)",
        "attribute-call",
        SECRET_PATH,
    ),
    (
        "an extension's function off the reviewed list, in field-selection notation",
        "SELECT (a).icount AS n FROM (VALUES (ARRAY[1, 2, 3, 4, 5, 6, 7])) AS v(a)",
        "attribute-call",
        "[[7]]",
    ),
    (
        "a setting off the reviewed allow-list",
        "SELECT current_setting('mcp.export_dir') AS v",
        "catalogue",
        SECRET_PATH,
    ),
    (
        "a text search configuration chosen by number, in a schema without USAGE",
        "SELECT to_tsvector(g, 'Running foxes')::text AS v FROM generate_series({config}, {config}) AS g",
        "identifier-argument",
        "'fox':2 'run':1",
    ),
)
SQL_JSON_PROBE = (
    "SQL/JSON syntax PostgreSQL 15 reads as a call",
    "SELECT JSON_SCALAR(1) AS v",
    "newer-syntax",
)

# The same work written plainly: served.
PLAIN: tuple[tuple[str, list[list[Any]] | None], ...] = (
    ("SELECT p.slug, p.words FROM docs.pages AS p ORDER BY p.slug LIMIT 1", [["page-01", 225]]),
    ("SELECT (p).slug, q.n FROM docs.pages AS p, (SELECT 1 AS n) AS q ORDER BY 1 LIMIT 1", [["page-01", 1]]),
    ("SELECT to_tsvector('english', 'Running foxes')::text AS v", [["'fox':2 'run':1"]]),
    ("SELECT current_setting('TimeZone') IS NOT NULL AS v", [[True]]),
)


@pytest.fixture(scope="module")
def planted(demo_cluster: Cluster) -> Iterator[int]:
    """The hidden table, configuration and setting; yields the configuration's number."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {HIDDEN} CASCADE".encode())
        admin.execute(f"CREATE SCHEMA {HIDDEN}".encode())
        admin.execute(f"CREATE TABLE {HIDDEN}.{SECRET_TABLE} (amount numeric)".encode())
        admin.execute(f"CREATE TEXT SEARCH CONFIGURATION {HIDDEN}.{SECRET_CONFIG} (COPY = english)".encode())
        admin.execute(f"ALTER DATABASE {demo_cluster.dbname} SET mcp.export_dir = '{SECRET_PATH}'".encode())
        admin.execute(b"CREATE EXTENSION IF NOT EXISTS intarray")
        admin.execute(b"GRANT EXECUTE ON FUNCTION icount(int[]) TO PUBLIC")
        row = admin.execute(f"SELECT '{HIDDEN}.{SECRET_CONFIG}'::regconfig::oid::int".encode()).fetchone()
        assert row is not None
        try:
            yield int(row[0])
        finally:
            admin.execute(f"ALTER DATABASE {demo_cluster.dbname} RESET mcp.export_dir".encode())
            admin.execute(f"DROP SCHEMA IF EXISTS {HIDDEN} CASCADE".encode())
            admin.execute(b"DROP EXTENSION IF EXISTS intarray")


@pytest.fixture(scope="module")
def pg15() -> Iterator[Cluster]:
    """Debian's PostgreSQL 15, with `public.json_scalar(int)` planted in an extension not on the
    reviewed list (so the allow-list refuses it as a call), executable by PUBLIC."""
    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-names-")), pg_bin=ssl_pg_bin())
    try:
        with psycopg.connect(cluster.admin_dsn, autocommit=True) as admin:
            assert admin.info.server_version // 10000 == 15
            for statement in (
                "CREATE EXTENSION intarray SCHEMA public",
                "CREATE FUNCTION public.json_scalar(int) RETURNS text LANGUAGE sql IMMUTABLE "
                f"AS $$SELECT '{SQL_JSON_MARK}'$$",
                "ALTER EXTENSION intarray ADD FUNCTION public.json_scalar(int)",
                "GRANT EXECUTE ON FUNCTION public.json_scalar(int) TO PUBLIC",
            ):
                admin.execute(statement.encode())
        yield cluster
    finally:
        cluster.destroy()


def _probes(config: int) -> list[tuple[str, str, str, str]]:
    return [
        (what, sql.replace("{config}", str(config)), rule, secret) for what, sql, rule, secret in PROBES_18
    ]


def _env(dsn: str, **extra: str) -> dict[str, str]:
    return {"MCP_SQL_DSN": dsn, "MCP_METRICS_ENABLED": "false", **extra}


def _check(results: list[dict[str, Any]], probes: list[tuple[str, str, str, str]]) -> None:
    for (what, _sql, rule, secret), result in zip(probes, results[: len(probes)], strict=True):
        try:
            refused_with(result, rule, secret)
        except AssertionError as failed:
            raise AssertionError(f"{what}: {failed}") from None
    for (_sql, rows), result in zip(PLAIN, results[len(probes) :], strict=True):
        served(result, rows)


def test_each_probe_is_refused_over_stdio_and_plain_work_isserved(
    demo_cluster: Cluster, planted: int
) -> None:
    probes = _probes(planted)
    results = stdio_calls(_env(demo_cluster.reader_dsn), [p[1] for p in probes] + [p[0] for p in PLAIN])
    _check(results, probes)


async def test_each_probe_is_refused_over_http_and_plain_work_isserved(
    demo_cluster: Cluster, planted: int
) -> None:
    probes = _probes(planted)
    results = await http_calls(_env(demo_cluster.reader_dsn), [p[1] for p in probes] + [p[0] for p in PLAIN])
    _check(results, probes)


def test_the_probes_read_the_secrets_when_postgresql_runs_them_as_written(
    demo_cluster: Cluster, planted: int
) -> None:
    """The premise: as the same role, straight to PostgreSQL, each probe reads its secret."""
    with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as reader:
        for what, sql, _rule, secret in _probes(planted):
            rows = reader.execute(sql.encode()).fetchall()
            assert secret in json.dumps(rows), what
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            reader.execute(f"SELECT to_tsvector('{HIDDEN}.{SECRET_CONFIG}', 'x')".encode())


def test_sql_json_syntax_is_refused_on_postgresql_15_over_stdio_and_http(pg15: Cluster) -> None:
    what, sql, rule = SQL_JSON_PROBE
    with psycopg.connect(pg15.reader_dsn, autocommit=True) as reader:  # the premise: 15 runs the call
        assert reader.execute(sql.encode()).fetchall() == [(SQL_JSON_MARK,)], what
    env = _env(pg15.reader_dsn)
    called = "SELECT public.json_scalar(1) AS v"  # the call PostgreSQL 15 reads: the allow-list refuses it
    stdio = stdio_calls(env, [sql, called, "SELECT json_build_object('a', 1)::text AS v"])
    http = trio.run(http_calls, env, [sql])
    for result in (stdio[0], http[0]):
        refused_with(result, rule, SQL_JSON_MARK)
    refused_with(stdio[1], "function-allow-list", SQL_JSON_MARK)
    served(stdio[2], [['{"a" : 1}']])


def test_sql_json_syntax_is_served_on_postgresql_18(demo_cluster: Cluster) -> None:
    results = stdio_calls(_env(demo_cluster.reader_dsn), ["SELECT JSON_SCALAR(1)::text AS v"])
    served(results[0], [["1"]])


def test_a_probe_of_each_class_is_refused_behind_pgbouncer(
    demo_cluster: Cluster, planted: int, pg15: Cluster
) -> None:
    probes = _probes(planted)
    chosen = [probes[0], probes[4], probes[5]]  # attribute notation, a setting, a number for a name
    for cluster, sqls, expected in (
        (demo_cluster, [p[1] for p in chosen] + [p[0] for p in PLAIN], chosen),
        (pg15, [SQL_JSON_PROBE[1]], [(*SQL_JSON_PROBE, SQL_JSON_MARK)]),
    ):
        users = {READER_USER: password_of(cluster.reader_dsn)}
        with open_pgbouncer(cluster, users, pool_size=1) as bouncer:
            dsn = bouncer.dsn(READER_USER, password_of(cluster.reader_dsn), cluster.dbname)
            results = stdio_calls(_env(dsn, MCP_SQL_POOLER="transaction"), sqls)
        for (what, _sql, rule, secret), result in zip(expected, results, strict=False):
            try:
                refused_with(result, rule, secret)
            except AssertionError as failed:
                raise AssertionError(f"{what} behind PgBouncer: {failed}") from None
        for (_sql, rows), result in zip(PLAIN, results[len(expected) :], strict=False):
            served(result, rows)


def test_a_definer_function_in_attribute_notation_is_refused_at_run_time(demo_cluster: Cluster) -> None:
    """The run-time SECURITY DEFINER check sees `(g).f` as the call `f(g)` (the audit is skipped
    here, as in the window before a re-audit)."""
    definer = "public.mcp_names_definer(integer)"
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(
            f"CREATE FUNCTION {definer} RETURNS text LANGUAGE sql SECURITY DEFINER "
            "AS $$SELECT current_user::text$$".encode()
        )
        admin.execute(f"GRANT EXECUTE ON FUNCTION {definer} TO PUBLIC".encode())
        sql = "SELECT (g).mcp_names_definer AS who FROM generate_series(1, 1) AS g"
        executor = open_executor(demo_cluster.reader_dsn)
        try:
            with pytest.raises(QueryViolationError) as refused:
                executor.run_vetted(vet_sql(sql, max_rows=5), max_rows=5, ticket=CallTicket())
            assert refused.value.metadata["rule"] == "definer-function"
            # The premise: as written, PostgreSQL runs it as its owner.
            ran = run_unvetted(executor, sql, max_rows=5, ticket=CallTicket())
            assert ran.rows == [[ADMIN_USER]]
        finally:
            executor.close()
            admin.execute(f"DROP FUNCTION {definer}".encode())
