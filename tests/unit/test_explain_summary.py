"""`explain_sql`'s reading of EXPLAIN's JSON (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.tools.explain_sql.policy import summarise

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
