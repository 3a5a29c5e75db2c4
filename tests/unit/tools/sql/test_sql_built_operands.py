"""Work PostgreSQL does not interrupt, over a value the query builds, is refused by default (issue 51;
`policy.built`; docs/tools/read_only_sql.md, "Work that cannot be stopped").

Containment of arrays or jsonb is quadratic, and parsing text into a text search document, JSON, an
array, a path or a polygon is linear but slow: over one large value either runs to its end before
PostgreSQL checks for the cancellation (tests/pg/test_sql_interruptible.py). A stored value or a
literal is bounded; a value the query builds is not. Everyday containment and full text search over
stored columns and literals stay allowed.
"""

from __future__ import annotations

import pytest

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.policy import vet_sql


def _refusal(sql: str, *, allow_uninterruptible: bool = False) -> str | None:
    """The `metadata.object` of an `uninterruptible` refusal, None when the statement is allowed."""
    try:
        vet_sql(sql, max_rows=10, allow_uninterruptible=allow_uninterruptible)
    except QueryViolationError as problem:
        assert problem.metadata["rule"] == "uninterruptible", problem.detail
        return str(problem.metadata["object"])
    return None


SERIES = "generate_series(1, 300000) AS g"

REFUSED = (
    # containment of what an aggregate, a subquery or a WITH query collects
    (
        f"SELECT a @> a FROM (SELECT array_agg(g) AS a FROM {SERIES}) AS s",
        "@> over a column the query builds",
    ),
    (
        f"WITH s AS (SELECT array_agg(g) AS a FROM {SERIES}) SELECT a <@ a FROM s",
        "<@ over a column the query builds",
    ),
    (
        f"SELECT j @> j FROM (SELECT jsonb_agg(g) AS j FROM {SERIES}) AS s",
        "@> over a column the query builds",
    ),
    (f"SELECT ARRAY(SELECT g FROM {SERIES}) && ARRAY[1]", "&& over a subquery's rows"),
    (f"SELECT (SELECT array_agg(g) FROM {SERIES}) @> ARRAY[1]", "@> over an aggregate"),
    (
        f"SELECT arraycontains(ARRAY[1], (SELECT array_agg(g) FROM {SERIES}))",
        "arraycontains() over an aggregate",
    ),
    (
        f"SELECT jsonb_contains('[1]', (SELECT jsonb_agg(g) FROM {SERIES}))",
        "jsonb_contains() over an aggregate",
    ),
    (f"SELECT JSON_ARRAYAGG(g) @> '[1]' FROM {SERIES}", "@> over an aggregate"),
    (f"SELECT ARRAY[1] @> ANY (SELECT array_agg(g) FROM {SERIES})", "@> over an aggregate"),
    (f"SELECT ARRAY[1] OPERATOR(pg_catalog.@>) (SELECT array_agg(g) FROM {SERIES})", "@> over an aggregate"),
    # through a lateral subquery, a join, a correlated subquery, a recursive WITH query
    (
        f"SELECT a @> a FROM docs.pages AS p, LATERAL (SELECT array_agg(g) AS a FROM {SERIES}) AS s",
        "@> over a column",
    ),
    (
        f"SELECT 1 FROM (SELECT array_agg(g) AS a FROM {SERIES}) AS s "
        "JOIN docs.pages AS p ON ARRAY[1] @> s.a",
        "@> over a column",
    ),
    (
        "SELECT (SELECT 1 FROM docs.pages WHERE ARRAY[1] <@ s.a) "
        f"FROM (SELECT array_agg(g) AS a FROM {SERIES}) AS s",
        "<@ over a column",
    ),
    (
        (
            "WITH RECURSIVE r(a, n) AS (SELECT ARRAY[1], 1 UNION ALL SELECT array_append(a, n), n + 1 FROM r "
            "WHERE n < 300000) SELECT a @> a FROM r"
        ),
        "@> over a column",
    ),
    (
        "WITH a AS (SELECT array_agg(g) AS x FROM generate_series(1, 9) AS g), "
        "b AS (SELECT x FROM a) SELECT x @> x FROM b",
        "@> over a column",
    ),
    # sized and multiplying calls, concatenations and the database's functions (containment is strict)
    (
        "SELECT array_fill(1, ARRAY[300000]) @> array_fill(1, ARRAY[300000])",
        "@> over array_fill(), which can multiply",
    ),
    ("SELECT a @> a FROM ROWS FROM (array_fill(1, ARRAY[300000])) AS r(a)", "@> over a column"),
    ("SELECT string_to_array(repeat('a,', 100), ',') @> ARRAY['a']", "@> over repeat(), which can multiply"),
    (
        "SELECT string_to_array(replace(slug, '-', ','), ',') @> ARRAY['a'] FROM docs.pages",
        "@> over replace(), which can multiply",
    ),
    ("SELECT ARRAY[slug] || ARRAY[slug] @> ARRAY['a'] FROM docs.pages", "@> over a concatenation"),
    ("SELECT array_cat(ARRAY[slug], ARRAY[slug]) @> ARRAY['a'] FROM docs.pages", "@> over a concatenation"),
    (
        "SELECT docs.tags_of(slug) @> ARRAY['a'] FROM docs.pages",
        "@> over tags_of(), a function of the database",
    ),
    ("SELECT tags_of(slug) @> ARRAY['a'] FROM docs.pages", "@> over tags_of(), a function of the database"),
    # parsing what the query builds
    (
        "SELECT to_tsvector('simple', string_agg(slug, ' ')) FROM docs.pages",
        "to_tsvector() over an aggregate",
    ),
    (
        "SELECT ts_headline('simple', string_agg(slug, ' '), 'a'::tsquery) FROM docs.pages",
        "ts_headline() over an aggregate",
    ),
    (
        "SELECT to_tsvector('simple', repeat('a b ', n)) FROM (VALUES (3)) AS v(n)",
        "to_tsvector() over repeat()",
    ),
    ("SELECT to_tsvector(format('%1000000000s', 'x'))", "to_tsvector() over format() sized by its arguments"),
    (
        "SELECT to_tsvector(format(slug, 'x')) FROM docs.pages",
        "to_tsvector() over format() sized by its arguments",
    ),
    (
        "SELECT to_tsvector(rpad(s, n)) FROM (VALUES ('a', 5)) AS v(s, n)",
        "to_tsvector() over rpad() sized by its arguments",
    ),
    ("SELECT to_tsvector(repeat('ab', 600000))", "to_tsvector() over repeat() sized by its arguments"),
    (
        "SELECT to_tsvector(array_to_string(array_fill('a'::text, ARRAY[2000, 2000]), ' '))",
        "to_tsvector() over array_fill()",
    ),
    (
        "SELECT to_tsvector(replace(replace(slug, 'a', 'aa'), 'a', 'aa')) FROM docs.pages",
        "to_tsvector() over replace() over replace()",
    ),
    (
        "SELECT websearch_to_tsquery('simple', string_agg(slug, ' ')) FROM docs.pages",
        "websearch_to_tsquery() over an aggregate",
    ),
    ("SELECT string_agg(slug, ',')::jsonb FROM docs.pages", "::jsonb over an aggregate"),
    ("SELECT CAST(string_agg(slug, ',') AS json) FROM docs.pages", "::json over an aggregate"),
    ("SELECT (SELECT string_agg(slug, ' ') FROM docs.pages)::tsvector", "::tsvector over an aggregate"),
    ("SELECT string_agg(slug, ',')::int[] FROM docs.pages", "::int4[] over an aggregate"),
    ("SELECT string_agg(slug, ',')::path FROM docs.pages", "::path over an aggregate"),
    ("SELECT (slug || slug)::polygon FROM docs.pages", "::polygon over a concatenation"),
    ("SELECT JSON(string_agg(slug, ',')) FROM docs.pages", "JsonParseExpr over an aggregate"),
    ("SELECT string_agg(slug, ',') IS JSON FROM docs.pages", "JsonIsPredicate over an aggregate"),
    ("SELECT s IS JSON FROM (VALUES (repeat('[', 999999))) AS v(s)", "JsonIsPredicate over a column"),
)

ALLOWED = (
    "SELECT ARRAY[1, 2] @> ARRAY[1]",
    "SELECT '{1,2}'::int[] @> ARRAY[1]",
    "SELECT slug FROM docs.pages WHERE ARRAY[slug] <@ ARRAY['a', 'b']",
    'SELECT \'{"a": 1, "b": 2}\'::jsonb @> \'{"a": 1}\'::jsonb',
    "SELECT ARRAY[slug] @> ANY (SELECT ARRAY[slug] FROM docs.pages) FROM docs.pages",
    "SELECT count(*) FROM generate_series(1, 20) AS g WHERE int4range(g, g + 10) && int4range(5, 6)",
    "SELECT slug FROM docs.pages WHERE ARRAY[slug] && ARRAY['a'] AND slug IN (SELECT slug FROM docs.pages)",
    "WITH recent AS (SELECT * FROM docs.pages WHERE slug > 'a') SELECT ARRAY[slug] @> ARRAY['a'] FROM recent",
    "SELECT a @> ARRAY['x'] FROM (SELECT max(ARRAY[slug]) AS a, count(*) AS n FROM docs.pages) AS s",
    "SELECT * FROM (SELECT ARRAY[slug] @> ARRAY['x'] FROM docs.pages) AS s",
    "SELECT to_tsvector('simple', slug || ' ' || slug) FROM docs.pages",
    "SELECT to_tsvector('simple', replace(slug, '-', ' ')) FROM docs.pages",
    "SELECT slug FROM docs.pages WHERE to_tsvector(slug) @@ websearch_to_tsquery('simple', 'a -b')",
    "SELECT to_tsvector('simple', repeat('a b ', 1000))",
    "SELECT to_tsvector('simple', lpad(slug, 40)) FROM docs.pages",
    "SELECT to_tsvector(format('%s and %s', slug, slug)) FROM docs.pages",
    "SELECT to_tsvector(array_to_string(array_fill('a'::text, ARRAY[10, 10]), ' '))",
    "WITH s AS (SELECT to_tsvector(slug) AS v FROM docs.pages) SELECT * FROM s",
    "SELECT slug::jsonb, slug::json, slug::tsvector, slug::int[] FROM docs.pages",
    "SELECT '((0,0),(1,1))'::path, '((0,0),(1,1),(1,0))'::polygon",
    "SELECT s, s IS JSON FROM (VALUES ('{}'), ('[1]')) AS v(s)",
    "SELECT JSON(slug) FROM docs.pages",
    "SELECT string_agg(slug, ','), array_agg(slug) FROM docs.pages",  # built, but nothing late over it
    "SELECT 1 FROM docs.pages WHERE slug = 'a'",
    "SELECT ARRAY[1] @> ARRAY[1], ARRAY[1] = ANY (SELECT array_agg(g) FROM generate_series(1, 9) AS g)",
)


@pytest.mark.parametrize(("sql", "what"), REFUSED)
def test_late_work_over_a_value_the_query_builds_is_refused_unless_the_source_allows_it(
    sql: str, what: str
) -> None:
    refused = _refusal(sql)
    assert refused is not None, sql
    assert refused.startswith(what), refused
    assert _refusal(sql, allow_uninterruptible=True) is None


@pytest.mark.parametrize("sql", ALLOWED)
def test_late_work_over_stored_columns_and_literals_is_allowed(sql: str) -> None:
    assert _refusal(sql) is None


def test_the_refusal_says_why_and_names_the_setting() -> None:
    with pytest.raises(QueryViolationError) as refused:
        vet_sql(f"SELECT a @> a FROM (SELECT array_agg(g) AS a FROM {SERIES}) AS s", max_rows=5)
    assert "does not interrupt" in refused.value.detail
    assert "MCP_SQL_ALLOW_UNINTERRUPTIBLE" in refused.value.detail
    assert "stored columns and literals" in refused.value.detail


COLUMN = "a column the query builds (of a subquery, WITH query or function)"
AGGREGATE = "(SELECT array_agg(g) AS a FROM generate_series(1, 9) AS g) AS s"

# Each statement with the whole `metadata.object` of its refusal, or None when it is allowed: the
# scope each name is read in, what counts as built, and each sized call exactly at its bound.
JUDGED = (
    # A WITH query that only concatenates builds (judged strictly), so its columns are built.
    (
        "WITH s AS (SELECT ARRAY[slug] || ARRAY[slug] AS a FROM docs.pages) SELECT a @> ARRAY['x'] FROM s",
        f"@> over {COLUMN}",
    ),
    # A correlated subquery with a WITH query of its own still sees the built columns outside it.
    (
        "SELECT (WITH w AS (SELECT array_agg(1) AS x) SELECT s.a @> ARRAY[1] FROM docs.pages LIMIT 1) "
        f"FROM {AGGREGATE}",
        f"@> over {COLUMN}",
    ),
    # A non-LATERAL subquery in a FROM list or a JOIN does not see a building sibling; a LATERAL one does.
    (f"SELECT 1 FROM {AGGREGATE}, (SELECT ARRAY[slug] @> ARRAY['x'] AS c FROM docs.pages) AS t", None),
    (
        f"SELECT 1 FROM {AGGREGATE} JOIN (SELECT ARRAY[slug] @> ARRAY['x'] AS c FROM docs.pages) AS t "
        "ON true",
        None,
    ),
    (f"SELECT 1 FROM {AGGREGATE}, LATERAL (SELECT s.a @> ARRAY[1] AS c) AS t", f"@> over {COLUMN}"),
    # A WITH query's body is read before (and outside) the FROM list that builds.
    (
        "WITH w AS (SELECT ARRAY[slug] @> ARRAY['x'] AS c FROM docs.pages) "
        f"SELECT w.c, s.a FROM w, {AGGREGATE}",
        None,
    ),
    # A join's condition builds no column: a concatenation in it leaves the joined columns stored.
    (
        "SELECT ARRAY[p.slug] @> ARRAY['a'] FROM docs.pages AS p JOIN docs.pages AS q "
        "ON p.slug || 'x' = q.slug",
        None,
    ),
    # A schema-qualified table named like a WITH query that builds is not that WITH query.
    (
        "WITH pages AS (SELECT array_agg(g) AS a FROM generate_series(1, 9) AS g) "
        "SELECT ARRAY[slug] @> ARRAY['a'] FROM docs.pages",
        None,
    ),
    (
        "WITH pages AS (SELECT array_agg(g) AS a FROM generate_series(1, 9) AS g) "
        "SELECT ARRAY[1] @> ANY (SELECT ARRAY['x'] FROM docs.pages)",
        None,
    ),
    (
        "WITH pages AS (SELECT array_agg(g) AS a FROM generate_series(1, 9) AS g) "
        "SELECT ARRAY[1] @> ANY (SELECT ARRAY['x'] FROM pages)",
        "@> over a WITH query that builds",
    ),
    ("SELECT ARRAY[1] @> ANY (SELECT ARRAY[slug] FROM pages)", None),  # a table, not a WITH query
    # `x @> ANY (SELECT ...)` is judged strictly over both its sides.
    (
        "SELECT ARRAY['x'] @> ANY (SELECT ARRAY[slug] || ARRAY[slug] FROM docs.pages)",
        "@> over a concatenation",
    ),
    (
        "SELECT (SELECT array_agg(g) FROM generate_series(1, 9) AS g) @> ANY (SELECT ARRAY[1])",
        "@> over an aggregate",
    ),
    # Containment functions are strict, parsing is not; a call with no arguments is judged, not a crash.
    ("SELECT arraycontains(ARRAY[slug], ARRAY['a']) FROM docs.pages", None),
    (
        "SELECT arraycontains(ARRAY[slug] || ARRAY[slug], ARRAY['a']) FROM docs.pages",
        "arraycontains() over a concatenation",
    ),
    ("SELECT arraycontains()", None),
    ("SELECT to_tsvector()", None),
    ("SELECT to_tsvector(replace())", None),
    ("SELECT JSON(slug || slug) FROM docs.pages", None),
    # A function of another schema is the database's; PostgreSQL's own, schema-qualified, is known.
    (
        "SELECT ARRAY[docs.upper(slug)] @> ARRAY['a'] FROM docs.pages",
        "@> over upper(), a function of the database",
    ),
    ("SELECT ARRAY[pg_catalog.upper(slug)] @> ARRAY['A'] FROM docs.pages", None),
    # A chain of multiplying calls is found through a call between them.
    (
        "SELECT to_tsvector(replace(lower(replace(slug, 'a', 'aa')), 'a', 'aa')) FROM docs.pages",
        "to_tsvector() over replace() over replace()",
    ),
    # Sized calls: a literal size up to one million is bounded; anything else is not.
    ("SELECT to_tsvector(lpad(slug, 0)) FROM docs.pages", None),
    ("SELECT to_tsvector(lpad(slug, 1000000)) FROM docs.pages", None),
    (
        "SELECT to_tsvector(lpad(slug, -1)) FROM docs.pages",
        "to_tsvector() over lpad() sized by its arguments",
    ),
    (
        "SELECT to_tsvector(lpad(slug, 5.5)) FROM docs.pages",
        "to_tsvector() over lpad() sized by its arguments",
    ),
    ("SELECT to_tsvector(lpad(slug))", "to_tsvector() over lpad() sized by its arguments"),
    (
        "SELECT to_tsvector(lpad(slug, n)) FROM docs.pages, (VALUES (5)) AS v(n)",
        "to_tsvector() over lpad() sized by its arguments",
    ),
    ("SELECT to_tsvector(repeat('a', 0))", None),
    ("SELECT to_tsvector(repeat('a', 1000000))", None),
    ("SELECT to_tsvector(repeat('ab', 500001))", "to_tsvector() over repeat() sized by its arguments"),
    ("SELECT to_tsvector(repeat('a'))", "to_tsvector() over repeat() sized by its arguments"),
    ("SELECT to_tsvector(repeat())", "to_tsvector() over repeat() sized by its arguments"),
    ("SELECT to_tsvector(array_to_string(array_fill(1, ARRAY[1000000]), ' '))", None),
    ("SELECT to_tsvector(array_to_string(array_fill(1, ARRAY[1000, 1000]), ' '))", None),
    ("SELECT to_tsvector(array_to_string(array_fill(1, ARRAY[0, 2000000]), ' '))", None),  # empty
    (
        "SELECT to_tsvector(array_to_string(array_fill(1, ARRAY[1000, 1001]), ' '))",
        "to_tsvector() over array_fill() sized by its arguments",
    ),
    (
        "SELECT to_tsvector(array_to_string(array_fill(1, ARRAY[n]), ' ')) FROM (VALUES (3)) AS v(n)",
        "to_tsvector() over array_fill() sized by its arguments",
    ),
    (
        "SELECT to_tsvector(array_to_string(array_fill(1, d), ' ')) FROM (VALUES (ARRAY[3])) AS v(d)",
        "to_tsvector() over array_fill() sized by its arguments",
    ),
    (
        "SELECT to_tsvector(array_to_string(array_fill(1), ' '))",
        "to_tsvector() over array_fill() sized by its arguments",
    ),
    ("SELECT to_tsvector(format())", "to_tsvector() over format() sized by its arguments"),
)


@pytest.mark.parametrize(("sql", "refusal"), JUDGED)
def test_each_name_is_read_in_its_own_scope_and_each_sized_call_is_bounded_exactly_at_a_million(
    sql: str, refusal: str | None
) -> None:
    assert _refusal(sql) == refusal
