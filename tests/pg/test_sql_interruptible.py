"""Work that cannot be stopped does not start (issue 51; docs/tools/read_only_sql.md, "Work that
cannot be stopped").

A correctness check on PostgreSQL's behaviour, bounded, not a timed test of our speed: for each family
of functions the allow-list allows, a worst-case-ish statement (minutes of work, or a value of
hundreds of MB) runs as the reader under a 1 s statement timeout, and its backend must have stopped
running it within the timeout plus a second (pg_stat_activity). XML is the family that fails (libxml2
never checks for cancellation): on Debian's PostgreSQL 15, built with libxml2, an XPath over a
crafted document still runs past that bound; the tool refuses it unless the source allows XML.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from tests.support.client import ServerProcess, problem_of
from tests.support.deploy import password_of
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.devdb.tls import ssl_pg_bin
from tests.support.sql_calls import http_calls, refused_with, served, stdio_calls

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

TIMEOUT_MS = 1000
GRACE_S = 1.0  # what PostgreSQL may take past the timeout to notice it and stop
SERIES = "generate_series(1, 2000000000) AS g"

# One statement per family of functions the allow-list allows (policy/functions.tsv), each of which
# runs for minutes, or builds a value of hundreds of MB, unless PostgreSQL stops it.
FAMILIES = {
    "math": f"SELECT sum(sqrt(g::float8) + ln(g::float8) + (g::numeric % 7)) FROM {SERIES}",
    "text": "SELECT length(upper(repeat('abc', 300000000)))",
    "regular expressions": "SELECT length(regexp_replace(repeat('a', 200000000), 'a', 'bb', 'g'))",
    "binary strings": "SELECT md5(repeat('x', 900000000))",
    "bit strings": "SELECT length(repeat('1', 600000000)::varbit::text)",
    "date-time": (
        "SELECT count(*) FROM generate_series(timestamp '2000-01-01', timestamp '9999-01-01', "
        "interval '1 second')"
    ),
    "geometric": f"SELECT sum(area(box(point(g, g), point(g + 1, g + 1)))) FROM {SERIES}",
    "ranges": f"SELECT count(*) FROM {SERIES} WHERE int4range(g, g + 10) && int4range(5, 6)",
    "json": (
        f"SELECT count(*) FROM {SERIES} WHERE jsonb_build_object('g', g, 'a', ARRAY[g]) @> '{{\"g\": 0}}'"
    ),
    "json paths": (
        "SELECT jsonb_path_query_array(j, 'strict $[*] ? (@ == $[*])') "
        "FROM (SELECT jsonb_agg(g) AS j FROM generate_series(1, 100000) AS g) AS s"
    ),
    "aggregates": f"SELECT length(string_agg(g::text, ',')) FROM {SERIES}",
    "arrays": "SELECT array_length(string_to_array(repeat('a,', 200000000), ','), 1)",
    "text search": "SELECT ts_rank(to_tsvector('simple', repeat('a b ', 5000000)), 'a & b'::tsquery)",
    "money": f"SELECT sum(g::money) FROM {SERIES}",
    "network": f"SELECT count(*) FROM {SERIES} WHERE ('10.0.0.0/8'::inet + g) << '10.0.0.0/8'::inet",
    "uuid": f"SELECT count(DISTINCT gen_random_uuid()) FROM {SERIES}",
    "boolean": f"SELECT bool_and(g > 0) FROM {SERIES}",
    "window": f"SELECT max(r) FROM (SELECT row_number() OVER (ORDER BY g) AS r FROM {SERIES}) AS s",
    "values": f"SELECT sum(length(to_tsvector('simple', repeat('word ', 1000) || g))) FROM {SERIES}",
}
# Found by this test (docs/tools/read_only_sql.md, "Work that cannot be stopped"): one call over one
# large value runs to its end before PostgreSQL looks at the cancellation: to_tsvector() of 200 MB
# (about 2 s late here), a path or polygon read from 200 MB of text (about 24 s), `@>` / `&&` of two
# arrays of 300,000 elements (quadratic: minutes; two jsonb arrays of 20,000 elements: 13 s), jsonb
# read from hundreds of MB of text (8 s on PostgreSQL 15). Over a value the query builds, the policy
# refuses each unless the source allows it (`policy.built`, MCP_SQL_ALLOW_UNINTERRUPTIBLE): these
# are the shapes that stopped late, at sizes that do; `{n}` is the size, small when the work is let run.
LATE = {
    "array containment": (
        "SELECT a @> a FROM (SELECT array_agg(g) AS a FROM generate_series(1, {n}) AS g) AS s"
    ),
    "jsonb containment": (
        "SELECT j @> j FROM (SELECT jsonb_agg(g) AS j FROM generate_series(1, {n}) AS g) AS s"
    ),
    "text search parsing": (
        "SELECT length(to_tsvector('simple', string_agg(g::text, ' '))) FROM generate_series(1, {n}) AS g"
    ),
    "path input": (
        "SELECT npoints(string_agg('(' || g || ',' || g || ')', ',')::path) FROM generate_series(1, {n}) AS g"
    ),
    "jsonb input": (
        "SELECT jsonb_typeof(('[' || string_agg(g::text, ',') || ']')::jsonb) "
        "FROM generate_series(1, {n}) AS g"
    ),
}
LATE_SIZES = {
    "array containment": 300000,
    "jsonb containment": 20000,
    "text search parsing": 30000000,
    "path input": 10000000,
    "jsonb input": 50000000,
}

# An XPath over a document of many nodes, quadratic in them: seconds inside libxml2.
XPATH = (
    "SELECT xpath('//b[count(//b) > count(following::b)]', d) "
    "FROM (SELECT xmlparse(document '<a>' || repeat('<b/>', 12000) || '</a>') AS d) AS s"
)


def _running(admin: psycopg.Connection[Any], pid: int) -> bool:
    row = admin.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row is not None and row[0] == "active"


def _runs_past_the_bound(cluster: Cluster, sql: str, *, timeout_ms: int = TIMEOUT_MS) -> bool:
    """Run `sql` as the reader under `timeout_ms`; whether its backend still runs it once the
    timeout and `GRACE_S` have passed. Waits for the statement to end either way (bounded)."""
    with (
        psycopg.connect(cluster.reader_dsn, autocommit=True) as reader,
        psycopg.connect(cluster.admin_dsn, autocommit=True) as admin,
        concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool,
    ):
        reader.execute(f"SET statement_timeout = {timeout_ms}".encode())
        row = reader.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        pid = int(row[0])

        def run() -> None:
            # The timeout's cancellation, or a limit PostgreSQL reached first.
            with contextlib.suppress(psycopg.Error):
                reader.execute(sql.encode()).fetchall()

        started = time.monotonic()
        running = pool.submit(run)
        deadline = started + timeout_ms / 1000 + GRACE_S
        while time.monotonic() < deadline and not running.done():
            time.sleep(0.05)
        still = not running.done() and _running(admin, pid)
        running.result(timeout=300)  # the statement ends (XPath: once libxml2 is done)
        return still


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_allowed_family_stops_within_a_second_of_the_statement_timeout(
    demo_cluster: Cluster, family: str
) -> None:
    assert not _runs_past_the_bound(demo_cluster, FAMILIES[family]), family


@pytest.fixture(scope="module")
def pg15_with_libxml() -> Iterator[Cluster]:
    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-xml-")), pg_bin=ssl_pg_bin())
    try:
        yield cluster
    finally:
        cluster.destroy()


def test_xpath_runs_past_the_timeout_so_the_tool_refuses_it_unless_the_source_allows_xml(
    pg15_with_libxml: Cluster,
) -> None:
    # The premise: libxml2 holds the backend past the bound (a statement of seconds).
    assert _runs_past_the_bound(pg15_with_libxml, XPATH, timeout_ms=500)
    env = {"MCP_SQL_DSN": pg15_with_libxml.reader_dsn, "MCP_METRICS_ENABLED": "false"}
    small = "SELECT xpath('/a/b/text()', xmlparse(document '<a><b>x</b></a>'))::text AS v"
    with ServerProcess(env=env) as server:
        server.initialize()
        for sql in (XPATH, small):
            problem = problem_of(server.call_tool("read_only_sql", {"sql": sql}))
            assert problem["metadata"]["rule"] == "uninterruptible", problem
            assert "libxml2" in problem["detail"]
        assert server.stop() == 0
    with ServerProcess(env={**env, "MCP_SQL_ALLOW_XML": "true"}) as server:
        server.initialize()
        result = server.call_tool("read_only_sql", {"sql": small})
        assert result["structuredContent"]["rows"] == [["{x}"]]
        assert server.stop() == 0
    assert "MCP_SQL_ALLOW_XML is true" in server.stderr_text()


def _refused_over_http_and_behind_pgbouncer(cluster: Cluster, statement: str, plain: str, rows: Any) -> None:
    """`statement` is refused as `uninterruptible` over HTTP and behind PgBouncer in transaction
    mode, where `plain` is served with `rows`; nothing of the statement's text is echoed."""
    env = {"MCP_SQL_DSN": cluster.reader_dsn, "MCP_METRICS_ENABLED": "false"}
    echo = statement[-12:]
    (over_http,) = trio.run(http_calls, env, [statement])
    refused_with(over_http, "uninterruptible", echo)
    users = {READER_USER: password_of(cluster.reader_dsn)}
    with open_pgbouncer(cluster, users, pool_size=1) as bouncer:
        dsn = bouncer.dsn(READER_USER, password_of(cluster.reader_dsn), cluster.dbname)
        pooled = {**env, "MCP_SQL_DSN": dsn, "MCP_SQL_POOLER": "transaction"}
        refused, served_plain = stdio_calls(pooled, [statement, plain])
    refused_with(refused, "uninterruptible", echo)
    served(served_plain, rows)


def test_xml_is_refused_over_http_and_behind_pgbouncer(pg15_with_libxml: Cluster) -> None:
    _refused_over_http_and_behind_pgbouncer(pg15_with_libxml, XPATH, "SELECT 41 + 1 AS n", [[42]])


def test_containment_of_a_built_array_runs_past_the_timeout(demo_cluster: Cluster) -> None:
    # The premise of the refusal below, at a size that costs seconds, not minutes (quadratic).
    assert _runs_past_the_bound(demo_cluster, LATE["array containment"].format(n=40000))


def test_late_work_over_a_built_value_is_refused_unless_the_source_allows_it(demo_cluster: Cluster) -> None:
    env = {"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_METRICS_ENABLED": "false"}
    large = [LATE[name].format(n=LATE_SIZES[name]) for name in sorted(LATE)]
    for result in stdio_calls(env, large):
        refused_with(result, "uninterruptible", "generate_series(1,")
    small = [LATE[name].format(n=3) for name in sorted(LATE)]
    allowed = stdio_calls({**env, "MCP_SQL_ALLOW_UNINTERRUPTIBLE": "true"}, small)
    expected: dict[str, list[list[Any]]] = {
        "array containment": [[True]],
        "jsonb containment": [[True]],
        "text search parsing": [[3]],
        "path input": [[3]],
        "jsonb input": [["array"]],
    }
    for name, result in zip(sorted(LATE), allowed, strict=True):
        served(result, expected[name])


def test_late_work_over_a_built_value_is_refused_over_http_and_behind_pgbouncer(
    demo_cluster: Cluster,
) -> None:
    statement = LATE["array containment"].format(n=LATE_SIZES["array containment"])
    _refused_over_http_and_behind_pgbouncer(
        demo_cluster, statement, "SELECT ARRAY[1, 2] @> ARRAY[1] AS c", [[True]]
    )
