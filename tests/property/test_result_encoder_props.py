"""Properties of the rows' encoder (`result.plan_json`, `result.json_rows`; docs/wire.md).

For every value the result path can hold (what the loaders and `to_json_value` return: None,
booleans, integers of any size (jsonb keeps integers past 64 bits), finite floats, text of any
character but a lone surrogate, lists, objects with text keys), the rows' JSON is one ASCII line
that strict decoding turns back into the rows, and it is the standard library's compact ASCII JSON
byte for byte, but for two spellings JSON allows: a float's (`1e-7` for `1e-07`) and a raw DEL
(`quote_json_text` escapes it in the text copy). A NaN or an infinity, which the loaders never
return, is written as the string `to_json_value` makes of it, never as a bare `NaN`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from mcp_suite.tools.sql.engine.convert import to_json_value
from mcp_suite.tools.sql.engine.result import Column, json_rows, plan_json

# Every character but the surrogates (the loaders never return one: PostgreSQL text is UTF-8,
# and a json value with an escaped lone surrogate stays text), with the ones encoders treat apart.
_chars = st.characters(exclude_categories=["Cs"])
texts = st.text(_chars, max_size=30) | st.sampled_from(
    ["", '"', "\\", "\x00\x1f\n\r\t\b\f", "\u2028\u2029", "\U0001f600", "é", "NaN", "-Infinity", "</script>"]
)
integers = st.integers() | st.sampled_from([2**63 - 1, -(2**63), 2**63, 2**64, -(2**64) - 1, 10**40])
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1e-7, 1e16, 1e22, -0.0, 5e-324])


def _values(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
        max_leaves=12,
    )


plain_leaves = st.none() | st.booleans() | integers | texts.filter(lambda text: "\x7f" not in text)
rows_of = st.lists  # a row is a list of column values, a result a list of rows


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def _strict(data: bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(data, parse_constant=refuse)


@given(rows_of(rows_of(_values(plain_leaves), max_size=7), max_size=10))
def test_rows_without_floats_or_del_are_the_standard_librarys_bytes(rows: list[list[Any]]) -> None:
    assert plan_json(rows) == _compact(rows)


@given(rows_of(rows_of(_values(plain_leaves | floats | texts), max_size=7), max_size=10))
def test_any_rows_are_one_ascii_line_that_decodes_to_the_rows(rows: list[list[Any]]) -> None:
    data = plan_json(rows)
    assert data.isascii()
    assert b"\n" not in data
    assert b"\r" not in data
    assert _strict(data) == rows
    # Where the bytes differ from the standard library's, only a float's spelling or DEL does.
    if data != _compact(rows):
        assert data.replace(b"\x7f", b"\\u007f") == _compact(rows) or _holds_float(rows)


def _holds_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list):
        return any(_holds_float(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    return False


@given(
    rows_of(rows_of(_values(plain_leaves), max_size=7), max_size=10),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(min_value=0, max_value=3),
    texts,
)
@example(rows=[[{"\u00e9": [1.5, None]}]], constant=-math.inf, depth=2, text="\u00e9")  # the escaping path
def test_a_nan_or_an_infinity_is_written_as_to_json_value_writes_it_never_bare(
    rows: list[list[Any]], constant: float, depth: int, text: str
) -> None:
    value: Any = constant
    mapped: Any = to_json_value(constant)  # "NaN", "Infinity" or "-Infinity"
    for _ in range(depth):
        value, mapped = [value], [mapped]
    data = plan_json([*rows, [text, value]])
    assert data == plan_json([*rows, [text, mapped]])
    assert _strict(data) == [*rows, [text, mapped]]
    _, data, _ = json_rows(
        [*map(tuple, rows), (text, value)],
        (Column("a", "text"), Column("b", "json")),
        [25, 114],  # text and json: both trusted to load as JSON values, neither converted
        encoding="utf-8",
        max_bytes=1_000_000,
        max_rows=100,
        more=False,
    )
    assert _strict(data) == [*rows, [text, mapped]]


@given(rows_of(st.tuples(texts, _values(plain_leaves | floats)), max_size=20))
def test_json_rows_writes_what_the_encoder_writes_and_counts_it(rows: list[tuple[str, Any]]) -> None:
    values, data, cut = json_rows(
        rows,
        (Column("a", "text"), Column("b", "json")),
        [25, 114],
        encoding="utf-8",
        max_bytes=1_000_000,
        max_rows=100,
        more=False,
    )
    assert not cut
    assert values == [list(row) for row in rows]
    assert data.isascii()
    assert _strict(data) == values
