"""`sql_schema`: what the `read_only_sql` role may read — tables, views, columns, keys, indexes.

Opened with its siblings by the family's opener (`tools/sql/opener.py`) on the shared `SqlEngine`
(its executor, pool, database threads and cancellation), never importing a sibling tool: this
module declares the tool (`spec`) and the schema resource (`resource`) and shapes the answer of
`SqlEngine.schema_page`, which reads the catalogue (`sql.engine.introspect`): the caller's strings
reach PostgreSQL only as bound parameters of fixed queries.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Final

from mcp_suite.caller import current_caller
from mcp_suite.lazy import Lazy
from mcp_suite.problems import AccessDeniedError, ProblemError, ResourceAccessDeniedError
from mcp_suite.settings import COMPLETION_MAX_VALUES
from mcp_suite.tools.base import ResourceSpec, ToolSpec
from mcp_suite.tools.sql import MODELS, SCOPE
from mcp_suite.tools.sql.engine.router import SqlSources

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.engine import SqlEngine
    from mcp_suite.tools.sql.engine.identity import CallRole
    from mcp_suite.tools.sql.engine.ticket import CallTicket
    from mcp_suite.tools.sql.models import SqlSchemaArgs, SqlSchemaResult

__all__ = ["DESCRIPTION", "TITLE", "TOOL_NAME", "models", "read_sync", "resource", "spec"]

TOOL_NAME: Final = "sql_schema"
TITLE: Final = "Tables and columns the SQL role may read"
# What it lists and what a result carries; each filter's meaning is its argument's description.
DESCRIPTION: Final = (
    "The tables and views read_only_sql may query, with comments, estimated rows and readable "
    "columns. Returns database, objects and next_cursor (null on the last page)."
)


def read_sync(
    engine: SqlEngine, args: SqlSchemaArgs, ticket: CallTicket, role: CallRole | None = None
) -> SqlSchemaResult:
    """One `sql_schema` call, blocking (run it in a database worker thread); with `role` (an
    identity map's), what that role may read."""
    answer = engine.schema_page(
        ticket,
        schema=args.schema_name,
        name_like=args.name_like,
        obj=args.object,
        detail=args.detail,
        cursor=args.cursor,
        max_objects=args.max_objects,
        role=role,
    )
    return MODELS.get().schema_result.model_validate(answer)


def models(sources: SqlSources) -> tuple[type[SqlSchemaArgs], type[SqlSchemaResult]]:
    """The tool's (arguments, result) models on the sources (the family's `MODELS`)."""
    return MODELS.get().sql_schema(sources)


def spec(sources: SqlSources) -> ToolSpec:
    """The tool on the sources' engines."""

    async def call(args: SqlSchemaArgs) -> SqlSchemaResult:
        name, engine = sources.pick_schema(getattr(args, "source", None))
        try:
            role = engine.role_for(current_caller.get())  # None without an identity map
            return await engine.run_blocking(functools.partial(read_sync, engine, args, role=role))
        except ProblemError as exc:
            sources.name_problem(name, exc)
            raise

    return ToolSpec(
        name=TOOL_NAME,
        title=TITLE,
        description=DESCRIPTION,
        models=Lazy(functools.partial(models, sources)),
        call=call,
        scope=SCOPE,
        untrusted=True,  # catalogue text: names and comments anyone with DDL rights wrote
    )


def resource(engine: SqlEngine, uri: str, source: str, *, about: str | None = None) -> ResourceSpec:
    """A source's schema resource (`postgres://<db>/schema` for the one source of `MCP_SQL_DSN`,
    `postgres://<source>/schema` for each of a configuration file): the first page of the unfiltered listing;
    `next_cursor` continues it through `sql_schema` (a resource read takes no cursor:
    docs/tools/sql_schema.md, "The schema resource"). `about`: a configuration file's description
    of the source, whose name, title and description then say which source it is (several schema
    resources side by side must not look alike)."""
    settings = engine.settings

    async def read() -> str:
        try:
            role = engine.role_for(current_caller.get())  # None without an identity map
            schema = await engine.run_blocking(
                lambda ticket: engine.schema_page(
                    ticket, max_objects=settings.sql_schema_max_tables, role=role
                )
            )
        except AccessDeniedError as exc:
            # The tool's refusal, as a resource read carries it (no isError): the caller's, -32600.
            raise ResourceAccessDeniedError(
                exc.detail, invalid_params=exc.invalid_params, metadata=exc.metadata
            ) from None
        return json.dumps(schema, ensure_ascii=True, separators=(",", ":"))

    async def complete(argument: str, prefix: str, schema: str | None) -> tuple[list[str], int]:
        """completion/complete of a schema or table name, as the caller's role reads the catalogue."""
        try:
            role = engine.role_for(current_caller.get())  # None without an identity map
            return await engine.run_blocking(
                lambda ticket: engine.complete_names(
                    ticket,
                    argument=argument,
                    prefix=prefix,
                    schema=schema,
                    limit=COMPLETION_MAX_VALUES,
                    role=role,
                )
            )
        except AccessDeniedError as exc:
            raise ResourceAccessDeniedError(
                exc.detail, invalid_params=exc.invalid_params, metadata=exc.metadata
            ) from None

    name, title, whose = "schema", "Database schema", ""
    if about is not None:
        name, title = f"schema-{source}", f"Database schema of {source}"
        whose = f" of the source {source} ({about}); sql_schema takes source={source}"
    return ResourceSpec(
        uri=uri,
        name=name,
        title=title,
        description=(
            "The tables and columns the read_only_sql role can query (JSON, as sql_schema): the first"
            f" page{whose}; pass its next_cursor to sql_schema as cursor for the rest."
        ),
        mime_type="application/json",
        read=read,
        scope=SCOPE,
        source=source,
        complete=complete,
    )
