"""`explain_sql`: the plan of one query that passes `read_only_sql`'s policy unchanged.

Served by `read_only_sql`'s toolset through its own entry point and execution path (the same
policy call, the same transaction, timeout, cancellation and caps; see `Executor.run`'s
`explain`): this module holds the description and turns EXPLAIN's JSON into the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.tools.explain_sql.policy import summarise

if TYPE_CHECKING:
    from mcp_suite.tools.explain_sql.models import ExplainSqlArgs, ExplainSqlResult
    from mcp_suite.tools.read_only_sql.executor import QueryResult

__all__ = ["DESCRIPTION", "TITLE", "TOOL_NAME", "models", "result_of"]

TOOL_NAME: Final = "explain_sql"
TITLE: Final = "Query plan (EXPLAIN)"
DESCRIPTION: Final = (
    "Show PostgreSQL's plan for one query read_only_sql would accept (the same rules and rewrite): "
    "the plan tree, total cost and estimated rows. `analyze: true` runs the query under "
    "read_only_sql's limits and adds actual rows and time."
)


def result_of(result: QueryResult, *, analyze: bool) -> ExplainSqlResult:
    """The tool's answer from the executor's one row of EXPLAIN output."""
    from mcp_suite.tools.explain_sql.models import ExplainSqlResult

    ((output,),) = result.rows
    return ExplainSqlResult.model_validate(summarise(output, analyze=analyze))


def models(max_rows_limit: int) -> tuple[type[ExplainSqlArgs], type[ExplainSqlResult]]:
    from mcp_suite.tools.explain_sql.models import ExplainSqlResult, make_explain_args_model

    return make_explain_args_model(max_rows_limit), ExplainSqlResult
