"""The function and type allow-lists without a database: every verdict of `policy.allowlist`
(PostgreSQL's own names) and of `names.NameGuard` (the others, on the role's catalogue, here a
small connection that answers its one query with chosen rows). tests/pg/test_sql_allowlists.py and
test_sql_function_census.py prove the same against PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.names import CATALOGUE_SQL, NameGuard
from mcp_suite.tools.sql.engine.policy import allowlist, vet_sql
from tests.support.fakes import Clock, FakeCatalogue

IDENTIFIER = allowlist.REASONS["identifier"]


@pytest.mark.parametrize(
    ("schema", "name", "catalogue", "verdict"),
    [
        ("", "abs", False, None),  # allowed: math
        ("pg_catalog", "abs", False, None),
        ("", "currval", False, ("identifier", IDENTIFIER)),
        ("", "currval", True, None),  # the catalogue allowed: identifiers too
        ("", "plpgsql_call_handler", True, ("internal", allowlist.REASONS["internal"])),
        ("", "pg_get_viewdef", False, ("catalogue", "")),  # worded by the catalogue rule
        ("", "pg_sleep", True, ("denied", "")),  # worded by the denylist
        ("", "no_such_function", False, allowlist.EXTERNAL),  # maybe the database's own
        ("pg_catalog", "no_such_function", False, ("unclassified", allowlist.REASONS["unclassified"])),
        (
            "information_schema",
            "no_such_function",
            False,
            ("unclassified", allowlist.REASONS["unclassified"]),
        ),
        ("public", "abs", False, allowlist.EXTERNAL),  # another schema: the catalogue decides
    ],
)
def test_a_function_s_verdict(schema: str, name: str, catalogue: bool, verdict: object) -> None:
    assert allowlist.function_verdict(schema, name, allow_catalogue=catalogue) == verdict


@pytest.mark.parametrize(
    ("schema", "name", "catalogue", "allowed"),
    [
        ("pg_catalog", "int4", False, True),
        ("", "text", False, True),
        ("", "regclass", False, False),
        ("", "regclass", True, True),
        ("pg_catalog", "oidvector", False, False),
        ("", "cstring", False, False),
        ("pg_catalog", "anyelement", False, False),
    ],
)
def test_a_built_in_type_s_verdict(schema: str, name: str, catalogue: bool, allowed: bool) -> None:
    verdict = allowlist.type_verdict(schema, name, allow_catalogue=catalogue)
    assert (verdict is None) is allowed
    if not allowed:
        assert isinstance(verdict, str)


@pytest.mark.parametrize(("schema", "name"), [("docs", "editors"), ("", "editors"), ("", "anyelement")])
def test_a_type_outside_postgresql_s_schemas_is_for_the_catalogue_to_judge(schema: str, name: str) -> None:
    assert allowlist.type_verdict(schema, name, allow_catalogue=False) is allowlist.EXTERNAL


def test_the_file_classifies_each_name_once_and_says_how_many_it_allows() -> None:
    assert allowlist.classified("abs") == ("allow", "math")
    assert allowlist.classified("oidvectortypes") == ("refuse", "identifier")
    assert allowlist.classified("no_such_function") is None
    assert 1_000 < allowlist.allowed_count() < 2_000
    assert allowlist.format_line("abs", "allow", "math", (15, 18)) == "abs\tallow\tmath\t15 18"


@pytest.mark.parametrize(
    ("extension", "name", "allowed"),
    [
        ("pg_trgm", "similarity", True),
        ("pg_trgm", "set_limit", False),  # changes a setting of the session
        ("postgis", "st_distance", True),  # by its prefix
        ("postgis", "postgis_full_version", False),
        ("uuid-ossp", "uuid_generate_v1", False),  # carries the server's MAC address
        ("pgcrypto", "pgp_sym_decrypt", False),
        ("intarray", "icount", False),  # not reviewed
    ],
)
def test_an_extension_s_function_is_allowed_only_as_reviewed(
    extension: str, name: str, allowed: bool
) -> None:
    assert allowlist.extension_function_allowed(extension, name) is allowed


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        (
            "SELECT oidvectortypes(i::text::oidvector) FROM generate_series(16384, 24000) AS i",
            "function-allow-list",
        ),
        ("SELECT currval(16390)", "function-allow-list"),
        ("SELECT plpgsql_validator(16468)", "function-allow-list"),
        ("SELECT pg_catalog.no_such_function()", "function-allow-list"),
        ("SELECT 1::pg_catalog.anyelement", "type-allow-list"),
        ("SELECT 1 FROM docs.pages TABLESAMPLE tsm_system_rows(3)", None),  # noted for the catalogue
    ],
)
def test_the_policy_applies_the_allow_lists(sql: str, rule: str | None) -> None:
    if rule is None:
        assert vet_sql(sql, max_rows=5).external_functions == {("", "tsm_system_rows")}
        return
    with pytest.raises(QueryViolationError) as caught:
        vet_sql(sql, max_rows=5)
    assert caught.value.metadata["rule"] == rule


def test_the_policy_notes_the_names_outside_postgresql_s_schemas() -> None:
    vetted = vet_sql(
        "SELECT docs.helper(1), helper2(), (null::docs.editors).*, 1::mood, 2::int, s.x FROM docs.pages AS s "
        "TABLESAMPLE bernoulli(5)",
        max_rows=5,
    )
    assert vetted.external_functions == {("docs", "helper"), ("", "helper2")}
    assert vetted.external_types == {("docs", "editors"), ("", "mood")}


# --- the run-time half: NameGuard on a catalogue of chosen rows --------------------------------------

Row = tuple[str, str, str, str, bool]


ROWS: list[Row] = [
    ("function", "docs", "helper", "", True),
    ("function", "docs", "locked", "", False),  # no EXECUTE
    ("function", "public", "similarity", "pg_trgm", True),
    ("function", "public", "icount", "intarray", True),
    ("function", "docs", "twice", "", True),
    ("function", "hidden", "twice", "", False),  # a same-named one the role may not run
    ("type", "docs", "pages", "", True),
    ("type", "docs", "editors", "", False),
    ("type", "public", "hstore", "hstore", True),
    ("type", "public", "ltree", "ltree", True),
]


def _refused(
    guard: NameGuard, catalogue: FakeCatalogue[Row], *, functions: Any = (), types: Any = ()
) -> str | None:
    try:
        guard.check(catalogue.conn, frozenset(functions), frozenset(types))
    except QueryViolationError as problem:
        return str(problem.metadata["rule"])
    return None


@pytest.mark.parametrize(
    ("functions", "types", "rule"),
    [
        ([("docs", "helper")], [], None),
        ([("", "helper")], [], None),
        ([("docs", "locked")], [], "function-allow-list"),
        ([("", "similarity")], [], None),  # a reviewed extension
        ([("", "icount")], [], "function-allow-list"),  # an extension not reviewed
        ([("docs", "twice")], [], None),
        ([("", "twice")], [], "function-allow-list"),  # unqualified: every one of the name must pass
        ([("", "nowhere")], [], "function-allow-list"),
        ([], [("docs", "pages")], None),
        ([], [("docs", "editors")], "type-allow-list"),
        ([], [("", "hstore")], None),
        ([], [("", "ltree")], "type-allow-list"),
        ([], [("other", "pages")], "type-allow-list"),
    ],
)
def test_the_guard_allows_only_what_the_role_s_catalogue_allows(
    functions: Any, types: Any, rule: str | None
) -> None:
    guard = NameGuard(cache_s=60)
    assert _refused(guard, FakeCatalogue(CATALOGUE_SQL, ROWS), functions=functions, types=types) == rule


def test_an_extension_the_operator_allows_passes_whole() -> None:
    guard = NameGuard(cache_s=60, allowed_extensions=("intarray", "ltree"))
    catalogue = FakeCatalogue(CATALOGUE_SQL, ROWS)
    assert _refused(guard, catalogue, functions=[("", "icount")], types=[("", "ltree")]) is None


def test_the_guard_reads_the_catalogue_only_when_its_cache_is_stale_or_refreshed() -> None:
    clock = Clock()
    guard = NameGuard(cache_s=60, clock=clock)
    catalogue = FakeCatalogue(CATALOGUE_SQL, ROWS)
    assert _refused(guard, catalogue) is None
    assert catalogue.reads == 0  # nothing to judge: no read
    assert _refused(guard, catalogue, functions=[("docs", "helper")]) is None
    assert _refused(guard, catalogue, functions=[("docs", "helper")]) is None
    assert catalogue.reads == 1
    catalogue.rows = [row for row in ROWS if row[2] != "helper"]
    clock.now += 60
    assert _refused(guard, catalogue, functions=[("docs", "helper")]) == "function-allow-list"
    assert catalogue.reads == 2
    catalogue.rows = ROWS
    guard.refresh(catalogue.conn)
    assert _refused(guard, catalogue, functions=[("docs", "helper")]) is None
    assert guard.statistics().catalogue_reads == 3
    assert guard.statistics().refused == 1
