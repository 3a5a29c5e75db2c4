"""`read_only_sql`: the face of one read-only query (docs/tools/read_only_sql.md). Declares the tool
(`spec`): args → the engine's policy and executor in a worker thread (`SqlEngine.vet_and_run`) →
the result, written as JSON around the rows the executor already converted (`result_json`).

Opened with its siblings by the family's opener (`tools/sql/opener.py`); imports the engine and the
family's modules, never a sibling tool. Its models are the family's (`tools/sql/models.py`).
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Final

import trio

from mcp_suite.caller import current_caller
from mcp_suite.lazy import Lazy
from mcp_suite.problems import ProblemError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.protocol.mcp import EncodedResult
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.sql import MODELS, SCOPE
from mcp_suite.tools.sql.engine.router import SqlSources
from mcp_suite.tools.sql.statement_log import log_statement

if TYPE_CHECKING:
    from mcp_suite.tools.sql.models import ReadOnlySqlArgs, ReadOnlySqlResult

__all__ = ["DESCRIPTION", "TOOL_NAME", "result_json", "spec", "truncation_hint"]

TOOL_NAME: Final = "read_only_sql"

# What it runs and what a result carries (output schemas are not shown to the model); the order of
# use is the instructions' (`opener.GUIDANCE`), each limit is told by the refusal or hint that meets it.
DESCRIPTION: Final = (
    "Run one read-only PostgreSQL query: SELECT, VALUES or a set operation, literals inline (no $1 "
    "parameters). Returns columns [{name, type}], rows (arrays in column order), row_count and "
    "truncated; a truncated result's hint says how to read on."
)


def models(sources: SqlSources) -> tuple[type[ReadOnlySqlArgs], type[ReadOnlySqlResult]]:
    """The tool's (arguments, result) models on the sources (the family's `MODELS`)."""
    return MODELS.get().read_only_sql(sources)


def spec(sources: SqlSources) -> ToolSpec:
    """The tool on the sources' engines."""

    async def call(args: ReadOnlySqlArgs) -> EncodedResult:
        name, engine = sources.pick_free(getattr(args, "source", None))
        max_rows = sources.max_rows(name, engine, args)
        started, outcome, rows, role = time.perf_counter(), "error", None, None
        try:
            role = engine.role_for(current_caller.get())  # None without an identity map
            result = await engine.run_blocking(
                lambda ticket: engine.vet_and_run(args.sql, max_rows, ticket, role=role)
            )
            outcome, rows = "ok", len(result.rows)
        except ProblemError as exc:
            outcome = exc.slug
            sources.name_problem(name, exc)
            raise
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        finally:
            log_statement(
                tool=TOOL_NAME,
                sql=args.sql,
                outcome=outcome,
                started=started,
                rows=rows,
                source=name if sources.named else None,
                role=role.role if role is not None else None,
            )
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
        invisible = result.invisible()
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

    return ToolSpec(
        name=TOOL_NAME,
        title="Read-only SQL",
        description=DESCRIPTION,
        models=Lazy(functools.partial(models, sources)),
        call=call,
        scope=SCOPE,
        untrusted=True,  # database values
    )


def truncation_hint(row_count: int, *, cut_at_bytes: bool, max_rows_limit: int, max_bytes: int) -> str:
    """The next step for a truncated result: how to get the rows that were left out."""
    more = f"continue after the last row: ORDER BY a key, WHERE key > its last value (or OFFSET {row_count})"
    if cut_at_bytes:
        return (
            f"The next row did not fit in the reply's {max_bytes} bytes. To read on, {more};"
            " select fewer or shorter columns (left(col, 200)) for more rows per call."
        )
    return f"More rows exist. Raise max_rows (at most {max_rows_limit}), or {more}."


def result_json(
    columns: list[tuple[str, str]],
    rows_json: bytes,
    *,
    row_count: int,
    truncated: bool,
    hint: str | None = None,
    invisible: str | None = None,
) -> bytes:
    """A `ReadOnlySqlResult` as compact, ASCII-only JSON, around rows the executor has already
    converted and written (`rows_json`); no model is built and nothing is validated again
    (tests/pg/test_sql_result.py proves the bytes against the outputSchema). `hint` only when
    `truncated`; `invisible` (`result.invisible_report`) only when it has entries."""
    names = compact_json([{"name": name, "type": type_} for name, type_ in columns]).encode("ascii")
    flag = b"true" if truncated else b"false"
    tail = b',"hint":%s' % compact_json(hint).encode("ascii") if hint is not None else b""
    if invisible:
        tail += b',"invisible":%s' % compact_json(invisible).encode("ascii")
    return b'{"columns":%s,"rows":%s,"row_count":%d,"truncated":%s%s}' % (
        names,
        rows_json,
        row_count,
        flag,
        tail,
    )
