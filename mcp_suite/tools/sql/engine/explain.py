"""Pure reading of PostgreSQL's `EXPLAIN (FORMAT JSON)` output for `explain_sql`: no I/O.

The query itself is vetted by `read_only_sql`'s policy, unchanged; this module turns the one JSON
value EXPLAIN returns into the tool's answer (the plan, and the figures a model looks at first),
names the relations a plan reads (for the hidden-rows check, `sql/engine/introspect/visibility.py`)
and words its refusal.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mcp_suite.problems import InvalidArgumentsError, QueryViolationError, ResultTooLargeError
from mcp_suite.settings import MAX_JSON_DEPTH

__all__ = [
    "OPAQUE_SCAN",
    "hidden_rows_refusal",
    "plan_document",
    "plan_too_large",
    "relation_names",
    "summarise",
    "too_deep_refusal",
]

# What `relation_names` gives for a scan that reads relations without naming each: no relation has
# an empty name, so the catalogue check (`introspect/visibility.py`) finds it hidden (it fails closed).
OPAQUE_SCAN: Final = ""


def summarise(output: Any, *, analyze: bool) -> dict[str, Any]:
    """`{plan, total_cost, estimated_rows}` and, with `analyze`, `{actual_rows, actual_time_ms,
    planning_time_ms, execution_time_ms}`, from EXPLAIN's `[{"Plan": {...}, ...}]`.

    Raises `TypeError` (or `KeyError`) for any other shape (not the caller's doing: an internal error).
    """
    top = _top(output)
    plan = top["Plan"]
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


def plan_document(output: Any) -> tuple[Any, bool]:
    """EXPLAIN's JSON as a value, and whether it is nested too deep to be an answer.

    The executor hands back a json value nested deeper than the wire's depth guard as its text
    (read_only_sql's convert.py). The hidden-rows check must still read every relation in it, so
    the text is parsed here; the plan itself cannot be answered (`too_deep_refusal`, after the
    check). A text too deep for the parser gives None: no relation can be named in it, so the
    check takes it as an opaque scan (it fails closed).
    """
    if not isinstance(output, str):
        return output, False
    try:
        return json.loads(output), True
    except RecursionError:
        return None, True


def too_deep_refusal() -> InvalidArgumentsError:
    """The refusal of a plan nested deeper than an answer may be (docs/tools/explain_sql.md)."""
    return InvalidArgumentsError(
        f"The plan is nested more than {MAX_JSON_DEPTH} levels deep, more than an answer may carry. "
        "Ask for the plan of a simpler query (fewer nested subqueries), or of one part at a time.",
        invalid_params=("sql",),
        metadata={"max_depth": MAX_JSON_DEPTH},
    )


def plan_too_large(max_bytes: int) -> ResultTooLargeError:
    """The refusal of a plan larger than the reply's byte cap. A plan is not cut: a node's cost
    and rows include its children's, and the nodes left out would be the ones that explain them
    (docs/tools/explain_sql.md, "Reply size")."""
    return ResultTooLargeError(
        f"The plan is larger than the reply's {max_bytes} bytes of JSON, and a plan cut short would"
        " mislead, so it is not shown. Explain one part of the query at a time (a subquery, one"
        " branch of a UNION, fewer partitions or tables), or shorten long literals, which a plan"
        " repeats whole.",
        invalid_params=("sql",),
        metadata={"max_result_bytes": max_bytes},
    )


def relation_names(output: Any) -> frozenset[str]:
    """Every table and index name anywhere in EXPLAIN's output: each node's `Relation Name` and
    `Index Name`, in every child, init plan, subplan and CTE (all are nodes under `Plans`); and
    `OPAQUE_SCAN` when a node reads relations without naming them one by one.

    Security: the walk visits every dict and list of the whole output, not only the keys known
    today, so a node kind PostgreSQL adds later cannot hide a relation from the check. A name that
    is not a string is an unexpected shape (`TypeError`, an internal error), never skipped. None
    (a plan too deep to parse, `plan_document`) names nothing that could be judged: `OPAQUE_SCAN`.
    """
    if output is None:
        return frozenset({OPAQUE_SCAN})
    _top(output)
    names: set[str] = set()
    stack: list[Any] = [output]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            if _opaque(value):
                names.add(OPAQUE_SCAN)
            for key, item in value.items():
                if key in ("Relation Name", "Index Name"):
                    if not isinstance(item, str):
                        raise TypeError("EXPLAIN named a relation with something other than text")
                    names.add(item)
                else:
                    stack.append(item)
    return frozenset(names)


def _opaque(node: dict[str, Any]) -> bool:
    # A foreign join pushed down to the remote server lists its tables as one text ("Relations");
    # a custom scan need name none. Neither can be judged by name, so neither is taken as readable.
    if "Relations" in node:
        return True
    return node.get("Node Type") in ("Foreign Scan", "Custom Scan") and "Relation Name" not in node


def hidden_rows_refusal(*, analyze: bool) -> QueryViolationError:
    """The refusal of a plan that reads a table the role may not read in full (docs/tools/explain_sql.md)."""
    what = "EXPLAIN ANALYZE's row counts" if analyze else "the plan's estimates and its choice of plan"
    return QueryViolationError(
        "The plan reads a table the role may not read in full (it is read through a view, or it "
        "has row-level security, or only some of its columns are granted, or it is a system "
        "catalogue), and "
        f"{what} would tell about rows the role cannot select, so explain_sql does not show it. "
        "Run the query itself with read_only_sql; explain_sql shows the plans of queries that read "
        "only tables the role may read whole.",
        invalid_params=("sql",),
        metadata={"rule": "explain-hidden-rows"},
    )


def _top(output: Any) -> dict[str, Any]:
    if not (isinstance(output, list) and len(output) == 1 and isinstance(output[0], dict)):
        raise TypeError("EXPLAIN returned an unexpected shape")
    top: dict[str, Any] = output[0]
    if not isinstance(top.get("Plan"), dict):
        raise TypeError("EXPLAIN returned no plan")
    return top
