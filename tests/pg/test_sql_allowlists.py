"""The function and type allow-lists against the real PostgreSQL, through the whole tool path
(docs/tools/read_only_sql.md, "Functions and types: an allow-list").

The superuser plants what a careless DBA would: a schema the reader has no USAGE on, with a table, a
sequence and a function whose names are secrets; an extension that is not on the reviewed list, its
function executable by PUBLIC; a helper of the database's own. Each probe the issue found reads a
hidden name (or a hidden table's columns) through a function or a type no deny-list refused; each is
now refused, and nothing of the secret is in the answer. What a query may do stays: a function of the
database's own, a type of a table the role reads, an extension the operator allows.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from tests.support.devdb.tls import ssl_pg_bin
from tests.support.sql_calls import session_sql_call

pytestmark = pytest.mark.pg

HIDDEN = "mcp_allow_hidden"  # a schema the reader has no USAGE on
SECRET_TABLE = "secret_ledger_4b1d"
SECRET_SEQUENCE = "secret_counter_90aa"
SECRET_FUNCTION = "secret_payroll_77c3"
OWN = "docs.mcp_allow_double"  # a helper of the database's own, executable by PUBLIC


@pytest.fixture(scope="module")
def planted(demo_cluster: Cluster) -> Iterator[dict[str, int]]:
    """The hazards, planted by the superuser; yields the planted objects' identifiers."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        _drop(admin)
        for statement in (
            f"CREATE SCHEMA {HIDDEN}",
            f"CREATE TABLE {HIDDEN}.{SECRET_TABLE} (amount numeric, payee text)",
            f"CREATE SEQUENCE {HIDDEN}.{SECRET_SEQUENCE}",
            f"CREATE FUNCTION {HIDDEN}.{SECRET_FUNCTION}() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            f"CREATE FUNCTION {OWN}(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2'",
            f"GRANT EXECUTE ON FUNCTION {OWN}(int) TO PUBLIC",
            "CREATE EXTENSION IF NOT EXISTS intarray",
            "GRANT EXECUTE ON FUNCTION icount(int[]) TO PUBLIC",
        ):
            admin.execute(statement.encode())
        row = admin.execute(
            "SELECT c.oid::int, s.oid::int, p.oid::int FROM pg_class c, pg_class s, pg_proc p "
            f"WHERE c.relname = '{SECRET_TABLE}' AND s.relname = '{SECRET_SEQUENCE}' "
            f"AND p.proname = '{SECRET_FUNCTION}'".encode()
        ).fetchone()
        assert row is not None
        try:
            yield {"table": row[0], "sequence": row[1], "function": row[2]}
        finally:
            _drop(admin)


def _drop(admin: psycopg.Connection[Any]) -> None:
    admin.execute(f"DROP SCHEMA IF EXISTS {HIDDEN} CASCADE".encode())
    admin.execute(f"DROP FUNCTION IF EXISTS {OWN}(int)".encode())
    admin.execute(b"DROP EXTENSION IF EXISTS intarray")


# (what the probe reads, the query with the planted identifiers filled in, the rule that refuses it)
PROBES = [
    (
        "every table's row type, schema included, by oidvector",
        "SELECT oidvectortypes(i::text::oidvector) FROM generate_series({table} - 100, {table} + 100) AS i",
        "function-allow-list",
    ),
    (
        "a relation's name by an implicit integer-to-regclass cast",
        "SELECT currval({table})",
        "function-allow-list",
    ),
    ("a sequence's name by its number", "SELECT currval({sequence})", "function-allow-list"),
    ("a function's name by its validator", "SELECT plpgsql_validator({function})", "function-allow-list"),
    (
        "a function's name by an identifier handler",
        "SELECT fmgr_sql_validator({function})",
        "function-allow-list",
    ),
    (
        "a hidden table's columns through its row type",
        f"SELECT (null::{HIDDEN}.{SECRET_TABLE}).*",
        "type-allow-list",
    ),
    (
        "a hidden table's columns through json_populate_record",
        f"SELECT * FROM json_populate_record(null::{HIDDEN}.{SECRET_TABLE}, '{{{{}}}}')",
        "type-allow-list",
    ),
    ("a grant-less table's columns (docs.editors)", "SELECT (null::docs.editors).*", "type-allow-list"),
    (
        "a function of an extension not on the reviewed list",
        "SELECT icount(ARRAY[1, 2, 3])",
        "function-allow-list",
    ),
    ("a type input function called by name", "SELECT int4in('5')", "function-allow-list"),
]


@pytest.mark.parametrize(("why", "sql", "rule"), PROBES, ids=[probe[0] for probe in PROBES])
async def test_a_probe_for_hidden_names_is_refused_and_the_answer_holds_none(
    demo_cluster: Cluster, planted: dict[str, int], why: str, sql: str, rule: str
) -> None:
    result = await session_sql_call(demo_cluster, sql.format(**planted))
    assert result["isError"] is True, why
    text = json.dumps(result)
    problem = json.loads(result["content"][0]["text"])
    assert problem["metadata"]["rule"] == rule, problem
    for secret in (SECRET_TABLE, SECRET_SEQUENCE, SECRET_FUNCTION, "payee"):
        if secret not in sql:
            assert secret not in text, (why, secret)


async def test_without_the_allow_lists_the_probes_would_read_hidden_names(
    demo_cluster: Cluster, planted: dict[str, int]
) -> None:
    # The witness: the same probes, sent straight to PostgreSQL as the reader role, read the secrets.
    with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as reader:
        row = reader.execute(
            "SELECT string_agg(oidvectortypes(i::text::oidvector), ',') "
            f"FROM generate_series({planted['table'] - 100}, {planted['table'] + 100}) AS i".encode()
        ).fetchone()
        assert row is not None
        assert SECRET_TABLE in str(row[0])
        with pytest.raises(psycopg.Error) as caught:
            reader.execute(f"SELECT currval({planted['table']})".encode())
        assert SECRET_TABLE in str(caught.value)
        # docs.editors: a schema the role may use, a table it has no grant on (sql_schema hides it)
        columns = reader.execute(b"SELECT (null::docs.editors).*")
        assert len(columns.description or ()) > 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            reader.execute(b"SELECT * FROM docs.editors")


async def test_ordinary_work_with_the_database_s_own_names_is_served(
    demo_cluster: Cluster, planted: dict[str, int]
) -> None:
    own = await session_sql_call(demo_cluster, f"SELECT {OWN}(21) AS doubled")
    assert own["isError"] is False, own
    assert own["structuredContent"]["rows"] == [[42]]
    row_type = await session_sql_call(demo_cluster, "SELECT (null::docs.pages).slug AS slug, 1::int4 AS one")
    assert row_type["isError"] is False, row_type


async def test_an_extension_the_operator_allows_is_served(
    demo_cluster: Cluster, planted: dict[str, int]
) -> None:
    result = await session_sql_call(
        demo_cluster, "SELECT icount(ARRAY[1, 2, 3]) AS n", sql_allow_extensions=("intarray",)
    )
    assert result["isError"] is False, result
    assert result["structuredContent"]["rows"] == [[3]]


@pytest.fixture(scope="module")
def debian_cluster() -> Iterator[Cluster]:
    """Debian's PostgreSQL, which ships pgcrypto and uuid-ossp (the embedded one does not)."""
    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-allow-")), pg_bin=ssl_pg_bin())
    try:
        with psycopg.connect(cluster.admin_dsn, autocommit=True) as admin:
            for statement in (
                "CREATE EXTENSION pgcrypto SCHEMA public",
                'CREATE EXTENSION "uuid-ossp" SCHEMA public',
                # As the corpus does: the demo's default privileges keep new functions from PUBLIC.
                "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC",
            ):
                admin.execute(statement.encode())
        yield cluster
    finally:
        cluster.destroy()


@pytest.mark.parametrize(
    ("sql", "allowed"),
    [
        ("SELECT encode(digest('abc', 'sha256'), 'hex') AS d", True),
        ("SELECT encode(hmac('abc', 'key', 'sha256'), 'hex') AS h", True),
        ("SELECT pgp_sym_encrypt('abc', 'key') AS c", False),  # ciphers: not reviewed
        ("SELECT gen_salt('bf') AS s", False),
        ("SELECT uuid_generate_v4() IS NOT NULL AS u", True),
        ("SELECT uuid_generate_v5(uuid_ns_url(), 'x') AS u", True),
        ("SELECT uuid_generate_v1() AS u", False),  # carries the server's MAC address
    ],
)
async def test_pgcrypto_s_digests_and_uuid_ossp_s_generators_are_on_the_reviewed_list(
    debian_cluster: Cluster, sql: str, allowed: bool
) -> None:
    result = await session_sql_call(debian_cluster, sql)
    if allowed:
        assert result["isError"] is False, result
        return
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["metadata"]["rule"] == "function-allow-list"


async def test_an_extension_the_operator_allows_is_named_in_the_start_up_log(
    demo_cluster: Cluster, planted: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        await session_sql_call(demo_cluster, "SELECT 1", sql_allow_extensions=("intarray",))
    assert any(
        "MCP_SQL_ALLOW_EXTENSIONS" in r.getMessage() and "intarray" in r.getMessage() for r in caplog.records
    )
