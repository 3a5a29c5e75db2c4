"""A query result's shape: its columns (name, type name), its rows as JSON values, the byte cap.

The rows arrive as libpq results held in memory (`pipeline.run_pipeline`); here they become Python
values through the connection's loaders (convert.py), then JSON-ready rows whose compact JSON must
fit the result byte cap. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.adapt import Transformer
from psycopg.pq.abc import PGresult

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.tools.read_only_sql.convert import json_size, to_json_value

__all__ = ["Column", "QueryResult", "description", "json_rows", "load_rows", "too_large"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[Column, ...]
    rows: list[list[Any]]
    truncated: bool


def too_large(max_bytes: int) -> ResultTooLargeError:
    return ResultTooLargeError(
        f"The result is larger than {max_bytes} bytes of JSON. Select fewer or"
        " shorter values: fewer columns, a smaller max_rows, left(col, 200) for long"
        " text, or an aggregate.",
        metadata={"max_result_bytes": max_bytes},
    )


def description(conn: psycopg.Connection[Any], result: PGresult) -> list[tuple[str, int]]:
    """(name, type oid) of each column of `result`."""
    encoding = conn.info.encoding
    return [
        ((result.fname(i) or b"").decode(encoding, "replace"), result.ftype(i)) for i in range(result.nfields)
    ]


def load_rows(conn: psycopg.Connection[Any], chunks: list[PGresult]) -> list[tuple[Any, ...]]:
    """The fetched rows as Python values, through the connection's loaders (no I/O)."""
    rows: list[tuple[Any, ...]] = []
    transformer = Transformer(conn)
    for chunk in chunks:
        transformer.set_pgresult(chunk)
        rows.extend(transformer.load_rows(0, chunk.ntuples, tuple))
    return rows


def json_rows(rows: list[tuple[Any, ...]], columns: tuple[Column, ...], *, max_bytes: int) -> list[list[Any]]:
    """JSON-ready rows, or ResultTooLargeError past the byte cap.

    Limits: at most `max_rows` rows arrive here (already in memory); their compact ASCII JSON
    plus the column list must fit `max_bytes` (`MCP_SQL_MAX_RESULT_BYTES`).
    """
    out = [[to_json_value(value) for value in row] for row in rows]
    # A cheap lower bound first (string lengths): a huge result is refused before it is
    # serialised, so the one exact json.dumps below stays within a few times the cap.
    floor = sum(len(value) for row in out for value in row if isinstance(value, str))
    if floor <= max_bytes:
        size = json_size([{"name": c.name, "type": c.type} for c in columns]) + json_size(out)
    if floor > max_bytes or size + 64 > max_bytes:
        raise too_large(max_bytes)
    return out
