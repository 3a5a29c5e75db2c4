"""Names as PostgreSQL resolves them (issue 51), in the pure policy and the run-time name guard.

Attribute notation (`t.f`, `(x).f`, `s.t.f`) is judged as the call `f(t)` and the cast `t::f` it
becomes where `f` is not a column; SQL/JSON syntax notes the release whose grammar reads it; XML is
refused unless allowed (libxml2 cannot be interrupted); a text search configuration or dictionary is
a string literal, never a number. tests/pg/test_sql_names_as_resolved.py runs the probes for real.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.names import CATALOGUE_SQL, NameGuard
from mcp_suite.tools.sql.engine.policy import VettedQuery, allowlist, vet_sql
from mcp_suite.tools.sql.engine.policy.postgres_walk import attribute_reason, check_postgres
from tests.support.fakes import FakeCatalogue


def _rule(sql: str, *, allow_catalogue: bool = False, allow_xml: bool = False) -> str | None:
    try:
        vet_sql(sql, max_rows=10, allow_catalogue=allow_catalogue, allow_xml=allow_xml)
    except QueryViolationError as problem:
        return str(problem.metadata["rule"])
    return None


# --- attribute notation ------------------------------------------------------------------------------

REFUSED_ATTRIBUTES = (
    "SELECT g.regtype FROM generate_series(1, 9) AS g",  # a cast to an identifier type
    "SELECT (g).regclass FROM generate_series(1, 9) AS g",
    'SELECT g."regtype" FROM generate_series(1, 9) AS g',
    "SELECT G.REGNAMESPACE FROM generate_series(1, 9) AS G",
    "SELECT (g).regconfig FROM generate_series(1, 9) AS g",  # a type on the reviewed list, by number
    "SELECT p.pg_typeof FROM docs.pages AS p",  # the catalogue rule
    "SELECT docs.pages.pg_typeof FROM docs.pages",  # schema.table.function
    "SELECT mcp_demo.docs.pages.format_type FROM docs.pages",  # catalog.schema.table.function
    "SELECT (g).currval FROM generate_series(1, 9) AS g",  # an identifier function
    "SELECT ((g).oid).oidvectortypes FROM generate_series(1, 9) AS g",
    "SELECT (s).current_query FROM (SELECT 1) AS s",  # session state
    "SELECT (1).pg_sleep",  # the denylist
    "SELECT (g).int4in FROM generate_series(1, 9) AS g",  # a type's input function
    "SELECT (g).internal FROM generate_series(1, 9) AS g",  # PostgreSQL's machinery
    "SELECT (n).current_setting FROM (VALUES ('port')) AS s(n)",  # a computed setting name
    "SELECT ARRAY[(x).xpath] FROM (SELECT 1 AS x) AS s",  # XML: libxml2
    "SELECT * FROM docs.pages AS p WHERE p.regtype IS NULL",
    "SELECT count(*) FROM docs.pages AS p GROUP BY (p).regtype",
    "WITH c AS (SELECT 16384 AS n) SELECT (c.n).regclass FROM c",
)


@pytest.mark.parametrize("sql", REFUSED_ATTRIBUTES)
def test_a_name_in_attribute_notation_is_refused_when_postgresql_could_read_it_as_a_refused_call(
    sql: str,
) -> None:
    assert _rule(sql) == "attribute-call"


def test_the_refusal_names_the_call_and_how_to_write_the_column() -> None:
    with pytest.raises(QueryViolationError) as refused:
        vet_sql("SELECT g.regtype FROM generate_series(1, 9) AS g", max_rows=5)
    detail = refused.value.detail
    assert "PostgreSQL's call regtype(x)" in detail
    assert "without its qualifier" in detail
    assert refused.value.metadata == {"rule": "attribute-call", "function": "regtype"}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT p.slug, (p).words, p.* FROM docs.pages AS p",
        "SELECT (p).* FROM docs.pages AS p",
        "SELECT (g).text, (g).numeric, g.length FROM generate_series(1, 9) AS g",
        "SELECT (ARRAY[1, 2])[1]",
        "SELECT slug FROM docs.pages",
    ],
)
def test_columns_and_allowed_calls_in_attribute_notation_are_served(sql: str) -> None:
    assert _rule(sql) is None


def test_names_in_attribute_notation_are_reported_to_the_definer_check_as_calls() -> None:
    vetted = vet_sql("SELECT p.slug, (p).words, p.length FROM docs.pages AS p", max_rows=5)
    assert {"slug", "words", "length"} <= vetted.functions


def test_names_postgresql_does_not_know_go_to_the_engine_case_folded() -> None:
    vetted = vet_sql(
        'SELECT p.slug, (p)."Words", docs.pages.section FROM docs.pages AS p, docs.pages', max_rows=5
    )
    assert vetted.external_attributes == {"slug", "words", "section"}
    assert vet_sql("SELECT 1", max_rows=5).external_attributes == frozenset()


def test_the_operator_s_catalogue_setting_lifts_the_identifier_and_catalogue_readings_only() -> None:
    assert (
        _rule(
            "SELECT g.regtype, (g).regclass, p.pg_typeof FROM generate_series(1, 9) AS g, docs.pages p",
            allow_catalogue=True,
        )
        is None
    )
    assert _rule("SELECT (1).pg_sleep", allow_catalogue=True) == "attribute-call"
    assert (
        _rule("SELECT (g).internal FROM generate_series(1, 9) AS g", allow_catalogue=True) == "attribute-call"
    )
    assert _rule("SELECT (x).xpath FROM (SELECT 1 AS x) AS s", allow_xml=True) is None


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("slug", allowlist.EXTERNAL),
        ("length", None),
        ("TEXT", None),
        ("jsonb", None),
        ("regtype", "type"),
        ("oid", "identifier"),
        ("aclitem", "type"),
        ("cstring", "type"),
        ("RI_FKey_check_ins", "internal"),
        ("lastval", "state"),
        ("nextval", "denied"),
        ("obj_description", "catalogue"),
        ("current_setting", "setting"),
        ("xml_is_well_formed", "xml"),
    ],
)
def test_each_name_is_judged_as_every_object_postgresql_could_resolve_it_to(name: str, verdict: Any) -> None:
    reason = attribute_reason(name, allow_catalogue=False, allow_xml=False)
    if verdict is None or verdict is allowlist.EXTERNAL:
        assert reason is verdict
        return
    assert isinstance(reason, str)
    assert reason
    expected = {
        "type": "is a type whose cast",
        "identifier": "object identifiers",
        "internal": "machinery",
        "state": "server or session state",
        "denied": "survive the rollback",
        "catalogue": "comments",
        "setting": "cannot see",
        "xml": "libxml2",
    }[verdict]
    assert expected in reason


# --- SQL/JSON syntax a server older than the grammar reads as calls ---------------------------------


@pytest.mark.parametrize(
    ("sql", "needs", "construct"),
    [
        ("SELECT JSON_OBJECT('a' VALUE 1)", 160000, "JsonObjectConstructor"),
        ("SELECT JSON_ARRAY(1, 2)", 160000, "JsonArrayConstructor"),
        ("SELECT '{}' IS JSON", 160000, "JsonIsPredicate"),
        ("SELECT JSON_ARRAYAGG(x) FROM (VALUES (1)) AS v(x)", 160000, "JsonArrayAgg"),
        ("SELECT JSON_EXISTS(jsonb '{}', '$.a')", 170000, "JsonFuncExpr"),
        ("SELECT JSON_VALUE(jsonb '{}', '$.a')", 170000, "JsonFuncExpr"),
        ("SELECT JSON('1')", 170000, "JsonParseExpr"),
        ("SELECT json_scalar(1)", 170000, "JsonScalarExpr"),
        ("SELECT JSON_SERIALIZE(jsonb '1')", 170000, "JsonSerializeExpr"),
        ("SELECT * FROM JSON_TABLE(jsonb '[1]', '$[*]' COLUMNS (a int PATH '$'))", 170000, "JsonTable"),
        ("SELECT json_build_object('a', 1), json_object('{a,1}')", 0, ""),
    ],
)
def test_sql_json_syntax_notes_the_release_whose_grammar_reads_it(
    sql: str, needs: int, construct: str
) -> None:
    vetted = vet_sql(sql, max_rows=5)
    assert (vetted.needs_server, vetted.needs_construct) == (needs, construct)


# --- XML: libxml2 cannot be interrupted ------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT xpath('/a', x) FROM (SELECT 1 AS x) AS s",
        "SELECT xmlexists('//a' PASSING BY VALUE x) FROM (SELECT 1 AS x) AS s",
        "SELECT * FROM XMLTABLE('/a' PASSING x COLUMNS b text) AS t, (SELECT 1 AS x) AS s",
        "SELECT XMLPARSE(CONTENT 'x')",
        "SELECT XMLELEMENT(NAME a)",
        "SELECT XMLSERIALIZE(CONTENT x AS text) FROM (SELECT 1 AS x) AS s",
        "SELECT 'x'::xml",
        "SELECT xml_is_well_formed('<a/>')",
        "SELECT pg_catalog.xml_is_well_formed_document('<a/>')",
    ],
)
def test_xml_is_refused_unless_the_source_allows_it(sql: str) -> None:
    assert _rule(sql) == "uninterruptible"
    assert _rule(sql, allow_xml=True) is None


def test_the_xml_refusal_says_why_and_names_the_setting() -> None:
    with pytest.raises(QueryViolationError) as refused:
        vet_sql("SELECT xpath('/a', '<a/>')", max_rows=5)
    assert "libxml2" in refused.value.detail
    assert "MCP_SQL_ALLOW_XML" in refused.value.detail
    assert refused.value.metadata["object"] == "xpath()"


# --- text search configurations and dictionaries: by name, never by number --------------------------


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("SELECT to_tsvector(g, 'x') FROM generate_series(1, 9) AS g", "identifier-argument"),
        ("SELECT to_tsvector(3748, 'x')", "identifier-argument"),
        ("SELECT plainto_tsquery(1 + 1, 'x')", "identifier-argument"),
        (
            "SELECT jsonb_to_tsvector(g, '{}', '[\"all\"]') FROM generate_series(1, 9) AS g",
            "identifier-argument",
        ),
        ("SELECT ts_headline(g, 'a b', 'a') FROM generate_series(1, 9) AS g", "identifier-argument"),
        (
            "SELECT ts_headline(g, 'a b', 'a', 'MaxWords=3') FROM generate_series(1, 9) AS g",
            "identifier-argument",
        ),
        ("SELECT unaccent(g, 'x') FROM generate_series(1, 9) AS g", "identifier-argument"),
        ("SELECT to_tsvector('english', 'x'), to_tsvector('x'), websearch_to_tsquery('simple', 'x')", None),
        ("SELECT ts_headline('english', 'a b', to_tsquery('a')), ts_headline('a b', to_tsquery('a'))", None),
        ("SELECT ts_headline(s.t, to_tsquery('a'), 'MaxWords=3') FROM (SELECT 'a b' AS t) AS s", None),
        ("SELECT ts_headline(s.t, 'a'::tsquery, 'MaxWords=3') FROM (SELECT 'a b' AS t) AS s", None),
        ("SELECT unaccent('Hélène'), unaccent('unaccent', 'Hélène')", None),
    ],
)
def test_a_text_search_configuration_is_named_by_a_string_literal(sql: str, rule: str | None) -> None:
    assert _rule(sql) == rule
    assert _rule(sql, allow_catalogue=True) is None


# --- the run-time half: NameGuard.check_vetted --------------------------------------------------------

Row = tuple[str, str, str, str, bool]
ROWS: list[Row] = [
    ("function", "public", "icount", "intarray", True),  # an extension not on the reviewed list
    ("function", "docs", "helper", "", True),
    ("function", "hidden", "locked", "", False),
    ("type", "docs", "pages", "", True),
    ("type", "docs", "editors", "", False),  # a table the role cannot read
]


def _check(query: VettedQuery, server_version: int = 180000) -> tuple[str | None, int]:
    conn = FakeCatalogue(CATALOGUE_SQL, ROWS, server_version=server_version)
    try:
        NameGuard(cache_s=60).check_vetted(conn.conn, query)
    except QueryViolationError as problem:
        return str(problem.metadata["rule"]), conn.reads
    return None, conn.reads


@pytest.mark.parametrize(
    ("attributes", "rule"),
    [
        ({"slug", "words"}, None),  # no function or type of that name: columns
        ({"helper"}, None),  # the role may run it
        ({"icount"}, "attribute-call"),
        ({"locked"}, "attribute-call"),
        ({"editors"}, "attribute-call"),
        ({"pages"}, None),
    ],
)
def test_the_guard_refuses_an_attribute_that_resolves_to_a_function_or_type_the_role_may_not_name(
    attributes: set[str], rule: str | None
) -> None:
    assert _check(VettedQuery(sql="", limit=1, external_attributes=frozenset(attributes)))[0] == rule


def test_the_guard_refuses_newer_syntax_on_an_older_server_without_reading_the_catalogue() -> None:
    query = VettedQuery(sql="", limit=1, needs_server=170000, needs_construct="JsonFuncExpr")
    assert _check(query, server_version=150014) == ("newer-syntax", 0)
    assert _check(query, server_version=170000) == (None, 0)
    assert _check(VettedQuery(sql="", limit=1), server_version=150014) == (None, 0)


def test_the_newer_syntax_refusal_names_both_releases() -> None:
    conn = FakeCatalogue(CATALOGUE_SQL, ROWS, server_version=150014).conn
    with pytest.raises(QueryViolationError) as refused:
        NameGuard(cache_s=60).check_vetted(
            conn, VettedQuery(sql="", limit=1, needs_server=160000, needs_construct="JsonIsPredicate")
        )
    assert "from version 16 on" in refused.value.detail
    assert "version 15" in refused.value.detail
    assert refused.value.metadata == {"rule": "newer-syntax", "node": "JsonIsPredicate"}


def test_check_postgres_notes_the_facts_for_both_halves() -> None:
    facts = check_postgres("SELECT (p).slug, JSON_OBJECT('a' VALUE 1) FROM docs.pages AS p", executed=False)
    assert facts.external_attributes == {"slug"}
    assert (facts.needs_server, facts.needs_construct) == (160000, "JsonObjectConstructor")
