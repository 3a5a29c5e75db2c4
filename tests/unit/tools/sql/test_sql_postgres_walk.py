"""PostgreSQL's walk at its edges: the depth bound exactly, a tree of any JSON shape, the size bound on
the functions that build values, and the proof that the text that runs holds the caller's tree
(schemas, repeated and empty constants). Each is a verdict a caller gets (the text runs, or is
refused with these words)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.policy import postgres_walk, vet_sql
from mcp_suite.tools.sql.engine.policy.postgres_walk import MAX_TREE_DEPTH, PgFacts
from mcp_suite.tools.sql.engine.policy.rewrite import check_wrapped, wrap

TOO_DEEP = {"rule": "too-deep"}


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
    "sql",
    [
        # no argument, or no length: PostgreSQL refuses the call when it runs
        "SELECT rpad()",
        "SELECT repeat('x')",
        "SELECT repeat('x', 0)",
        "SELECT lpad('x', 1000000)",  # the bound itself
        # a computed length: bounded by the statement timeout and the result-size cap
        "SELECT repeat('x', n) FROM t",
    ],
)
def test_a_sized_function_within_its_bound_or_without_a_literal_length_runs(sql: str) -> None:
    assert vet_sql(sql, max_rows=10).sql == f"SELECT * FROM (\n{sql}\n) AS q LIMIT 11"


@pytest.mark.parametrize(
    ("written", "executed"),
    [
        ("SELECT a FROM s.t", "SELECT a FROM u.t"),  # another schema
        ("SELECT a FROM t", "SELECT a FROM s.t"),  # a schema gained
        ("SELECT a FROM t", 'SELECT a FROM "XXXX".t'),  # whatever its name
        ("SELECT 'x'", "SELECT 'x', 'x'"),  # a constant repeated
        ("SELECT ''", "SELECT 'xxxx'"),  # the empty string
        ("SELECT '' AS e, false AS f", "SELECT '' AS e, true AS f"),  # false, left out of the JSON
        ("SELECT 0", "SELECT 1"),  # zero, left out of the JSON
    ],
)
def test_the_text_that_runs_must_hold_exactly_the_caller_s_tree(written: str, executed: str) -> None:
    _, shift = wrap(written, 11)
    original = postgres_walk.check_postgres(written, executed=False).root
    final = postgres_walk.check_postgres(f"SELECT * FROM (\n{executed}\n) AS q LIMIT 11", executed=True)
    with pytest.raises(ProblemError) as caught:
        check_wrapped(final.root, original, 11, shift)
    assert caught.value.metadata == {"rule": "limit-rewrite"}
