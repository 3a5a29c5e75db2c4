"""Hypothesis properties of the SQL policy (docs/tools/read_only_sql.md).

(a) random compositions of allowed fragments with one forbidden construct injected anywhere are always
    refused (and, with nothing injected, the same compositions are accepted);
(b) arbitrary text never makes the policy raise anything but a problem;
(c) every accepted query's executed form has an outer LIMIT <= max_rows + 1, as PostgreSQL's own
    parser reads it;
(d) lexical variants of every honest corpus query (keyword case, whitespace and comments between
    tokens) are accepted and run the same tree.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pglast import parser as pg_parser

from mcp_suite.problems import InvalidArgumentsError, QueryViolationError
from mcp_suite.tools.sql.engine.denylist import DENIED_FUNCTIONS, DENIED_PREFIXES
from mcp_suite.tools.sql.engine.policy import QueryPolicy, VettedQuery
from mcp_suite.tools.sql.engine.policy.rewrite import POSITIONS
from tests.support.properties import security_property
from tests.support.sql_corpus import HONEST, assert_safe

POLICY = QueryPolicy(cache_size=0)

# --- composition of honest fragments ------------------------------------------------------------
# Templates use three markers: "@" an expression slot, "#" the end of a (sub)query where a locking
# clause could go, "%" the spot after the root select list where INTO could go. Honest fillers make
# an allowed query; one slot gets the forbidden construct in property (a).

LEAVES = (
    "1",
    "words",
    "slug",
    "'a;b'",
    "'DELETE FROM docs.pages'",
    "$$; COMMIT $$",
    "NULL",
    "true",
    "2.5",
    "section",
    "length(slug)",
    "upper(section)",
    "(words * 2)",
    "coalesce(NULL, 3)",
    "'{\"a\": 1}'::jsonb ->> 'a'",
    "(ARRAY[1, 2])[1]",
    "count(*) OVER ()",
)

leaf = st.sampled_from(("@",))


def _wrap(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map(lambda ab: f"({ab[0]} = {ab[1]})"),
        st.tuples(inner, inner).map(lambda ab: f"coalesce({ab[0]}, {ab[1]})"),
        inner.map(lambda a: f"CASE WHEN {a} IS NULL THEN 1 ELSE 2 END"),
        inner.map(lambda a: f"(SELECT {a} FROM docs.pages LIMIT 1#)"),
        inner.map(lambda a: f"EXISTS (SELECT 1 FROM docs.pages WHERE {a} IS NOT NULL#)"),
        inner.map(lambda a: f"lower(({a})::text)"),
        inner.map(lambda a: f"/* ; */ {a}"),
        inner.map(lambda a: f"NOT ({a} IS NULL)"),
    )


expressions = st.recursive(leaf, _wrap, max_leaves=6)


@st.composite
def select(draw: st.DrawFn, depth: int = 0) -> str:
    columns = draw(st.lists(expressions, min_size=1, max_size=3))
    sql = "SELECT " + ", ".join(columns) + ("%" if depth == 0 else "")
    source = draw(st.sampled_from(("table", "sub", "series") if depth < 2 else ("table",)))
    if source == "table":
        sql += " FROM docs.pages"
    elif source == "sub":
        sql += f" FROM ({draw(select(depth + 1))}) AS s{depth}"
    else:
        sql += " FROM docs.pages, LATERAL generate_series(1, 2) AS g"
    if draw(st.booleans()):
        sql += f" WHERE {draw(expressions)} IS NOT NULL"
    if draw(st.booleans()):
        sql += " ORDER BY 1"
    limit = draw(st.sampled_from(("", " LIMIT 5", " LIMIT 1000", " LIMIT ALL", " OFFSET 2")))
    return sql + limit + "#"


@st.composite
def query(draw: st.DrawFn) -> str:
    body = draw(select())
    shape = draw(st.sampled_from(("plain", "cte", "union")))
    if shape == "cte":
        inner = draw(select(1))
        body = f"WITH c AS ({inner}) " + body.replace("FROM docs.pages", "FROM c", 1)
    elif shape == "union":
        other = draw(select(1))
        body = f"({body}) UNION ALL ({other})"
    return body


def _fill(template: str, draw: st.DrawFn, *, hole: str | None, forbidden: str) -> str:
    """Replace markers: `hole` (one marker kind) gets `forbidden` at one random occurrence."""
    target = -1
    if hole is not None:
        count = template.count(hole)
        if count:
            target = draw(st.integers(0, count - 1))
    out: list[str] = []
    seen = 0
    for char in template:
        if char in "@#%":
            if char == hole and seen == target:
                out.append(forbidden)
                seen += 1
                continue
            if char == hole:
                seen += 1
            out.append(draw(st.sampled_from(LEAVES)) if char == "@" else "")
        else:
            out.append(char)
    return "".join(out)


def _spellings(name: str) -> list[str]:
    escaped = 'U&"' + f"\\{ord(name[0]):04x}" + name[1:] + '"'
    return [name, f'"{name}"', name.upper(), f"pg_catalog.{name}", escaped, f'"pg_catalog"."{name}"']


DENIED_NAMES = sorted(DENIED_FUNCTIONS) + [prefix + "x" for prefix, _ in DENIED_PREFIXES]
FORBIDDEN_EXPRESSIONS = st.one_of(
    st.tuples(st.sampled_from(DENIED_NAMES), st.integers(0, 5)).map(
        lambda pair: _spellings(pair[0])[pair[1]] + "(1)"
    ),
    st.sampled_from(
        (
            "$1",
            "(SELECT 1 FROM docs.pages FOR UPDATE)",
            "(SELECT 1 FROM docs.pages LIMIT 1 FOR SHARE)",
            "(WITH d AS (DELETE FROM docs.pages RETURNING 1) SELECT 1)",
            "(SELECT count(*) FROM (WITH u AS (UPDATE docs.pages SET words = 0 RETURNING 1) SELECT 1) AS x)",
            "(WITH i AS (INSERT INTO docs.pages VALUES ('x', 'e-1', 'guides', 1) RETURNING 1) SELECT 1)",
            "repeat('x', 1000000000)",
        )
    ),
)
FORBIDDEN_RULES = {
    "denied-function",
    "bind-parameter",
    "row-lock",
    "data-modifying",
    "select-into",
    "multiple-statements",
    "oversized-value",
    "root-not-select",
}


@st.composite
def poisoned(draw: st.DrawFn) -> str:
    template = draw(query())
    where = draw(st.sampled_from(("expression", "lock", "into", "stacked", "prefix")))
    if where == "expression":
        return _fill(template, draw, hole="@", forbidden=draw(FORBIDDEN_EXPRESSIONS))
    if where == "lock":
        lock = draw(st.sampled_from((" FOR UPDATE", " FOR SHARE", " FOR NO KEY UPDATE")))
        return _fill(template, draw, hole="#", forbidden=lock)
    if where == "into":
        return _fill(template, draw, hole="%", forbidden=" INTO TEMP stolen")
    honest = _fill(template, draw, hole=None, forbidden="")
    if where == "stacked":
        tail = draw(st.sampled_from(("DELETE FROM docs.pages", "COMMIT", "SELECT pg_sleep(1)")))
        return f"{honest}; {tail}"
    head = draw(st.sampled_from(("COMMIT", "SET ROLE postgres", "SELECT 1")))
    return f"{head}; {honest}"


@st.composite
def honest(draw: st.DrawFn) -> str:
    return _fill(draw(query()), draw, hole=None, forbidden="")


# --- (a) ------------------------------------------------------------------------------------------


@security_property
@given(poisoned())
@example('SELECT slug FROM docs.pages WHERE U&"pg\\005fsleep"(1) IS NULL')
def test_one_forbidden_construct_anywhere_is_always_refused(sql: str) -> None:
    try:
        POLICY.vet(sql, max_rows=50)
    except (InvalidArgumentsError, QueryViolationError) as problem:
        assert problem.metadata.get("rule") in FORBIDDEN_RULES, (sql, problem.detail)
    else:
        raise AssertionError(f"accepted: {sql}")


@given(honest(), st.integers(1, 10_000))
def test_the_same_compositions_without_the_injection_are_accepted_and_limited(
    sql: str, max_rows: int
) -> None:
    assert_safe(POLICY.vet(sql, max_rows=max_rows), max_rows)


# --- (b) ------------------------------------------------------------------------------------------

SQL_WORDS = st.sampled_from(
    (
        "SELECT", "FROM", "WHERE", "WITH", "AS", "(", ")", "[", "]", ",", ";", "'", '"', "$$", "$1",
        "--", "/*", "*/", "\n", "U&", "UNION", "LIMIT", "ALL", "OFFSET", "FETCH", "FIRST", "ROWS",
        "ONLY", "TIES", "PERCENT", "FOR", "UPDATE", "SHARE", "INTO", "DELETE", "INSERT", "VALUES",
        "pg_sleep", "docs.pages", "1", "0x1F", "1_000", "NOT", "CASE", "WHEN", "THEN", "END", "::",
        "int", "ARRAY", "*", "+", "-", "ORDER", "BY", "GROUP", "COMMIT", "LATERAL", "E'\\''", "\\",
    )
)  # fmt: skip


@security_property
@given(st.one_of(st.text(max_size=300), st.lists(SQL_WORDS, max_size=40).map(" ".join)))
@example("SELECT 1; -- done")
@example("SELECT " + "(" * 3000)
def test_arbitrary_text_gives_a_vetted_query_or_a_problem_and_nothing_else(sql: str) -> None:
    try:
        vetted = POLICY.vet(sql, max_rows=20)
    except (InvalidArgumentsError, QueryViolationError) as problem:
        assert problem.detail
        return
    # (c) for whatever arbitrary text got through.
    assert isinstance(vetted, VettedQuery)
    assert_safe(vetted, 20)


# --- (d) ------------------------------------------------------------------------------------------

_SEPARATORS = st.sampled_from((" ", "\n", "\t", " /* c */ ", " -- c\n", "/**/", "/* /* nested */ */"))
_KEYWORDS = {"RESERVED_KEYWORD", "UNRESERVED_KEYWORD", "COL_NAME_KEYWORD", "TYPE_FUNC_NAME_KEYWORD"}


def _tree(sql: str) -> Any:
    """PostgreSQL's parse tree without positions."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in POSITIONS and k != "stmt_len"}
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    return strip(json.loads(pg_parser.parse_sql_json(sql)))


@st.composite
def lexical_variant(draw: st.DrawFn) -> tuple[str, str]:
    sql = draw(st.sampled_from([case.sql for case in HONEST]))
    tokens = [t for t in pg_parser.scan(sql) if t.name not in ("SQL_COMMENT", "C_COMMENT")]
    out: list[str] = []
    for i, token in enumerate(tokens):
        text = sql[token.start : token.end + 1]
        if token.kind in _KEYWORDS and text.isascii():
            text = draw(st.sampled_from((text.lower(), text.upper(), text.title())))
        out.append(text)
        if i + 1 < len(tokens):
            out.append(draw(_SEPARATORS))
    return sql, "".join(out)


@security_property
@given(lexical_variant())
def test_lexical_variants_of_honest_queries_run_the_same_tree(pair: tuple[str, str]) -> None:
    canonical, variant = pair
    expected = POLICY.vet(canonical, max_rows=50)
    vetted = POLICY.vet(variant, max_rows=50)
    assert vetted.limit == expected.limit
    assert _tree(vetted.sql) == _tree(expected.sql), variant
