"""`read_only_sql`: thin async glue (docs/tools/). args → the engine's policy and executor in a
worker thread → result.

`open_read_only_sql(settings)` opens the `SqlEngine` (`sql_engine/engine.py`: the role audit at start-up, the
executor, the policy, the database threads) and yields the SQL toolset on it: `sql_schema`
(`tools/sql_schema/`), this tool, `explain_sql` (`tools/explain_sql/`) and the `postgres://<db>/schema`
resource (served by `sql_schema`'s code). The executor, its pool and the policy are built by the
warm-up after the handshake (or the first call), and the pool is closed on exit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import trio

import mcp_suite.tools.explain_sql.tool as explain_tool
from mcp_suite.lazy import Lazy
from mcp_suite.problems import ProblemError
from mcp_suite.protocol.mcp import EncodedResult
from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.read_only_sql.statement_log import log_statement
from mcp_suite.tools.sql_engine.engine import SqlEngine, open_engine
from mcp_suite.tools.sql_engine.naming import schema_uri
from mcp_suite.tools.sql_schema import tool as schema_tool

if TYPE_CHECKING:
    from mcp_suite.tools.read_only_sql.models import ReadOnlySqlArgs, ReadOnlySqlResult

__all__ = ["open_read_only_sql", "spec"]

TOOL_NAME = "read_only_sql"

GUIDANCE = (
    "PostgreSQL: sql_schema shows the tables and columns the role may read, then read_only_sql "
    "runs one query at a time; explain_sql shows a query's plan."
)
# What it runs and what a result carries (output schemas are not shown to the model); the order of
# use is the instructions' (GUIDANCE), each limit is told by the refusal or hint that meets it.
DESCRIPTION = (
    "Run one read-only PostgreSQL query: SELECT, VALUES or a set operation, literals inline (no $1 "
    "parameters). Returns columns [{name, type}], rows (arrays in column order), row_count and "
    "truncated; a truncated result's hint says how to read on."
)


@contextlib.contextmanager
def open_read_only_sql(settings: Settings, *, guard_hidden_rows: bool = True) -> Iterator[Toolset | None]:
    """Open the engine, yield the SQL tools and the schema resource; close the pool on exit.

    `guard_hidden_rows=False` serves `explain_sql` without its hidden-rows check: only the test that
    proves the check's worth (the oracle it closes) passes it; the registry never does.

    Raises StartupRefusedError (exit 78) when the role could do more than read (`open_engine`).
    """
    if settings.sql_dsn is None:
        yield None
        return
    dsn = settings.sql_dsn.get_secret_value()
    engine = open_engine(settings, dsn)
    try:
        yield Toolset(
            tools=(
                schema_tool.spec(engine),
                spec(engine),
                explain_tool.spec(engine, guard_hidden_rows=guard_hidden_rows),
            ),
            resources=(schema_tool.resource(engine, schema_uri(dsn)),),
            warm_up=engine.warm_up,
            guidance=GUIDANCE,
            background=(engine.serve_reaudit,),
        )
    finally:
        engine.close()


def spec(engine: SqlEngine) -> ToolSpec:
    """The tool on the shared engine."""

    async def call(args: ReadOnlySqlArgs) -> EncodedResult:
        started, outcome, rows = time.perf_counter(), "error", None
        try:
            result = await engine.run_blocking(
                lambda ticket: engine.vet_and_run(args.sql, args.max_rows, ticket)
            )
            outcome, rows = "ok", len(result.rows)
        except ProblemError as exc:
            outcome = exc.slug
            raise
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        finally:
            log_statement(tool=TOOL_NAME, sql=args.sql, outcome=outcome, started=started, rows=rows)
        from mcp_suite.tools.read_only_sql.models import result_json, truncation_hint  # with the models
        from mcp_suite.tools.sql_engine.result import invisible_report, may_hide

        columns = [(c.name, c.type) for c in result.columns]
        row_count = len(result.rows)
        hint = None
        if result.truncated:
            settings = engine.settings
            hint = truncation_hint(
                row_count,
                cut_at_bytes=result.cut_at_bytes,
                max_rows_limit=settings.sql_max_rows,
                max_bytes=settings.sql_max_result_bytes,
            )
        # Values are returned as stored; those hiding characters are counted (json_rows kept room).
        invisible = invisible_report(result.rows, result.columns) if may_hide(result.rows_json) else None
        return EncodedResult(
            result_json(
                columns,
                result.rows_json,
                row_count=row_count,
                truncated=result.truncated,
                hint=hint,
                invisible=invisible,
            )
        )

    def models() -> tuple[type[ReadOnlySqlArgs], type[ReadOnlySqlResult]]:
        from mcp_suite.tools.read_only_sql.models import ReadOnlySqlResult, make_args_model

        return make_args_model(engine.settings.sql_max_rows), ReadOnlySqlResult

    return ToolSpec(
        name=TOOL_NAME,
        title="Read-only SQL",
        description=DESCRIPTION,
        models=Lazy(models),
        call=call,
        untrusted=True,  # database values
    )
