"""The SQL policy's LIMIT rewrite, cache, problems, and each line of defence on its own.

The corpus (tests/support/sql_corpus.py, run by test_sql_policy_corpus.py) drives the public `vet`.
Here the second opinions are also exercised alone: whatever PostgreSQL's grammar refuses first must
still be refused by the sqlglot walk, so one parser's gap is never the only thing between a caller
and the database. Faults are injected through parameters: a failing sqlglot dialect or pglast
dialect to `vet_sql`, a counting uncached policy to `QueryPolicy`.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import sqlglot
from sqlglot.dialects.postgres import Postgres
from sqlglot.parser import Parser

from mcp_suite.problems import (
    ECHO_MAX_CHARS,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
)
from mcp_suite.tools.sql.engine import policy
from mcp_suite.tools.sql.engine.denylist import denied_reason, normalize_function_name
from mcp_suite.tools.sql.engine.policy import (
    QueryPolicy,
    VettedQuery,
    postgres_walk,
    refusals,
    sqlglot_walk,
    vet_sql,
)


def _rule(sql: str, max_rows: int = 50, **parts: Any) -> str:
    """The `rule` of the problem `sql` is refused with; `parts`: the parsers' parts to use instead."""
    with pytest.raises(ProblemError) as caught:
        vet_sql(sql, max_rows=max_rows, **parts)
    rule = caught.value.metadata.get("rule")
    assert isinstance(rule, str)
    return rule


# --- the deterministic LIMIT ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "max_rows", "limit"),
    [
        ("SELECT 1", 50, 51),
        ("SELECT 1 LIMIT 10", 50, 10),
        ("SELECT 1 LIMIT 1000", 50, 51),
        ("SELECT 1 LIMIT 51", 50, 51),
        ("SELECT 1 LIMIT 0", 50, 0),
        ("SELECT 1 LIMIT ALL", 50, 51),
        ("SELECT 1 LIMIT NULL", 50, 51),
        ("SELECT 1 LIMIT 2 + 3", 50, 51),
        ("SELECT 1 LIMIT '5'", 50, 51),
        ("SELECT 1 LIMIT 2.5", 50, 51),
        ("SELECT 1 LIMIT (SELECT 3)", 50, 51),
        ("SELECT 1 OFFSET 4", 50, 51),
        ("SELECT 1 LIMIT 3 OFFSET 4", 50, 3),
        ("SELECT 1 FETCH FIRST 7 ROWS ONLY", 50, 7),
        ("SELECT 1 FETCH NEXT ROW ONLY", 50, 1),
        ("SELECT 1 OFFSET 2 ROWS FETCH FIRST ROWS ONLY", 50, 1),
        ("SELECT 1 ORDER BY 1 FETCH FIRST 7 ROWS WITH TIES", 50, 51),  # ties may bring more,
        ("SELECT 1 LIMIT 9", 4, 5),
        ("SELECT 1 LIMIT 9", 1, 2),
        (
            "SELECT * FROM (SELECT 1 LIMIT 1000) AS s",
            50,
            51,
        ),
        (
            "WITH c AS (SELECT 1 LIMIT 1000) SELECT * FROM c",
            50,
            51,
        ),
        ("SELECT 1 UNION SELECT 2", 50, 51),
        ("SELECT 1 UNION SELECT 2 LIMIT 1", 50, 1),
        (
            "SELECT 1 UNION (SELECT 2 LIMIT 1000)",
            50,
            51,
        ),
        (
            "(SELECT 1 LIMIT 1000) EXCEPT SELECT 2",
            50,
            51,
        ),
        ("VALUES (1), (2)", 50, 51),
        ("(SELECT 1)", 50, 51),
        ("(SELECT 1) LIMIT 3", 50, 3),
        ("(SELECT 1) LIMIT 300", 50, 51),
    ],
)
def test_outer_limit_is_min_of_literal_and_max_rows_plus_one(sql: str, max_rows: int, limit: int) -> None:
    # The caller's statement runs unchanged (its own LIMIT, OFFSET, FETCH ... WITH TIES included),
    # and the wrapper cuts the rows at the cap.
    vetted = vet_sql(sql, max_rows=max_rows)
    assert vetted.sql == f"SELECT * FROM (\n{sql}\n) AS q LIMIT {max_rows + 1}"
    assert vetted.limit == limit


def test_comments_are_blanked_in_the_executed_text() -> None:
    vetted = vet_sql("/* a */ SELECT 1 -- b\n AS one /* c */", max_rows=5)
    assert vetted.sql == "SELECT * FROM (\nSELECT 1     \n AS one\n) AS q LIMIT 6"


# --- arguments, problems and details -------------------------------------------------------------


@pytest.mark.parametrize("max_rows", [0, -1, True, 1.5, "5"])
def test_invalid_max_rows_is_a_validation_error_naming_max_rows(max_rows: Any) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        vet_sql("SELECT 1", max_rows=max_rows)
    assert caught.value.invalid_params == ("max_rows",)


def test_non_string_sql_is_a_validation_error() -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        vet_sql(b"SELECT 1", max_rows=5)  # type: ignore[arg-type]  # the wrong type on purpose
    assert caught.value.metadata["rule"] == "type"


def test_sql_at_the_length_cap_is_read_and_one_past_is_refused() -> None:
    head = "SELECT 1 AS x"
    fits = head + " " * (policy.SQL_MAX_CHARS - len(head))
    assert vet_sql(fits, max_rows=5).limit == 6
    assert _rule(fits + " ") == "too-long"


_LONG_NAME = "f" * 5_000


@pytest.mark.parametrize(
    "sql",
    [f"SELECT pg_sleep_{_LONG_NAME}(1)", f"SELECT 1 {_LONG_NAME} {_LONG_NAME}"],
    ids=["denied-function", "syntax"],
)
def test_detail_echoes_at_most_256_characters_of_the_callers_sql(sql: str) -> None:
    with pytest.raises(ProblemError) as caught:
        vet_sql(sql, max_rows=5)
    assert len(caught.value.detail) < 2 * ECHO_MAX_CHARS
    assert _LONG_NAME not in caught.value.detail


@pytest.mark.parametrize(
    ("sql", "fix"),
    [
        ("SELECT 1; SELECT 2", "only one is allowed"),
        ("SELECT $1", "inline"),
        ("SELECT pg_catalog.pg_sleep(1)", "pg_catalog.pg_sleep()"),
    ],
)
def test_detail_names_the_fix(sql: str, fix: str) -> None:
    with pytest.raises(QueryViolationError) as caught:
        vet_sql(sql, max_rows=5)
    assert fix in caught.value.detail


def test_a_denied_function_is_named_as_written_in_the_metadata() -> None:
    with pytest.raises(QueryViolationError) as caught:
        vet_sql("SELECT pg_catalog.pg_sleep(1)", max_rows=5)
    assert caught.value.metadata == {"rule": "denied-function", "function": "pg_catalog.pg_sleep"}


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "NOT " * 150 + "true",  # PostgreSQL's tree past MAX_TREE_DEPTH
        "SELECT " + "NOT " * 2_000 + "true",  # the JSON of the tree past Python's recursion limit
        "SELECT " + "(" * 60 + "1" + ")" * 60,  # sqlglot's bracket depth
        "SELECT " + "ARRAY[" * 5 + "1" + "]" * 5,  # sqlglot's exponential case
        "SELECT (ARRAY[1])" + "[1]" * 7,  # sqlglot's quadratic case
        "SELECT " + ", ".join(["(ARRAY[1])[1]"] * 65),  # each subscript adds to sqlglot's parse time
    ],
)
def test_deep_nesting_is_a_clean_validation_error(sql: str) -> None:
    assert _rule(sql) == "too-deep"


def test_postgres_parser_stack_exhaustion_is_too_deep() -> None:
    # Past the length cap of `vet`, so the internal check is called directly.
    with pytest.raises(InvalidArgumentsError) as caught:
        postgres_walk.check_postgres("SELECT " + "(" * 10_050, executed=False)
    assert caught.value.metadata["rule"] == "too-deep"


def test_recursion_anywhere_in_the_pipeline_becomes_a_problem() -> None:
    assert _rule("SELECT 1", dialect=_ParserRecursion()) == "too-deep"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 40 + "1" + ")" * 40,
        "SELECT " + "ARRAY[" * 4 + "1" + "]" * 4,
        "SELECT (ARRAY[1])" + "[1]" * 5,
        "SELECT " + ", ".join(["(ARRAY[1])[1]"] * 64),
    ],
    ids=["brackets", "square", "subscript-chain", "subscripts"],
)
def test_bracket_depth_within_the_bounds_is_read(sql: str) -> None:
    assert vet_sql(sql, max_rows=5).limit == 6


def test_comments_are_blanked_where_postgres_finds_them() -> None:
    text = "SELECT '--' AS a, $$/*$$ /* x /* nested */ y */ -- tail\nFROM t"
    blanked = sqlglot_walk.without_comments(text)
    assert blanked == "SELECT '--' AS a, $$/*$$" + " " * 31 + "\nFROM t"
    assert len(blanked) == len(text)
    assert sqlglot_walk.without_comments("SELECT 1") == "SELECT 1"


def test_a_comment_inside_a_keyword_pair_is_read_like_postgres_does() -> None:
    vetted = vet_sql("SELECT section FROM docs.pages GROUP -- y\n BY 1 ORDER /* x */ BY 1", max_rows=5)
    body = "SELECT section FROM docs.pages GROUP     \n BY 1 ORDER         BY 1"
    assert vetted.sql == f"SELECT * FROM (\n{body}\n) AS q LIMIT 6"


# --- the cache -------------------------------------------------------------------------------------


class _Counting:
    """The uncached policy, counting what it is asked to vet."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def __call__(self, sql: str, *, max_rows: int) -> VettedQuery:
        self.calls.append((sql, max_rows))
        return vet_sql(sql, max_rows=max_rows)


def test_cache_returns_the_same_verdict_without_parsing_again() -> None:
    counting = _Counting()
    cache = QueryPolicy(cache_size=2, vet=counting)
    first = cache.vet("SELECT 1", max_rows=5)
    assert cache.vet("SELECT 1", max_rows=5) is first
    assert counting.calls == [("SELECT 1", 5)]
    cache.vet("SELECT 1", max_rows=6)  # another max_rows is another verdict
    assert len(counting.calls) == 2


def test_cached_refusal_raises_a_fresh_equal_problem_each_time() -> None:
    cache = QueryPolicy(cache_size=4)
    problems = []
    for _ in range(3):
        with pytest.raises(QueryViolationError) as caught:
            cache.vet("DELETE FROM docs.pages", max_rows=5)
        problems.append(caught.value)
    assert problems[0] is not problems[1]
    assert {p.detail for p in problems} == {problems[0].detail}
    assert {tuple(p.metadata.items()) for p in problems} == {tuple(problems[0].metadata.items())}
    assert all(p.invalid_params == ("sql",) for p in problems)


def test_cache_is_bounded_and_evicts_the_least_recently_used() -> None:
    counting = _Counting()
    cache = QueryPolicy(cache_size=2, vet=counting)
    cache.vet("SELECT 1", max_rows=5)
    cache.vet("SELECT 2", max_rows=5)
    cache.vet("SELECT 1", max_rows=5)  # 1 is now the most recent
    cache.vet("SELECT 3", max_rows=5)  # evicts 2
    assert counting.calls == [("SELECT 1", 5), ("SELECT 2", 5), ("SELECT 3", 5)]
    cache.vet("SELECT 3", max_rows=5)
    cache.vet("SELECT 1", max_rows=5)  # both still kept
    assert len(counting.calls) == 3
    cache.vet("SELECT 2", max_rows=5)  # vetted again: it was evicted
    assert counting.calls[3:] == [("SELECT 2", 5)]


def test_cache_size_zero_keeps_nothing_and_negative_is_refused() -> None:
    counting = _Counting()
    cache = QueryPolicy(cache_size=0, vet=counting)
    cache.vet("SELECT 1", max_rows=5)
    cache.vet("SELECT 1", max_rows=5)
    assert len(counting.calls) == 2
    with pytest.raises(ValueError, match="cache_size"):
        QueryPolicy(cache_size=-1)


def test_cache_is_safe_under_threads() -> None:
    counting = _Counting()
    cache = QueryPolicy(cache_size=8, vet=counting)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(60):
                cache.vet(f"SELECT {(i + offset) % 20}", max_rows=5)
        except BaseException as exc:  # pragma: no cover - only on failure
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # Bounded: after the storm, the 20 texts cannot all still be kept (at most 8 are).
    before = len(counting.calls)
    for i in range(20):
        cache.vet(f"SELECT {i}", max_rows=5)
    assert len(counting.calls) - before >= 12


# --- each line of defence alone --------------------------------------------------------------------


def _sqlglot_rule(sql: str) -> str:
    tree = sqlglot.parse_one(sql, read="postgres")
    with pytest.raises(QueryViolationError) as caught:
        sqlglot_walk.check_sqlglot(tree)
    rule = caught.value.metadata["rule"]
    assert isinstance(rule, str)
    return rule


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "data-modifying"),
        ("WITH d AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM d", "data-modifying"),
        ("WITH d AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM d", "data-modifying"),
        ("SELECT * INTO x FROM t", "select-into"),
        ("SELECT * FROM (SELECT * FROM t FOR UPDATE) AS s", "row-lock"),
        ("SELECT $1", "bind-parameter"),
        ("SELECT %s", "bind-parameter"),
        ("SELECT :name", "bind-parameter"),
        ("SELECT pg_sleep(1)", "denied-function"),
        ("SELECT PG_CATALOG.PG_SLEEP(1)", "denied-function"),
        ('SELECT "pg_sleep"(1)', "denied-function"),
        ("SELECT * FROM pg_ls_dir('.')", "denied-function"),
        ("SELECT x FROM t WHERE nextval('s') > 0", "denied-function"),
        ("SELECT * FROM (SELECT * FROM t) AS s CROSS JOIN LATERAL dblink('x', 'y')", "denied-function"),
    ],
)
def test_sqlglot_walk_alone_refuses(sql: str, rule: str) -> None:
    assert _sqlglot_rule(sql) == rule


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("DELETE FROM t", "root-not-select"),
        ("LISTEN x", "root-not-select"),
        ("DO $$ BEGIN END $$", "root-not-select"),
    ],
)
def test_sqlglot_root_must_be_a_query(sql: str, rule: str) -> None:
    assert _sqlglot_rule(sql) == rule


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("DO $$ BEGIN END $$", "opaque-command"),
        ("EXPLAIN ANALYZE SELECT 1", "opaque-command"),
        ("SET search_path = x", "forbidden-node"),
        ("COPY t TO STDOUT", "forbidden-node"),
        ("CREATE TABLE x (a int)", "forbidden-node"),
        ("GRANT SELECT ON t TO r", "forbidden-node"),
    ],
)
def test_sqlglot_statement_nodes_are_refused_wherever_they_appear(sql: str, rule: str) -> None:
    # Hidden under a SELECT root, as a smuggled child, the walk still finds them.
    tree = sqlglot.parse_one("SELECT 1", read="postgres")
    tree.set("where", sqlglot.parse_one(sql, read="postgres"))
    with pytest.raises(QueryViolationError) as caught:
        sqlglot_walk.check_sqlglot(tree)
    assert caught.value.metadata["rule"] == rule


@pytest.mark.parametrize(
    ("kind", "rule"),
    [
        ("InsertStmt", "data-modifying"),
        ("ParamRef", "bind-parameter"),
        ("IntoClause", "select-into"),
        ("LockingClause", "row-lock"),
        ("SetToDefault", "forbidden-node"),
        ("CurrentOfExpr", "forbidden-node"),
    ],
)
def test_postgres_walk_refuses_any_node_kind_outside_the_allowlist(kind: str, rule: str) -> None:
    facts = postgres_walk.PgFacts(root={})
    tree: dict[str, Any] = {"SelectStmt": {"targetList": [{"ResTarget": {"val": {kind: {}}}}]}}
    with pytest.raises(QueryViolationError) as caught:
        postgres_walk.walk(tree, facts)
    assert caught.value.metadata["rule"] == rule


@pytest.mark.parametrize(
    ("sql", "node"),
    [
        ("INSERT INTO t VALUES (1)", "InsertStmt"),
        ("CREATE TABLE x (a int)", "CreateStmt"),
        ("SHOW work_mem", "VariableShowStmt"),
    ],
)
def test_postgres_root_must_be_a_select(sql: str, node: str) -> None:
    with pytest.raises(QueryViolationError) as caught:
        postgres_walk.check_postgres(sql, executed=False)
    assert caught.value.metadata["node"] == node


def test_a_text_the_generator_made_unparsable_is_the_validators_limit_not_a_syntax_error() -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        postgres_walk.check_postgres("SELECT (", executed=True)
    assert caught.value.metadata["rule"] == "unsupported-syntax"


def test_sqlglot_disagreeing_on_the_statement_count_refuses() -> None:
    with pytest.raises(QueryViolationError) as caught:
        sqlglot_walk.parse_sqlglot("SELECT 1; SELECT 2")
    assert caught.value.metadata["rule"] == "multiple-statements"


def test_sqlglot_tokenizer_failure_refuses() -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        sqlglot_walk.parse_sqlglot("SELECT 'open")
    assert caught.value.metadata["rule"] == "unsupported-syntax"


class _ParserBug(Postgres):
    """The postgres dialect whose parser fails with a foreign exception."""

    def parser(self, **opts: Any) -> Parser:
        raise KeyError("sqlglot bug")


class _ParserRecursion(Postgres):
    """The postgres dialect whose parser runs out of stack."""

    def parser(self, **opts: Any) -> Parser:
        raise RecursionError


def test_a_foreign_exception_from_sqlglot_parsing_leaves_postgresql_s_reading_alone() -> None:
    # sqlglot's second opinion cannot be had (a TypeError on pgvector's <#> is one such bug): the
    # caller's text is judged by PostgreSQL's walk alone, as when sqlglot cannot parse it.
    with pytest.raises(refusals.UnreadableError):
        sqlglot_walk.parse_sqlglot("SELECT 1", _ParserBug())
    assert (
        vet_sql("SELECT 1", max_rows=5, dialect=_ParserBug()).sql
        == "SELECT * FROM (\nSELECT 1\n) AS q LIMIT 6"
    )
    assert _rule("SELECT pg_sleep(1)", dialect=_ParserBug()) == "denied-function"


def test_recursion_in_the_sqlglot_parser_is_passed_up() -> None:
    with pytest.raises(RecursionError):
        sqlglot_walk.parse_sqlglot("SELECT 1", _ParserRecursion())


# --- the denylist ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "denied"),
    [
        ("pg_sleep", True),
        ("PG_SLEEP", True),
        ("Pg_Sleep_For", True),
        ("dblink_exec", True),
        ("lo_from_bytea", True),
        ("pg_ls_waldir", True),
        ("query_to_xml", True),
        ("crosstab3", True),
        ("binary_upgrade_set_next_pg_type_oid", True),
        ("count", False),
        ("repeat", False),
        ("pg_typeof", False),
        ("lower", False),
        ("sleep", False),
        ("pg_stat_get_activity", False),
    ],
)
def test_denylist_matches_exact_names_and_families_case_insensitively(name: str, denied: bool) -> None:
    assert (denied_reason(name) is not None) is denied


def test_normalised_names_are_case_folded() -> None:
    assert normalize_function_name("PG_SLEEP") == "pg_sleep"
    assert normalize_function_name("Straße") == "strasse"


@pytest.mark.parametrize(
    ("sql", "functions", "operators"),
    [
        ("SELECT 1", set(), set()),
        ("SELECT docs.page_export()", {"page_export"}, set()),
        ('SELECT "Docs"."Page_Export"(1)', {"page_export"}, set()),
        ("SELECT count(*) FROM docs.pages TABLESAMPLE bernoulli(5)", {"count", "bernoulli"}, set()),
        ("SELECT slug FROM docs.pages WHERE words > 3 AND lower(slug) = 'x'", {"lower"}, {">", "="}),
        ("SELECT 1 OPERATOR(docs.###) 2", set(), {"###"}),
        ("SELECT 1 WHERE 1 = ANY (SELECT 1)", set(), {"="}),
        ("SELECT * FROM generate_series(1, 3) AS g", {"generate_series"}, set()),
    ],
)
def test_the_vetted_query_names_every_function_and_operator_it_calls(
    sql: str, functions: set[str], operators: set[str]
) -> None:
    vetted = vet_sql(sql, max_rows=10)
    assert vetted.functions == functions
    assert vetted.operators == operators


# --- PostgreSQL's tree standing in for sqlglot's ------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "limit"),
    [
        ("VALUES (1) ORDER BY 1", 51),
        ("VALUES (1) ORDER BY 1 LIMIT 7", 7),
        ("VALUES (1) ORDER BY 1 LIMIT 0", 0),
        ("VALUES (1) ORDER BY 1 LIMIT 500", 51),
        ("VALUES (1) ORDER BY 1 LIMIT ALL", 51),
        ("VALUES (1) ORDER BY 1 LIMIT NULL", 51),
        ("VALUES (1) ORDER BY 1 LIMIT 1 + 1", 51),
        ("VALUES (1) ORDER BY 1 LIMIT '5'", 51),
        ("VALUES (1) ORDER BY 1 FETCH FIRST 3 ROWS WITH TIES", 51),
        ("VALUES (1) ORDER BY 1 FETCH FIRST 3 ROWS ONLY", 3),
    ],
)
def test_the_outer_limit_on_postgres_s_tree_is_the_same_rule(sql: str, limit: int) -> None:
    vetted = vet_sql(sql, max_rows=50)
    assert vetted.limit == limit
    assert vetted.sql == f"SELECT * FROM (\n{sql}\n) AS q LIMIT 51"


@pytest.mark.parametrize(
    ("sql", "merged"),
    [
        ("SELECT 'a'\n'b'", "SELECT 'ab'\n"),
        ("SELECT 'a' 'b'", "SELECT 'a' 'b'"),  # no newline: PostgreSQL refuses it too
        ("SELECT 'it''s'\n  'x' AS s", "SELECT 'it''sx'\n AS s"),
        ("SELECT E'a'\n'b'", "SELECT E'a'\n'b'"),  # left to PostgreSQL's tree
        ("SELECT 1\nFROM t", "SELECT 1\nFROM t"),
        ("SELECT 'a'", "SELECT 'a'"),
    ],
)
def test_adjacent_plain_literals_are_joined_for_sqlglot(sql: str, merged: str) -> None:
    assert sqlglot_walk.merge_string_continuations(sql) == merged
