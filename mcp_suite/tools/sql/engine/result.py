"""A query result's shape: its columns (name, type name), its rows as JSON values, the byte cap.

The rows arrive as libpq results held in memory (`pipeline.run_pipeline`); here they become Python
values through the connection's loaders (convert.py), then JSON-ready rows, one at a time, as many
as fit the result byte cap (the rest are left out, with a hint saying how to read on). No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final

import psycopg
import pydantic_core
from psycopg.adapt import Transformer
from psycopg.pq.abc import PGresult

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql.engine.convert import JSON_READY_OIDS, to_json_value
from mcp_suite.tools.text import count_invisible, counted, escape_invisible

__all__ = [
    "HINT_BYTES",
    "Column",
    "QueryResult",
    "description",
    "fits",
    "invisible_report",
    "json_rows",
    "load_rows",
    "may_hide",
    "plan_json",
    "report_bytes",
    "too_large",
]


@dataclass(frozen=True, slots=True)
class Column:
    """A result column: its name as the answer shows it, its type's name, and how many invisible
    characters the name PostgreSQL gave held (`named` escapes them in `name`)."""

    name: str
    type: str
    hidden: int = 0

    @classmethod
    def named(cls, name: str, type_name: str) -> Column:
        """The column PostgreSQL names `name` (an alias is the caller's, or a stored value's: a
        column of a table is whatever its owner wrote): shown escaped, its invisible characters
        counted, as a value's are (`invisible_report`)."""
        hidden = count_invisible(name)
        return cls(escape_invisible(name) if hidden else name, type_name, hidden)


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[Column, ...]
    rows: list[list[Any]]
    truncated: bool  # more rows existed than were returned
    rows_json: bytes  # `rows` as compact, ASCII-only JSON: written once, for the byte cap
    # The rows stop where the next one would have passed the byte cap (not at `max_rows`).
    cut_at_bytes: bool = False

    # The tool faces ask the result itself, so they need not import this module (it loads with
    # the executor, off `initialize`).
    def invisible(self) -> str | None:
        """`invisible_report` of the rows, looked for only when their JSON may hide a character."""
        if may_hide(self.rows_json) or any(column.hidden for column in self.columns):
            return invisible_report(self.rows, self.columns)
        return None

    def fits(self, max_bytes: int) -> bool:
        """`fits`: whether the rows, as written, fit the byte cap."""
        return fits(self.columns, self.rows_json, max_bytes)


# Rows converted and written together by `json_rows` (the pipeline's chunk of rows).
_BATCH: Final = 8

# Room the byte cap keeps for a truncated result's hint (`read_only_sql.tool.truncation_hint`,
# ASCII, at most this long with the largest figures: tests/unit/tools/sql/test_sql_truncation_hint.py).
HINT_BYTES: Final = 320


def too_large(max_bytes: int) -> ResultTooLargeError:
    return ResultTooLargeError(
        f"A row is larger than the reply's {max_bytes} bytes of JSON. Select fewer or"
        " shorter values: fewer columns, left(col, 200) for long text, or an aggregate.",
        metadata={"max_result_bytes": max_bytes},
    )


def description(conn: psycopg.Connection[Any], result: PGresult) -> list[tuple[str, int]]:
    """(name, type oid) of each column of `result`."""
    encoding = conn.info.encoding
    return [
        ((result.fname(i) or b"").decode(encoding, "replace"), result.ftype(i)) for i in range(result.nfields)
    ]


def load_rows(conn: psycopg.Connection[Any], results: Sequence[PGresult]) -> Iterator[tuple[Any, ...]]:
    """The rows of `results` (in order: one result per row when they were streamed) as Python
    values, through the connection's loaders (no I/O), each loaded only when it is asked for."""
    transformer = Transformer(conn)
    first = True
    for result in results:
        if not result.ntuples:
            continue
        transformer.set_pgresult(result, set_loaders=first)  # every result has the same columns
        first = False
        yield from transformer.load_rows(0, result.ntuples, tuple)


def json_rows(
    rows: Iterable[tuple[Any, ...]],
    columns: tuple[Column, ...],
    oids: list[int],
    *,
    encoding: str,
    max_bytes: int,
    max_rows: int,
    more: bool,
) -> tuple[list[list[Any]], bytes, bool]:
    """At most `max_rows` JSON-ready rows of `rows` (`oids`: each column's type; `encoding`: the
    connection's), their compact, ASCII-only JSON, and whether the byte cap cut them short.

    The rows stop before the first one that would take the answer past `max_bytes`
    (`MCP_SQL_MAX_RESULT_BYTES`: the column list, the rows, 64 bytes for the result's members and,
    when rows are left out (`more`: more rows than `max_rows` exist, or the cap cut them),
    `HINT_BYTES` for the hint). Raises `ResultTooLargeError` when not even the first row fits.
    Only the columns of a type outside `JSON_READY_OIDS` go through `to_json_value`.
    Limits: rows are taken, converted and written `_BATCH` at a time (one serialiser call per batch:
    per row would cost twice the CPU, bench_stages), row by row only in the batch the cap cuts, and
    none after it: no more than the cap plus one batch is ever written.
    """
    # On a SQL_ASCII database psycopg loads text as bytes: every column is converted there.
    ready = JSON_READY_OIDS if encoding != "ascii" else frozenset()
    convert = [index for index, oid in enumerate(oids) if oid not in ready]
    budget = max_bytes - 64 - len(_wire_json([{"name": c.name, "type": c.type} for c in columns]))
    if more:
        budget -= HINT_BYTES  # rows are left out whatever the cap does: the hint is sure to come
    reserved = False  # the invisible-characters report's room (taken once, when it may come)
    if any(column.hidden for column in columns):  # a name hides some: the report is sure to come
        reserved = True
        budget -= report_bytes(columns, max_bytes)
    out: list[list[Any]] = []
    parts: list[bytes] = []  # the JSON of a batch of rows (without its brackets), or of one row
    counts: list[int] = []  # the rows in each part
    used = 2  # the brackets
    cut = False
    source = iter(rows)
    while not cut and len(out) < max_rows:
        batch = [list(row) for row in islice(source, min(_BATCH, max_rows - len(out)))]
        if not batch:
            break
        for values in batch:
            for index in convert:
                values[index] = to_json_value(values[index])
        data = _wire_json(batch)[1:-1]
        if not reserved and may_hide(data) and any(count_invisible(row) for row in batch):
            reserved = True
            budget -= report_bytes(columns, max_bytes)
        size = len(data) + (1 if parts else 0)
        if used + size <= budget:
            out.extend(batch)
            parts.append(data)
            counts.append(len(batch))
            used += size
            continue
        cut = True  # some row of this batch does not fit: take those before it
        for values in batch:
            data = _wire_json(values)
            size = len(data) + (1 if parts else 0)
            if used + size > budget:
                break
            out.append(values)
            parts.append(data)
            counts.append(1)
            used += size
    if used > budget:  # the report's room was taken after some rows: they give it up
        used = _shrink(out, parts, counts, used, budget)
    if cut and not more:
        # A truncated answer carries its hint: the last rows give up the room it takes.
        used = _shrink(out, parts, counts, used, budget - HINT_BYTES)
    if not out and (cut or more):
        raise too_large(max_bytes)
    return out, b"[" + b",".join(parts) + b"]", cut


def may_hide(rows_json: bytes) -> bool:
    """Whether rows written as `rows_json` may hold an invisible character: the wire's JSON is
    ASCII, so every character outside it (each invisible one is) is written as a \\u escape."""
    return b"\\u" in rows_json


def report_bytes(columns: tuple[Column, ...], max_bytes: int) -> int:
    """The most `invisible_report` over `columns` can take in the answer (a part for each column,
    its name with every character escaped, each number as long as `max_bytes` written out: none is
    ever larger)."""
    digits = len(str(max_bytes))
    part = len("; ") + len(" invisible characters in  rows of column  ()") + 3 * digits
    named = len("; ") + len(" invisible characters in the name of column  ()") + 2 * digits
    return len(',"invisible":""') + sum(part + named + 12 * len(c.name) * 2 for c in columns)


def invisible_report(rows: list[list[Any]], columns: tuple[Column, ...]) -> str | None:
    """What `rows`' values (strings, and the strings and keys of JSON and arrays) and the columns'
    names hide: for each column whose name held invisible characters (`tools.text`), how
    many; for each column holding some, how many in how many rows; or None. The values are not
    changed: a read tool returns what is stored. A column's name is shown escaped (`Column.named`)."""
    rows_with = [0] * len(columns)
    characters = [0] * len(columns)
    for row in rows:
        for index, value in enumerate(row):
            found = count_invisible(value)
            if found:
                rows_with[index] += 1
                characters[index] += found
    parts: list[str] = []
    for index, column in enumerate(columns):
        if column.hidden:
            parts.append(
                f"{counted(column.hidden, 'invisible character')} in the name of column {index}"
                f" ({escape_invisible(column.name)})"
            )
        if characters[index]:
            parts.append(
                f"{counted(characters[index], 'invisible character')} in {counted(rows_with[index], 'row')}"
                f" of column {index} ({escape_invisible(column.name)})"
            )
    return "; ".join(parts) or None


def _shrink(out: list[list[Any]], parts: list[bytes], counts: list[int], used: int, limit: int) -> int:
    """Drop rows from the end of `out` (and their JSON from `parts`) until `used` is within `limit`;
    the new `used`. A batch is split into single rows first (its size is theirs and the commas)."""
    while parts and used > limit:
        count = counts[-1]
        if count > 1:
            parts.pop()
            counts.pop()
            parts.extend(_wire_json(values) for values in out[-count:])
            counts.extend([1] * count)
            continue
        used -= len(parts.pop()) + (1 if parts else 0)
        counts.pop()
        out.pop()
    return used


def plan_json(rows: list[list[Any]]) -> bytes:
    """`explain_sql`'s one row (the plan) as the wire writes it, uncapped: the pipeline's byte limit
    bounds it; the tool checks it against the cap (`fits`) once the hidden-rows check is done."""
    return _wire_json(rows)


def fits(columns: tuple[Column, ...], rows_json: bytes, max_bytes: int) -> bool:
    """Whether rows written as `rows_json` fit the byte cap as `json_rows` counts it."""
    names = _wire_json([{"name": c.name, "type": c.type} for c in columns])
    return len(names) + len(rows_json) + 64 <= max_bytes


def _wire_json(value: Any) -> bytes:
    """`value` as the wire carries it: pydantic's serializer (the result model's own), or, when
    that is not ASCII, the escaping encoder the wire then uses.

    Security: a NaN or an infinity, which the loaders never return (they become strings), is
    written as `to_json_value` writes it, "NaN", "Infinity" or "-Infinity", never as pydantic's
    default bare `NaN`, which is not JSON. Asked of the serializer, not looked for in its output:
    two byte searches cost about as much as the serializer itself (bench/encoder_ab.py).
    """
    data = pydantic_core.to_json(value, inf_nan_mode="strings")
    if data.isascii():
        return data
    try:
        return compact_json(value).encode("ascii")
    except ValueError:  # a non-finite float: written as above
        return compact_json(_finite(value)).encode("ascii")


def _finite(value: Any) -> Any:
    """`value` with its non-finite floats as strings (see `_wire_json`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return to_json_value(value)
    if isinstance(value, list):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value
