"""Pure parts of the PostgreSQL → JSON conversion (the loaders are tested against a real server in
tests/pg/test_sql_executor.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from psycopg import adapters as psycopg_adapters
from psycopg.abc import Loader
from psycopg.adapt import AdaptersMap
from psycopg.pq import Format

from mcp_suite.settings import MAX_JSON_DEPTH
from mcp_suite.tools.sql.engine import convert


def loader_for(oid: int) -> Loader:
    """The loader a connection gets for `oid` once `register_loaders` has run on its adapters."""
    adapters = AdaptersMap(psycopg_adapters)
    convert.register_loaders(adapters)
    loader_class = adapters.get_loader(oid, Format.TEXT)
    assert loader_class is not None
    return loader_class(oid)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (7, 7),
        ("x", "x"),
        (1.5, 1.5),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
        (b"\x00\xff", "\\x00ff"),
        ((1, "a", None), [1, "a", None]),
        ([(1, 2), (3, 4)], [[1, 2], [3, 4]]),
        ({"k": 1}, {"k": 1}),
    ],
)
def test_to_json_value_makes_anything_json(value: Any, expected: Any) -> None:
    assert convert.to_json_value(value) == expected


def test_to_json_value_falls_back_to_text_for_unknown_objects() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert convert.to_json_value(Odd()) == "odd"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01 10:00:00+00", "2024-01-01T10:00:00+00:00"),
        ("2024-01-01 10:00:00.5+05:30", "2024-01-01T10:00:00.5+05:30"),
        ("2024-01-01 10:00:00-08", "2024-01-01T10:00:00-08:00"),
        ("infinity", "infinity"),
        ("0044-03-15 12:00:00+00 BC", "0044-03-15 12:00:00+00 BC"),
    ],
)
def test_timestamptz_text_becomes_iso_8601(text: str, expected: str) -> None:
    loader = loader_for(1184)
    assert loader.load(text.encode()) == expected


def test_json_deeper_than_the_limit_is_kept_as_text() -> None:
    loader = loader_for(3802)
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loader.load(deep.encode()) == deep
    assert isinstance(loader.load(ok.encode()), list)
    very_deep = "[" * 100_000 + "]" * 100_000  # beyond Python's recursion limit: no crash
    assert loader.load(very_deep.encode()) == very_deep


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_json_loader_round_trips_what_postgres_would_store(value: Any) -> None:
    text = json.dumps(value)
    loaded = loader_for(114).load(text.encode())
    assert json.dumps(loaded, allow_nan=False)  # always valid JSON out
    if convert.depth_within(value, MAX_JSON_DEPTH):
        assert loaded == value


@given(json_values)
def test_json_size_is_the_length_of_compact_ascii_json(value: Any) -> None:
    expected = len(json.dumps(value, ensure_ascii=True, separators=(",", ":")))
    assert convert.json_size(value) == expected
