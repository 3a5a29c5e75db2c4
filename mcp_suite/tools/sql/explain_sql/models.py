"""The argument and result models of `explain_sql` (pydantic), loaded on first use.

The arguments are `read_only_sql`'s (the same `sql` and `max_rows`, so the same rewrite) plus
`analyze`.
"""

from __future__ import annotations

from typing import Annotated, Any, cast

from pydantic import Field

from mcp_suite.tools.models import StrictModel, omitted_when_none
from mcp_suite.tools.sql.read_only_sql.models import ReadOnlySqlArgs, make_args_model

__all__ = ["ExplainSqlArgs", "ExplainSqlResult", "make_explain_args_model"]


class ExplainSqlArgs(ReadOnlySqlArgs):
    """`read_only_sql`'s arguments plus `analyze`; `make_explain_args_model` binds `max_rows`."""

    analyze: bool = False  # the tool's description says what it adds


class ExplainSqlResult(StrictModel):
    """The plan PostgreSQL chose, and with analyze what running it took."""

    # The four `*_ms` and `actual_rows` come with analyze only (the description above says so once:
    # the whole tools/list is held to a byte budget, tests/unit/test_guidance.py).

    plan: Annotated[dict[str, Any], Field(description="EXPLAIN (FORMAT JSON)'s top plan node")]
    total_cost: float
    estimated_rows: float
    actual_rows: Annotated[float | None, omitted_when_none()] = None
    actual_time_ms: Annotated[float | None, omitted_when_none()] = None
    planning_time_ms: Annotated[float | None, omitted_when_none()] = None
    execution_time_ms: Annotated[float | None, omitted_when_none()] = None
    # Only when the plan's text holds characters a reader cannot see (`tool.result_of`).
    invisible: Annotated[str | None, omitted_when_none()] = None


def make_explain_args_model(max_rows_limit: int) -> type[ExplainSqlArgs]:
    """`ExplainSqlArgs` whose `max_rows` maximum is `max_rows_limit`."""
    model = make_args_model(max_rows_limit, ExplainSqlArgs, "Arguments of `explain_sql`.")
    return cast("type[ExplainSqlArgs]", model)
