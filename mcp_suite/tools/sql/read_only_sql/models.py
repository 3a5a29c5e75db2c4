"""The argument and result models of `read_only_sql` (pydantic), loaded on first use.

`make_args_model` binds `max_rows`'s maximum (and its default, when lower) to settings.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import Field, JsonValue, create_model

from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.settings import SQL_MAX_CHARS
from mcp_suite.tools.models import StrictModel, omitted_when_none

__all__ = [
    "DEFAULT_MAX_ROWS",
    "ReadOnlySqlArgs",
    "ReadOnlySqlResult",
    "SqlColumn",
    "make_args_model",
    "result_json",
    "truncation_hint",
]

DEFAULT_MAX_ROWS: Final = 50


class ReadOnlySqlArgs(StrictModel):
    """Arguments of `read_only_sql`; `make_args_model` binds `max_rows`'s maximum to settings."""

    # The tool's description says what the query may be; the names say the rest.
    sql: Annotated[str, Field(min_length=1, max_length=SQL_MAX_CHARS)]
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
            # The limit is enforced here and told by the refusal and the truncation hint.
            Field(default=default, ge=1, le=max_rows_limit),
        ),
    )
    return model


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
