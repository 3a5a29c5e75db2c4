"""`explain_sql`: the plan of one query that passes `read_only_sql`'s policy unchanged.

Opened with its siblings by the family's opener (`tools/sql/opener.py`) on the shared `SqlEngine`
(`sql/engine/engine.py`), never importing a sibling tool: the same policy call, the same
transaction, timeout, cancellation and caps (see `Executor.run_vetted`'s `explain`). This module declares
the tool (`spec`), refuses a plan that reads rows the role may not select (`check_hidden_rows`) and
turns EXPLAIN's JSON into the result.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Final

from mcp_suite.caller import current_caller
from mcp_suite.lazy import Lazy
from mcp_suite.problems import ProblemError, ResultTooLargeError
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.sql import MODELS, SCOPE
from mcp_suite.tools.sql.engine.explain import (
    hidden_rows_refusal,
    plan_document,
    plan_too_large,
    relation_names,
    summarise,
    too_deep_refusal,
)
from mcp_suite.tools.sql.engine.router import SqlSources
from mcp_suite.tools.text import count_invisible, counted, strings_of

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.engine import SqlEngine
    from mcp_suite.tools.sql.engine.executor import QueryResult
    from mcp_suite.tools.sql.engine.identity import CallRole
    from mcp_suite.tools.sql.engine.ticket import CallTicket
    from mcp_suite.tools.sql.models import ExplainSqlArgs, ExplainSqlResult

__all__ = [
    "DESCRIPTION",
    "TITLE",
    "TOOL_NAME",
    "check_hidden_rows",
    "models",
    "output_of",
    "plan_document",
    "result_of",
    "spec",
    "too_deep_refusal",
]

log = logging.getLogger(__name__)

TOOL_NAME: Final = "explain_sql"
TITLE: Final = "Query plan (EXPLAIN)"
# What it shows and what a result carries; a plan it refuses is told by its refusal.
DESCRIPTION: Final = (
    "PostgreSQL's plan for a query read_only_sql would run, by the same rules and limits. Returns "
    "plan (EXPLAIN's JSON top node), total_cost and estimated_rows; analyze: true runs the query "
    "and adds actual_rows and the times in ms."
)


def output_of(result: QueryResult) -> Any:
    """EXPLAIN's JSON: the one value of the executor's one row."""
    ((output,),) = result.rows
    return output


def check_hidden_rows(
    engine: SqlEngine, output: Any, ticket: CallTicket, *, analyze: bool, role: CallRole | None = None
) -> None:
    """Raise `hidden_rows_refusal` when the plan reads a relation the role may not read in full;
    blocking (one catalogue query, in a read-only transaction under the statement timeout).

    Security: EXPLAIN's counts and estimates are taken below a view's filter (a range pushed into
    an index scan under a security_barrier view counts the hidden rows it removes) and from
    statistics over every row, so a plan over such a relation would tell about rows the role
    cannot select: it is refused whole, `analyze` or not (docs/tools/explain_sql.md).
    """
    hidden = engine.hidden_relations(relation_names(output), ticket, role)  # judged as the call's role
    if hidden:
        # The operator's log names the relations; the model's answer does not (sql_schema hides them).
        log.info("explain_sql: refused a plan that reads %s (not readable in full)", ", ".join(hidden))
        raise hidden_rows_refusal(analyze=analyze)


def result_of(output: Any, *, analyze: bool) -> ExplainSqlResult:
    """The tool's answer from EXPLAIN's JSON."""
    summary = summarise(output, analyze=analyze)
    # The plan is shown as PostgreSQL wrote it; what hides in its text is counted.
    hiding = [found for text in strings_of(summary["plan"]) if (found := count_invisible(text))]
    if hiding:
        characters = counted(sum(hiding), "invisible character")
        summary["invisible"] = f"{characters} in {counted(len(hiding), 'string')} of the plan"
    return MODELS.get().explain_result.model_validate(summary)


def models(sources: SqlSources) -> tuple[type[ExplainSqlArgs], type[ExplainSqlResult]]:
    """The tool's (arguments, result) models on the sources (the family's `MODELS`)."""
    return MODELS.get().explain_sql(sources)


def spec(sources: SqlSources, *, guard_hidden_rows: bool = True) -> ToolSpec:
    """The tool on the sources' engines. `guard_hidden_rows=False` serves it without its
    hidden-rows check: only the test that proves the check's worth (the oracle it closes) passes it."""

    async def call(args: ExplainSqlArgs) -> ExplainSqlResult:
        name, engine = sources.pick_free(getattr(args, "source", None))
        max_rows = sources.max_rows(name, engine, args)
        # read_only_sql's own path: the same policy verdict, the same execution.
        try:
            role = engine.role_for(current_caller.get())  # None without an identity map
            output = await engine.run_blocking(
                functools.partial(
                    _explain, engine, args, max_rows, guard_hidden_rows=guard_hidden_rows, role=role
                )
            )
        except ProblemError as exc:
            sources.name_problem(name, exc)
            raise
        return result_of(output, analyze=args.analyze)

    return ToolSpec(
        name=TOOL_NAME,
        title=TITLE,
        description=DESCRIPTION,
        models=Lazy(functools.partial(models, sources)),
        call=call,
        scope=SCOPE,
        untrusted=True,  # catalogue text (names, view and policy expressions) in the plan
    )


def _explain(
    engine: SqlEngine,
    args: ExplainSqlArgs,
    max_rows: int,
    ticket: CallTicket,
    *,
    guard_hidden_rows: bool,
    role: CallRole | None = None,
) -> Any:
    """EXPLAIN's JSON, refused when the plan reads rows the role may not select; blocking.

    Security: the check reads the plan PostgreSQL made (views expanded, every scan and index), so
    it judges what runs, not what the query names; it comes after the EXPLAIN, so an `analyze` of
    a refused plan has run (as read_only_sql would run the same query) but none of its figures
    leave this function.
    """
    analyze = args.analyze
    max_bytes = engine.settings.sql_max_result_bytes
    try:
        result = engine.vet_and_run(
            args.sql, max_rows, ticket, explain="analyze" if analyze else "plan", role=role
        )
    except ResultTooLargeError:
        # The plan passed the pipeline's byte limit while it arrived (several times the cap).
        raise plan_too_large(max_bytes) from None
    output, too_deep = plan_document(output_of(result))
    if guard_hidden_rows:
        check_hidden_rows(engine, output, ticket, analyze=analyze, role=role)
    # Only after the hidden-rows check: a plan's depth follows the plan chosen, and that choice
    # comes from statistics, so refusing a deep plan first would tell about hidden rows.
    if too_deep:
        raise too_deep_refusal()
    # The size of a plan too follows the plan chosen: its refusal comes after the check as well.
    if not result.fits(max_bytes):
        raise plan_too_large(max_bytes)
    return output
