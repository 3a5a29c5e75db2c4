"""A query result's shape: its columns (name, type name), its rows as JSON values, the byte cap.

The rows arrive as libpq results held in memory (`pipeline.run_pipeline`); here they become Python
values through the connection's loaders (convert.py), then JSON-ready rows whose compact JSON must
fit the result byte cap. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
import pydantic_core
from psycopg.adapt import Transformer
from psycopg.pq.abc import PGresult

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql_engine.convert import JSON_READY_OIDS, to_json_value

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
    rows_json: bytes  # `rows` as compact, ASCII-only JSON: written once, for the byte cap


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


def load_rows(conn: psycopg.Connection[Any], result: PGresult) -> list[tuple[Any, ...]]:
    """The fetched rows as Python values, through the connection's loaders (no I/O)."""
    transformer = Transformer(conn)
    transformer.set_pgresult(result)
    return transformer.load_rows(0, result.ntuples, tuple)


def json_rows(
    rows: list[tuple[Any, ...]],
    columns: tuple[Column, ...],
    oids: list[int],
    *,
    encoding: str,
    max_bytes: int,
) -> tuple[list[list[Any]], bytes]:
    """JSON-ready rows (`oids`: each column's type; `encoding`: the connection's) and their
    compact, ASCII-only JSON, or ResultTooLargeError past the byte cap.

    Only the columns of a type outside `JSON_READY_OIDS` go through `to_json_value`.
    Limits: at most `max_rows` rows arrive here, already in memory, and their wire form was at
    most four times the cap (the pipeline counted it while they arrived), so the one exact
    serialisation below stays within a few times the cap. Their JSON plus the column list must fit
    `max_bytes` (`MCP_SQL_MAX_RESULT_BYTES`).
    """
    out = [list(row) for row in rows]
    # On a SQL_ASCII database psycopg loads text as bytes: every column is converted there.
    ready = JSON_READY_OIDS if encoding != "ascii" else frozenset()
    for index, oid in enumerate(oids):
        if oid not in ready:
            for row in out:
                row[index] = to_json_value(row[index])
    data = _wire_json(out)
    if len(_wire_json([{"name": c.name, "type": c.type} for c in columns])) + len(data) + 64 > max_bytes:
        raise too_large(max_bytes)
    return out, data


def _wire_json(value: Any) -> bytes:
    """`value` as the wire carries it: pydantic's serializer (the result model's own), or, when
    that is not ASCII, the escaping encoder the wire then uses."""
    data = pydantic_core.to_json(value)
    return data if data.isascii() else compact_json(value).encode("ascii")
