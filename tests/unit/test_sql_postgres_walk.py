"""PostgreSQL's walk at its edges: the depth bound exactly, a tree of any JSON shape, the size bound on
the functions that build values, and the agreement check on schemas, repeated and empty constants
and the outer LIMIT the policy puts on. Each is a verdict a caller gets (the text runs, or is
refused with these words)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql_engine.policy import postgres_walk, vet_sql
from mcp_suite.tools.sql_engine.policy.postgres_walk import MAX_TREE_DEPTH, PgFacts

TOO_DEEP = {"rule": "too-deep"}
DISAGREEMENT = {"rule": "parser-disagreement"}


def _nested(levels: int) -> dict[str, Any]:
    """A tree of `levels` JSON levels: a node whose field holds lists inside lists, the last one empty."""
    tree: list[Any] = []
    for _ in range(levels - 2):
        tree = [tree]
    return {"targetList": tree}


def test_the_walk_takes_a_tree_of_exactly_its_depth_bound_and_refuses_one_level_more() -> None:
    postgres_walk.walk(_nested(MAX_TREE_DEPTH), PgFacts(root={}))
    with pytest.raises(ProblemError) as caught:
        postgres_walk.walk(_nested(MAX_TREE_DEPTH + 1), PgFacts(root={}))
    assert caught.value.metadata == TOO_DEEP
    assert caught.value.detail.startswith("The query is nested too deeply to be checked;")


def test_the_walk_looks_into_lists_inside_lists_and_passes_over_scalars_in_them() -> None:
    with pytest.raises(ProblemError) as caught:
        postgres_walk.walk({"targetList": [["name", 7, None, [{"InsertStmt": {}}]]]}, PgFacts(root={}))
    assert caught.value.metadata == {"rule": "data-modifying", "node": "InsertStmt"}


def test_postgres_running_out_of_stack_on_a_text_is_too_deep_not_a_syntax_error() -> None:
    # PostgreSQL's parser stops at its stack depth limit (a chain of casts), before the walk's bound
    with pytest.raises(ProblemError) as caught:
        postgres_walk.check_postgres("SELECT 1" + "::int" * 40_000, executed=False)
    assert caught.value.metadata == TOO_DEEP


@pytest.mark.parametrize(
    ("sql", "executed"),
    [
        # no argument, or no length: PostgreSQL refuses the call when it runs
        ("SELECT rpad()", "SELECT rpad() LIMIT 11"),
        ("SELECT repeat('x')", "SELECT repeat('x') LIMIT 11"),
        ("SELECT repeat('x', 0)", "SELECT REPEAT('x', 0) LIMIT 11"),
        ("SELECT lpad('x', 1000000)", "SELECT LPAD('x', 1000000) LIMIT 11"),  # the bound itself
        # a computed length: bounded by the statement timeout and the result-size cap
        ("SELECT repeat('x', n) FROM t", "SELECT REPEAT('x', n) FROM t LIMIT 11"),
    ],
)
def test_a_sized_function_within_its_bound_or_without_a_literal_length_runs(sql: str, executed: str) -> None:
    assert vet_sql(sql, max_rows=10).sql == executed


@pytest.mark.parametrize(
    ("written", "executed", "limit", "agree"),
    [
        ("SELECT a FROM s.t", "SELECT a FROM s.t LIMIT 3", 3, True),
        ("SELECT a FROM s.t", "SELECT a FROM u.t LIMIT 3", 3, False),  # another schema
        ("SELECT a FROM t", "SELECT a FROM s.t LIMIT 3", 3, False),  # a schema gained
        ("SELECT a FROM t", 'SELECT a FROM "XXXX".t LIMIT 3', 3, False),  # whatever its name
        ("SELECT 'x'", "SELECT 'x', 'x' LIMIT 3", 3, False),  # a constant repeated
        ("SELECT 'x', 'x'", "SELECT 'x', 'x' LIMIT 3", 3, True),
        ("SELECT ''", "SELECT '' LIMIT 3", 3, True),  # the empty string
        ("SELECT ''", "SELECT 'xxxx' LIMIT 3", 3, False),
        ("SELECT a FROM t", "SELECT a, 11 FROM t LIMIT 11", 11, False),  # the limit's value, gained
        ("SELECT 11 FROM t", "SELECT 11 FROM t LIMIT 11", 11, True),
    ],
)
def test_agreement_on_schemas_repeated_and_empty_constants_and_the_limit_s_value(
    written: str, executed: str, limit: int, agree: bool
) -> None:
    original = postgres_walk.check_postgres(written, executed=False)
    final = postgres_walk.check_postgres(executed, executed=True)
    if agree:
        postgres_walk.check_agreement(original, final, limit)
        return
    with pytest.raises(ProblemError) as caught:
        postgres_walk.check_agreement(original, final, limit)
    assert caught.value.metadata == DISAGREEMENT


def test_an_empty_string_and_false_are_read_as_constants_like_any_other() -> None:
    vetted = vet_sql("SELECT '' AS e, false AS f", max_rows=10)
    assert vetted.sql == "SELECT '' AS e, FALSE AS f LIMIT 11"
