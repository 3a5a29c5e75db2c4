"""Pure reading of PostgreSQL's `EXPLAIN (FORMAT JSON)` output for `explain_sql`: no I/O.

The query itself is vetted by `read_only_sql`'s policy, unchanged; this module only turns the one
JSON value EXPLAIN returns into the tool's answer (the plan, and the figures a model looks at first).
"""

from __future__ import annotations

from typing import Any

__all__ = ["summarise"]


def summarise(output: Any, *, analyze: bool) -> dict[str, Any]:
    """`{plan, total_cost, estimated_rows}` and, with `analyze`, `{actual_rows, actual_time_ms,
    planning_time_ms, execution_time_ms}`, from EXPLAIN's `[{"Plan": {...}, ...}]`.

    Raises `TypeError` (or `KeyError`) for any other shape (not the caller's doing: an internal error).
    """
    if not (isinstance(output, list) and len(output) == 1 and isinstance(output[0], dict)):
        raise TypeError("EXPLAIN returned an unexpected shape")
    top = output[0]
    plan = top.get("Plan")
    if not isinstance(plan, dict):
        raise TypeError("EXPLAIN returned no plan")
    answer: dict[str, Any] = {
        "plan": plan,
        "total_cost": plan["Total Cost"],
        "estimated_rows": plan["Plan Rows"],
    }
    if analyze:
        answer.update(
            actual_rows=plan["Actual Rows"],
            actual_time_ms=plan["Actual Total Time"],
            planning_time_ms=top["Planning Time"],
            execution_time_ms=top["Execution Time"],
        )
    return answer
