"""The JSON rows of a result: which columns are converted, and the byte cap counted exactly."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql_engine.result import Column, json_rows

TEXT, INT4, INT4_ARRAY = 25, 23, 1007
COLUMNS = (Column("t", "text"), Column("n", "integer"))


def _size(columns: tuple[Column, ...], rows: list[list[Any]]) -> int:
    return len(compact_json([{"name": c.name, "type": c.type} for c in columns])) + len(compact_json(rows))


@pytest.mark.parametrize(
    ("encoding", "oids", "rows", "expected"),
    [
        # JSON-ready columns pass as they are.
        ("utf-8", [TEXT, INT4], [("abc", 1)], [["abc", 1]]),
        # A column of a type outside the trusted set is converted (here: an array of bytes values).
        ("utf-8", [INT4_ARRAY, INT4], [([b"\x01", 2.5], 1)], [[["\\x01", 2.5], 1]]),
        # On a SQL_ASCII database psycopg loads text as bytes: every column is converted.
        ("ascii", [TEXT, INT4], [(b"abc", 1)], [["\\x616263", 1]]),
        ("utf-8", [INT4_ARRAY, INT4], [([float("nan")], 1)], [[["NaN"], 1]]),
    ],
)
def test_only_untrusted_columns_are_converted(
    encoding: str, oids: list[int], rows: list[tuple[Any, ...]], expected: list[list[Any]]
) -> None:
    values, data = json_rows(rows, COLUMNS, oids, encoding=encoding, max_bytes=10_000)
    assert values == expected
    assert data == compact_json(expected).encode("ascii")


@pytest.mark.parametrize("text", ["plain ascii", "non-ascii: é ✓ 𝄞"])
def test_the_cap_counts_the_compact_ascii_json_exactly(text: str) -> None:
    rows = [(text, 7)] * 3
    needed = _size(COLUMNS, [[text, 7]] * 3) + 64
    values, data = json_rows(rows, COLUMNS, [TEXT, INT4], encoding="utf-8", max_bytes=needed)
    assert values == [[text, 7]] * 3
    assert data == compact_json(values).encode("ascii")  # the wire's bytes: ASCII, escaped
    with pytest.raises(ResultTooLargeError):
        json_rows(rows, COLUMNS, [TEXT, INT4], encoding="utf-8", max_bytes=needed - 1)
