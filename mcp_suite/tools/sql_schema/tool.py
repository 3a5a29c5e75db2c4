"""`sql_schema`: what the `read_only_sql` role may read — tables, views, columns, keys, indexes.

Served by `read_only_sql`'s toolset on the shared `SqlEngine` (its executor, pool, database threads
and cancellation): this module declares the tool (`spec`) and the schema resource (`resource`), and
holds the sync work of one call, `read_sync`, which the resource uses too. The caller's strings go
through `policy.lookup` and reach PostgreSQL only as
bound parameters of the fixed queries in `catalogue`.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Final

from mcp_suite.lazy import Lazy
from mcp_suite.tools.base import ResourceSpec, ToolSpec
from mcp_suite.tools.sql_schema.policy import decode_cursor, lookup

if TYPE_CHECKING:
    from mcp_suite.tools.sql_engine.engine import SqlEngine
    from mcp_suite.tools.sql_engine.executor import Executor
    from mcp_suite.tools.sql_engine.ticket import CallTicket
    from mcp_suite.tools.sql_schema.models import SqlSchemaArgs, SqlSchemaResult

__all__ = ["DESCRIPTION", "TITLE", "TOOL_NAME", "models", "read_dict", "read_sync", "resource", "spec"]

TOOL_NAME: Final = "sql_schema"
TITLE: Final = "Tables and columns the SQL role may read"
DESCRIPTION: Final = (
    "List the tables and views read_only_sql may query, in every schema the role can use, with "
    "comments, estimated rows and readable columns (detail='full' adds keys, foreign keys and "
    "indexes). Call it before writing SQL. Filter by `schema`, `name_like` (ILIKE pattern) or "
    "`object` ('schema.name'). Pages: pass `next_cursor` as `cursor`."
)


def read_dict(
    executor: Executor,
    ticket: CallTicket,
    *,
    schema: str | None = None,
    name_like: str | None = None,
    obj: str | None = None,
    detail: str = "columns",
    cursor: str | None = None,
    max_objects: int,
    max_bytes: int,
    comment_chars: int,
) -> dict[str, Any]:
    """One page of the answer as JSON values (blocking):
    `{"database", "objects", "truncated", "next_cursor"}`.

    Raises `InvalidArgumentsError` for a malformed `object` or `name_like`, or a cursor this server
    did not give for these filters, before anything is sent.
    """
    from mcp_suite.tools.sql_schema import catalogue  # with the executor: not needed for `initialize`

    params = lookup(schema, name_like, obj)
    after = decode_cursor(cursor, params) if cursor is not None else None
    return executor.read_catalogue(
        functools.partial(
            catalogue.read,
            lookup=params,
            detail=detail,
            max_objects=max_objects,
            max_bytes=max_bytes,
            comment_chars=comment_chars,
            after=after,
        ),
        ticket=ticket,
    )


def read_sync(
    executor: Executor, args: SqlSchemaArgs, ticket: CallTicket, *, max_bytes: int, comment_chars: int
) -> SqlSchemaResult:
    """One `sql_schema` call, blocking (run it in a database worker thread)."""
    from mcp_suite.tools.sql_schema.models import SqlSchemaResult

    answer = read_dict(
        executor,
        ticket,
        schema=args.schema_name,
        name_like=args.name_like,
        obj=args.object,
        detail=args.detail,
        cursor=args.cursor,
        max_objects=args.max_objects,
        max_bytes=max_bytes,
        comment_chars=comment_chars,
    )
    return SqlSchemaResult.model_validate(answer)


def models() -> tuple[type[SqlSchemaArgs], type[SqlSchemaResult]]:
    from mcp_suite.tools.sql_schema.models import SqlSchemaArgs, SqlSchemaResult

    return SqlSchemaArgs, SqlSchemaResult


def spec(engine: SqlEngine) -> ToolSpec:
    """The tool on the shared engine."""
    settings = engine.settings

    async def call(args: SqlSchemaArgs) -> SqlSchemaResult:
        return await engine.run_blocking(
            lambda ticket: read_sync(
                engine.executor(),
                args,
                ticket,
                max_bytes=settings.sql_max_result_bytes,
                comment_chars=settings.sql_schema_max_comment_chars,
            )
        )

    return ToolSpec(name=TOOL_NAME, title=TITLE, description=DESCRIPTION, models=Lazy(models), call=call)


def resource(engine: SqlEngine, uri: str) -> ResourceSpec:
    """The `postgres://<db>/schema` resource: the first page of the unfiltered listing;
    `next_cursor` continues it through `sql_schema` (a resource read takes no cursor:
    docs/tools/sql_schema.md, "The schema resource")."""
    settings = engine.settings

    async def read() -> str:
        schema = await engine.run_blocking(
            lambda ticket: read_dict(
                engine.executor(),
                ticket,
                max_objects=settings.sql_schema_max_tables,
                max_bytes=settings.sql_max_result_bytes,
                comment_chars=settings.sql_schema_max_comment_chars,
            )
        )
        return json.dumps(schema, ensure_ascii=True, separators=(",", ":"))

    return ResourceSpec(
        uri=uri,
        name="schema",
        title="Database schema",
        description=(
            "The tables and columns the read_only_sql role can query (JSON, as sql_schema): the first"
            " page; pass its next_cursor to sql_schema as cursor for the rest."
        ),
        mime_type="application/json",
        read=read,
    )
