"""The JSON rows of a result: which columns are converted, the byte cap counted exactly, and the
rows that fit returned (with room for the hint) when the next one would pass it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql.engine.result import HINT_BYTES, Column, json_rows

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
    values, data, cut = json_rows(
        rows, COLUMNS, oids, encoding=encoding, max_bytes=10_000, max_rows=10, more=False
    )
    assert values == expected
    assert not cut
    assert data == compact_json(expected).encode("ascii")


def _rows(rows: list[tuple[Any, ...]], max_bytes: int, *, more: bool = False) -> tuple[list[list[Any]], bool]:
    values, data, cut = json_rows(
        rows, COLUMNS, [TEXT, INT4], encoding="utf-8", max_bytes=max_bytes, max_rows=100, more=more
    )
    assert data == compact_json(values).encode("ascii")  # the wire's bytes: ASCII, escaped
    return values, cut


@pytest.mark.parametrize("text", ["plain ascii", "non-ascii: é ✓ 𝄞"])
def test_the_cap_counts_the_compact_ascii_json_exactly(text: str) -> None:
    rows = [(text, 7)] * 20
    needed = _size(COLUMNS, [[text, 7]] * 20) + 64
    # At the cap: every row, nothing cut.
    assert _rows(rows, needed) == ([[text, 7]] * 20, False)
    assert _rows(rows, needed + 1) == ([[text, 7]] * 20, False)
    # One byte under: the rows that fit, with room kept for the hint, and the cut said.
    values, cut = _rows(rows, needed - 1)
    assert cut
    assert 0 < len(values) < 20
    assert _size(COLUMNS, values) + 64 + HINT_BYTES <= needed - 1


def test_rows_stop_before_the_first_that_would_pass_the_cap_with_the_hints_room() -> None:
    row = ("x" * 100, 1)
    one = _size(COLUMNS, [list(row)]) - _size(COLUMNS, [])  # one row and its comma, roughly
    rows = [row] * 50
    cap = _size(COLUMNS, [list(row)] * 10) + 64 + HINT_BYTES
    values, cut = _rows(rows, cap)
    assert cut
    assert len(values) == 10  # exactly what fits with the hint's room
    values, cut = _rows(rows, cap - 1)
    assert (len(values), cut) == (9, True)
    assert one > 100


def test_rows_cut_by_max_rows_also_keep_room_for_the_hint() -> None:
    row = ("y" * 100, 2)
    rows = [row] * 10
    exact = _size(COLUMNS, [list(row)] * 10) + 64
    # Without more rows the ten fit exactly; with more (a hint to carry) some give way.
    assert _rows(rows, exact) == ([list(row)] * 10, False)
    values, cut = _rows(rows, exact, more=True)
    assert cut
    assert 0 < len(values) < 10
    assert _size(COLUMNS, values) + 64 + HINT_BYTES <= exact


def test_a_single_row_too_large_to_show_is_refused() -> None:
    rows = [("z" * 5_000, 1), ("small", 2)]
    with pytest.raises(ResultTooLargeError) as caught:
        _rows(rows, 2_000)
    assert "A row is larger" in caught.value.detail
    assert caught.value.metadata == {"max_result_bytes": 2_000}


def test_no_rows_is_an_empty_answer_not_a_refusal() -> None:
    assert _rows([], 1_024) == ([], False)
