"""The SQL family's argument and result models (pydantic): `read_only_sql`'s, `explain_sql`'s (the
same `sql` and `max_rows`, so the same rewrite, plus `analyze`) and `sql_schema`'s, each bound to
the configured sources (`with_source`) and row limit by `SqlModels`.

Loaded only through the family's one deferred import (`tools.sql.MODELS`), after the handshake or by
the first call: a tool face imports it for types only. Imports no tool; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from mcp_suite.settings import SQL_MAX_CHARS
from mcp_suite.tools.models import StrictModel, omitted_when_none
from mcp_suite.tools.sql.engine.introspect.lookup import MAX_CURSOR_CHARS

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.router import SqlSources

__all__ = [
    "DEFAULT_MAX_OBJECTS",
    "DEFAULT_MAX_ROWS",
    "LOADED",
    "MAX_OBJECTS",
    "ExplainSqlArgs",
    "ExplainSqlResult",
    "ObjectKind",
    "ReadOnlySqlArgs",
    "ReadOnlySqlResult",
    "SqlColumn",
    "SqlForeignKey",
    "SqlIndex",
    "SqlModels",
    "SqlObject",
    "SqlObjectColumn",
    "SqlSchemaArgs",
    "SqlSchemaResult",
    "make_args_model",
    "make_explain_args_model",
    "with_source",
]

DEFAULT_MAX_ROWS: Final = 50


class ReadOnlySqlArgs(StrictModel):
    """Arguments of `read_only_sql`; `make_args_model` binds `max_rows`'s maximum to settings."""

    # The tool's description says what the query may be; this names the argument's dialect.
    sql: Annotated[str, Field(min_length=1, max_length=SQL_MAX_CHARS, description="One PostgreSQL query")]
    max_rows: Annotated[int, Field(ge=1)] = DEFAULT_MAX_ROWS


class SqlColumn(StrictModel):
    name: str
    type: Annotated[str, Field(description="PostgreSQL type, e.g. integer, text, jsonb")]


class ReadOnlySqlResult(StrictModel):
    columns: Annotated[list[SqlColumn], Field(description="The result's columns, in order")]
    rows: Annotated[
        list[list[JsonValue]],
        Field(
            description="In column order: numeric and non-finite floats as strings, times ISO "
            "8601, bytea \\x hex, json and arrays as JSON, other types their text, NULL null."
        ),
    ]
    row_count: Annotated[int, Field(ge=0, description="Rows returned")]
    truncated: Annotated[bool, Field(description="More rows existed than returned (hint: next step)")]
    hint: Annotated[str | None, omitted_when_none()] = None  # only when truncated
    # Only when some values hold characters a reader cannot see (`result.invisible_report`).
    invisible: Annotated[str | None, omitted_when_none()] = None


def make_args_model(
    max_rows_limit: int,
    base: type[ReadOnlySqlArgs] = ReadOnlySqlArgs,
    doc: str = "Arguments of `read_only_sql`.",
) -> type[ReadOnlySqlArgs]:
    """`base` (`ReadOnlySqlArgs` or a subclass, such as `explain_sql`'s) whose `max_rows` maximum
    is `max_rows_limit` (and its default, when lower)."""
    default = min(DEFAULT_MAX_ROWS, max_rows_limit)
    model: type[ReadOnlySqlArgs] = create_model(
        base.__name__,
        __base__=base,
        __doc__=doc,
        max_rows=(
            int,
            # The limit is enforced here and told by the refusal and the truncation hint; the
            # advertised schema keeps the maximum too (its other bounds are left out), so a model
            # asks for no more rows than it may have.
            Field(default=default, ge=1, le=max_rows_limit, json_schema_extra={"maximum": max_rows_limit}),
        ),
    )
    return model


class ExplainSqlArgs(ReadOnlySqlArgs):
    """`read_only_sql`'s arguments plus `analyze`; `make_explain_args_model` binds `max_rows`."""

    analyze: bool = False  # the tool's description says what it adds


class ExplainSqlResult(StrictModel):
    """The plan PostgreSQL chose, and with analyze what running it took."""

    # The four `*_ms` and `actual_rows` come with analyze only (the description above says so once:
    # the whole tools/list is held to a byte budget, tests/unit/tools/test_guidance.py).

    plan: Annotated[dict[str, Any], Field(description="EXPLAIN (FORMAT JSON)'s top plan node")]
    total_cost: float
    estimated_rows: float
    actual_rows: Annotated[float | None, omitted_when_none()] = None
    actual_time_ms: Annotated[float | None, omitted_when_none()] = None
    planning_time_ms: Annotated[float | None, omitted_when_none()] = None
    execution_time_ms: Annotated[float | None, omitted_when_none()] = None
    # Only when the plan's text holds characters a reader cannot see (`explain_sql.tool.result_of`).
    invisible: Annotated[str | None, omitted_when_none()] = None


def make_explain_args_model(max_rows_limit: int) -> type[ExplainSqlArgs]:
    """`ExplainSqlArgs` whose `max_rows` maximum is `max_rows_limit`."""
    model = make_args_model(max_rows_limit, ExplainSqlArgs, "Arguments of `explain_sql`.")
    return cast("type[ExplainSqlArgs]", model)


MAX_OBJECTS: Final = 500
DEFAULT_MAX_OBJECTS: Final = 100
# Longer than any PostgreSQL name (63 bytes) or "schema"."name" pair can be.
_MAX_NAME_CHARS: Final = 300

ObjectKind = Literal["table", "partitioned table", "view", "materialized view", "foreign table"]
Detail = Literal["names", "columns", "full"]


class SqlSchemaArgs(StrictModel):
    """Which tables and views to describe, and in how much detail. All filters are optional."""

    schema_name: Annotated[
        str | None,
        Field(alias="schema", min_length=1, max_length=_MAX_NAME_CHARS, description="exact name"),
    ] = None
    name_like: Annotated[
        str | None, Field(min_length=1, max_length=_MAX_NAME_CHARS, description="ILIKE pattern")
    ] = None
    object: Annotated[
        str | None, Field(min_length=1, max_length=_MAX_NAME_CHARS, description="schema.name")
    ] = None
    detail: Annotated[Detail, Field(description="full adds keys and indexes")] = "columns"
    max_objects: Annotated[int, Field(ge=1, le=MAX_OBJECTS)] = DEFAULT_MAX_OBJECTS
    cursor: Annotated[
        str | None,
        Field(min_length=1, max_length=MAX_CURSOR_CHARS, description="next_cursor, same filters"),
    ] = None


class SqlObjectColumn(StrictModel):
    name: str
    type: Annotated[str, Field(description="PostgreSQL type, e.g. integer, character varying(20)")]
    nullable: bool
    default: str | None
    comment: str | None


class SqlForeignKey(StrictModel):
    columns: list[str]
    references: Annotated[str, Field(description="schema.name of the referenced object")]
    referenced_columns: list[str]


class SqlIndex(StrictModel):
    name: str
    unique: bool
    definition: str


class SqlObject(StrictModel):
    # `schema` would shadow a BaseModel method: the field has another name and is "schema" on the wire.
    model_config = ConfigDict(serialize_by_alias=True)

    schema_name: Annotated[str, Field(alias="schema")]
    name: str
    kind: ObjectKind
    comment: str | None
    estimated_rows: Annotated[int | None, Field(description="Planner estimate; null if unknown")]
    # Present only at the detail that asks for them.
    columns: Annotated[list[SqlObjectColumn] | None, omitted_when_none("Readable columns only")] = None
    primary_key: Annotated[list[str] | None, omitted_when_none()] = None
    unique: Annotated[list[list[str]] | None, omitted_when_none()] = None
    foreign_keys: Annotated[list[SqlForeignKey] | None, omitted_when_none()] = None
    indexes: Annotated[list[SqlIndex] | None, omitted_when_none()] = None
    details_omitted: Annotated[
        bool | None,
        omitted_when_none(
            "Columns, keys and indexes left out: alone they pass the byte limit (read"
            " information_schema.columns)"
        ),
    ] = None


class SqlSchemaResult(StrictModel):
    """Tables and views the role may read, in schema and name order."""

    database: str
    objects: list[SqlObject]
    truncated: bool = Field(description="More objects follow (see next_cursor).")
    next_cursor: str | None = Field(
        description="Pass as `cursor`, same filters, for the next page; null on the last."
    )


def with_source(model: type[BaseModel], sources: SqlSources) -> type[BaseModel]:
    """`model` with a `source` argument, one of the configured names, when the tools take one."""
    if not sources.named:
        return model
    choice: Any = Literal[sources.names]  # a Literal of the configured names, built at run time
    # Required when there are several (a model must choose); the one source otherwise.
    default: Any = sources.names[0] if len(sources.names) == 1 else ...
    extended = create_model(
        model.__name__,
        __base__=model,
        __doc__=model.__doc__,
        # `enum` even for one name (pydantic writes a `const` then): clients and the per-caller
        # lists of HTTP (`protocol.authz.grants_of`) read the names there.
        source=(
            choice,
            Field(default, description="which database", json_schema_extra={"enum": list(sources.names)}),
        ),
    )
    return cast("type[BaseModel]", extended)


def _read_only_sql(sources: SqlSources) -> tuple[type[ReadOnlySqlArgs], type[ReadOnlySqlResult]]:
    arguments = with_source(make_args_model(sources.max_rows_limit), sources)
    return cast("type[ReadOnlySqlArgs]", arguments), ReadOnlySqlResult


def _explain_sql(sources: SqlSources) -> tuple[type[ExplainSqlArgs], type[ExplainSqlResult]]:
    arguments = with_source(make_explain_args_model(sources.max_rows_limit), sources)
    return cast("type[ExplainSqlArgs]", arguments), ExplainSqlResult


def _sql_schema(sources: SqlSources) -> tuple[type[SqlSchemaArgs], type[SqlSchemaResult]]:
    return cast("type[SqlSchemaArgs]", with_source(SqlSchemaArgs, sources)), SqlSchemaResult


@dataclass(frozen=True, slots=True)
class SqlModels:
    """What the tool faces take from this module (through `tools.sql.MODELS`): each tool's
    (arguments, result) pair bound to the sources, and the result classes a call builds."""

    read_only_sql: Callable[[SqlSources], tuple[type[ReadOnlySqlArgs], type[ReadOnlySqlResult]]]
    explain_sql: Callable[[SqlSources], tuple[type[ExplainSqlArgs], type[ExplainSqlResult]]]
    sql_schema: Callable[[SqlSources], tuple[type[SqlSchemaArgs], type[SqlSchemaResult]]]
    explain_result: type[ExplainSqlResult]
    schema_result: type[SqlSchemaResult]


LOADED: Final = SqlModels(
    read_only_sql=_read_only_sql,
    explain_sql=_explain_sql,
    sql_schema=_sql_schema,
    explain_result=ExplainSqlResult,
    schema_result=SqlSchemaResult,
)
