"""`explain_sql`'s reading of EXPLAIN's JSON (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.settings import MAX_JSON_DEPTH
from mcp_suite.tools.sql.engine.explain import (
    OPAQUE_SCAN,
    hidden_rows_refusal,
    plan_document,
    relation_names,
    summarise,
    too_deep_refusal,
)

PLAN = {"Node Type": "Limit", "Total Cost": 1.5, "Plan Rows": 4, "Actual Rows": 4.0, "Actual Total Time": 0.1}


def test_the_top_node_gives_cost_and_rows() -> None:
    assert summarise([{"Plan": PLAN}], analyze=False) == {
        "plan": PLAN,
        "total_cost": 1.5,
        "estimated_rows": 4,
    }


def test_analyze_adds_what_running_took() -> None:
    answer = summarise([{"Plan": PLAN, "Planning Time": 0.2, "Execution Time": 0.3}], analyze=True)
    assert answer == {
        "plan": PLAN,
        "total_cost": 1.5,
        "estimated_rows": 4,
        "actual_rows": 4.0,
        "actual_time_ms": 0.1,
        "planning_time_ms": 0.2,
        "execution_time_ms": 0.3,
    }


@pytest.mark.parametrize("output", [None, [], [PLAN, PLAN], ["x"], [{"Plan": []}], {"Plan": PLAN}])
def test_another_shape_is_not_taken_for_a_plan(output: Any) -> None:
    with pytest.raises(TypeError):
        summarise(output, analyze=False)


NESTED = [
    {
        "Plan": {
            "Node Type": "Nested Loop",
            "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "pages", "Parent Relationship": "Outer"},
                {
                    "Node Type": "Bitmap Heap Scan",
                    "Relation Name": "releases",
                    "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "releases_note_idx"}],
                },
                {
                    "Node Type": "Result",
                    "Parent Relationship": "InitPlan",
                    "Plans": [{"Node Type": "Index Only Scan", "Index Name": "a_idx", "Relation Name": "a"}],
                },
            ],
        },
        "Some Future Section": {"Deep": [{"Relation Name": "future"}]},
    }
]


def test_every_relation_and_index_of_the_plan_is_named_wherever_it_sits() -> None:
    assert relation_names(NESTED) == {"pages", "releases", "releases_note_idx", "a_idx", "a", "future"}


def test_a_plan_without_relations_names_none() -> None:
    assert relation_names([{"Plan": {"Node Type": "Result", "Plan Rows": 1}}]) == frozenset()


@pytest.mark.parametrize(
    "node",
    [
        {"Node Type": "Foreign Scan", "Operation": "Select", "Relations": "(public.a) INNER JOIN (public.b)"},
        {"Node Type": "Custom Scan", "Custom Plan Provider": "x"},
        {"Node Type": "Foreign Scan"},
    ],
)
def test_a_scan_that_names_no_relation_of_its_own_is_opaque(node: dict[str, Any]) -> None:
    assert relation_names([{"Plan": {"Node Type": "Hash Join", "Plans": [node]}}]) == {OPAQUE_SCAN}


def test_a_foreign_or_custom_scan_of_one_named_table_is_that_table() -> None:
    nodes = [{"Node Type": kind, "Relation Name": "ft"} for kind in ("Foreign Scan", "Custom Scan")]
    assert relation_names([{"Plan": {"Node Type": "Append", "Plans": nodes}}]) == {"ft"}


@pytest.mark.parametrize("name", [None, 7, ["pages"]])
def test_a_relation_named_by_anything_but_text_is_not_taken_for_a_plan(name: Any) -> None:
    with pytest.raises(TypeError):
        relation_names([{"Plan": {"Node Type": "Seq Scan", "Relation Name": name}}])


@pytest.mark.parametrize("output", ["[]", [], {"Plan": PLAN}, [{"Plan": []}]])
def test_another_shape_is_not_read_for_relations(output: Any) -> None:
    with pytest.raises(TypeError):
        relation_names(output)


@pytest.mark.parametrize("analyze", [False, True])
def test_the_hidden_rows_refusal_says_why_and_names_no_table(analyze: bool) -> None:
    problem = hidden_rows_refusal(analyze=analyze)
    assert problem.slug == "query-violation"
    assert problem.metadata == {"rule": "explain-hidden-rows"}
    assert problem.invalid_params == ("sql",)
    assert "read_only_sql" in problem.detail
    assert ("ANALYZE" in problem.detail) is analyze


def test_a_plan_the_executor_handed_back_as_text_is_parsed_and_marked_too_deep() -> None:
    # convert.py hands a json value nested deeper than the wire's guard back as its text.
    document = [{"Plan": {"Node Type": "Seq Scan", "Relation Name": "pages"}}]
    assert plan_document(document) == (document, False)
    parsed, too_deep = plan_document('[{"Plan": {"Node Type": "Seq Scan", "Relation Name": "pages"}}]')
    assert too_deep is True
    assert relation_names(parsed) == frozenset({"pages"})


def test_a_plan_too_deep_even_to_parse_names_an_opaque_scan() -> None:
    nested = "[" * 200_000 + "]" * 200_000
    parsed, too_deep = plan_document(nested)
    assert (parsed, too_deep) == (None, True)
    assert relation_names(parsed) == frozenset({OPAQUE_SCAN})


def test_the_too_deep_refusal_names_the_depth_and_the_next_step() -> None:
    refusal = too_deep_refusal()
    assert refusal.slug == "validation-error"
    assert refusal.metadata == {"max_depth": MAX_JSON_DEPTH}
    assert f"more than {MAX_JSON_DEPTH} levels" in refusal.detail
    assert "simpler query" in refusal.detail
