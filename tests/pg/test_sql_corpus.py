"""Everyday analytic queries answered exactly as PostgreSQL answers them (issue 40, item 4).

Each query of tests.support.corpus runs twice as the reader role: through the server's real path
(the engine's `vet_and_run`: the policy, then the executor's read-only transaction, as
`read_only_sql` calls it), and as the caller's exact text over a plain psycopg connection with the
settings every call of the server runs with. The direct rows go through the server's own JSON
conversion (convert.py's loaders, then `to_json_value`), the column types are PostgreSQL's own
`format_type`, and the two answers are compared cell by cell as the JSON the wire carries (a
double that became a numeric string, an integer that became a float, a lost fraction of a second:
all differ). A refusal of ordinary work fails the test with the problem's detail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.convert import JSON_READY_OIDS, array_loader, register_loaders, to_json_value
from mcp_suite.tools.sql.engine.engine import SqlEngine, open_engine
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.corpus import MAX_ROWS, QUERIES, TRUNCATIONS, CorpusQuery, Truncation
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

# What every call of the server runs with (docs/tools/read_only_sql.md, "Settings of a call"): the
# direct connection asks for the same, so a value prints the same way on both paths.
_CALL_SETTINGS = (
    ("DateStyle", "ISO, YMD"),
    ("IntervalStyle", "postgres"),
    ("TimeZone", "UTC"),
    ("bytea_output", "hex"),
    ("extra_float_digits", "1"),
    ("standard_conforming_strings", "on"),
)
# The server puts pg_catalog first in the role's own search path; so does the direct connection.
_SEARCH_PATH = (
    "SELECT pg_catalog.set_config('search_path',"
    " pg_catalog.textcat('pg_catalog, ', pg_catalog.current_setting('search_path')), false)"
)
# Arrays of types made after initdb (citext[], hstore[], a table's row type...): psycopg has no
# loader for them; the server makes one per element type (convert.array_loader), and so does this.
_USER_ARRAYS = (
    "SELECT t.oid::int8, (CASE WHEN e.typtype = 'd' THEN e.typbasetype ELSE e.oid END)::int8,"
    " t.typdelim::text"
    " FROM pg_catalog.pg_type t JOIN pg_catalog.pg_type e ON e.oid = t.typelem"
    " WHERE t.oid >= 16384 AND t.typcategory = 'A'"
)
_FORMAT_TYPES = (
    "SELECT pg_catalog.format_type(o, NULL)"
    " FROM pg_catalog.unnest(%s::pg_catalog.oid[]) WITH ORDINALITY AS u(o, n) ORDER BY n"
)


@dataclass(frozen=True, slots=True)
class Answer:
    columns: list[tuple[str, str]]  # (name, type name)
    rows: list[list[str]]  # each cell as the JSON text the wire carries
    truncated: bool


def _cells(rows: list[list[Any]]) -> list[list[str]]:
    """Each value as its JSON text: 1 and 1.0, "1" and 1 all differ."""
    return [[json.dumps(value, ensure_ascii=False) for value in row] for row in rows]


@pytest.fixture(scope="module")
def engine(demo_cluster: Cluster, corpus: None) -> Iterator[SqlEngine]:
    """The SQL engine the tools share, opened as the server opens it (the role audit included), with
    the largest `max_rows` the settings allow and a byte cap no corpus answer reaches."""
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_rows=MAX_ROWS, sql_max_result_bytes=16_777_216)
    opened = open_engine(settings, demo_cluster.reader_dsn)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def direct(demo_cluster: Cluster, corpus: None) -> Iterator[psycopg.Connection[Any]]:
    """A plain connection of the reader role, with the call's settings and the server's loaders."""
    with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as conn:
        for name, value in _CALL_SETTINGS:
            conn.execute("SELECT pg_catalog.set_config(%s, %s, false)", (name, value))
        conn.execute(_SEARCH_PATH)
        register_loaders(conn.adapters, encoding=conn.info.encoding)
        for oid, element, delimiter in conn.execute(_USER_ARRAYS).fetchall():
            loader = array_loader(int(element), str(delimiter))
            assert loader is not None
            conn.adapters.register_loader(int(oid), loader)
        yield conn


def served(engine: SqlEngine, text: str, max_rows: int) -> Answer:
    """The answer through the server's path, or the test fails with the problem's detail."""
    try:
        result = engine.vet_and_run(text, max_rows, CallTicket())
    except ProblemError as problem:
        pytest.fail(f"the server answered {problem.slug}: {problem.detail}", pytrace=False)
    assert result.rows == json.loads(result.rows_json)  # the wire carries the rows it holds
    return Answer(
        columns=[(c.name, c.type) for c in result.columns],
        rows=_cells(json.loads(result.rows_json)),
        truncated=result.truncated,
    )


def postgres(conn: psycopg.Connection[Any], text: str) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """PostgreSQL's own answer to the caller's exact text, through the server's JSON conversion."""
    with conn.cursor() as cur:
        cur.execute(text.encode())
        assert cur.description is not None
        names = [column.name for column in cur.description]
        oids = [column.type_code for column in cur.description]
        rows = [list(row) for row in cur.fetchall()]
    for row in rows:
        for index, oid in enumerate(oids):
            if oid not in JSON_READY_OIDS:
                row[index] = to_json_value(row[index])
    types = [str(name) for (name,) in conn.execute(_FORMAT_TYPES, (oids,)).fetchall()]
    columns = list(zip(names, types, strict=True))
    return columns, _cells(rows)


def column_differences(expected: list[tuple[str, str]], got: list[tuple[str, str]]) -> list[str]:
    """The columns, by name and type, where they differ from PostgreSQL's."""
    if len(got) != len(expected):
        return [f"columns {got} where PostgreSQL returns {expected}"]
    return [
        f"column {number}: {h[0]} {h[1]} where PostgreSQL returns {w[0]} {w[1]}"
        for number, (w, h) in enumerate(zip(expected, got, strict=True))
        if w != h
    ]


def differences(expected: list[list[str]], got: list[list[str]]) -> list[str]:
    """Every cell that differs, named by row and column (the first 20)."""
    found = [f"{len(got)} rows where PostgreSQL returns {len(expected)}"] if len(got) != len(expected) else []
    for number, (want, have) in enumerate(zip(expected, got, strict=False)):
        if len(want) != len(have):
            found.append(f"row {number}: {len(have)} values where PostgreSQL returns {len(want)}")
            continue
        found.extend(
            f"row {number}, column {column}: {h} where PostgreSQL returns {w}"
            for column, (w, h) in enumerate(zip(want, have, strict=True))
            if w != h
        )
    return found[:20]


@pytest.mark.parametrize("query", QUERIES, ids=[q.name for q in QUERIES])
def test_an_everyday_query_gets_postgresql_s_own_answer(
    engine: SqlEngine, direct: psycopg.Connection[Any], query: CorpusQuery
) -> None:
    columns, rows = postgres(direct, query.sql)
    assert len(rows) < MAX_ROWS  # the corpus' own bound: no answer here is cut
    answer = served(engine, query.sql, MAX_ROWS)
    got = answer.rows if query.ordered else sorted(answer.rows)
    want = rows if query.ordered else sorted(rows)
    assert [*column_differences(columns, answer.columns), *differences(want, got)] == []
    assert answer.truncated is False


@pytest.mark.parametrize("case", TRUNCATIONS, ids=[t.name for t in TRUNCATIONS])
def test_an_answer_is_postgresql_s_cut_at_max_rows(
    engine: SqlEngine, direct: psycopg.Connection[Any], case: Truncation
) -> None:
    columns, rows = postgres(direct, case.sql)
    answer = served(engine, case.sql, case.max_rows)
    if case.ordered:
        want, got = rows[: case.max_rows], answer.rows
    else:  # no cut can be told from another here: PostgreSQL's answer must be shorter than max_rows
        assert len(rows) < case.max_rows
        want, got = sorted(rows), sorted(answer.rows)
    assert [*column_differences(columns, answer.columns), *differences(want, got)] == []
    assert answer.truncated is (len(rows) > case.max_rows)


def test_the_truncation_cases_cut_some_answers_and_not_others(direct: psycopg.Connection[Any]) -> None:
    # The cases above mean something only when both kinds are among them, and an answer exactly
    # `max_rows` long is one of them (where `truncated` must stay false).
    lengths = [(len(postgres(direct, case.sql)[1]), case.max_rows) for case in TRUNCATIONS]
    assert any(n > cap for n, cap in lengths)
    assert any(n < cap for n, cap in lengths)
    assert any(n == cap for n, cap in lengths)
