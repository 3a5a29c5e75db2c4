"""The argument and result models of `sql_schema` (pydantic), loaded on first use."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from mcp_suite.tools.models import StrictModel, omitted_when_none
from mcp_suite.tools.sql.engine.introspect.lookup import MAX_CURSOR_CHARS

__all__ = [
    "DEFAULT_MAX_OBJECTS",
    "MAX_OBJECTS",
    "ObjectKind",
    "SqlForeignKey",
    "SqlIndex",
    "SqlObject",
    "SqlObjectColumn",
    "SqlSchemaArgs",
    "SqlSchemaResult",
]

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
