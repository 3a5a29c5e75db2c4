"""`sql_schema`'s pure argument decisions: `object` as PostgreSQL reads a qualified name, and
`name_like` patterns that end inside an escape."""

from __future__ import annotations

import pytest

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.tools.sql_schema.policy import Lookup, lookup, split_object_name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("docs.pages", ("docs", "pages")),
        ("Docs.PAGES", ("docs", "pages")),
        (" docs . pages ", ("docs", "pages")),
        ('"docs"."pages"', ("docs", "pages")),
        ('"My Schema"."My.Table"', ("My Schema", "My.Table")),
        ('"a""b".c', ('a"b', "c")),
        ("ÄB.c", ("Äb", "c")),  # only A-Z fold, as in a UTF-8 database
        ("docs.pa%", ("docs", "pa%")),
        ("x.'; DROP TABLE t; --", ("x", "'; drop table t; --")),
    ],
)
def test_object_names_are_read_as_postgresql_reads_them(text: str, expected: tuple[str, str]) -> None:
    assert split_object_name(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("pages", "one schema and one name"),
        ("a.b.c", "one schema and one name"),
        ('"a.b', "unterminated"),
        ("docs.", "empty"),
        ('."x"', "empty"),
        ('"".x', "empty"),
    ],
)
def test_malformed_object_names_are_refused(text: str, why: str) -> None:
    with pytest.raises(InvalidArgumentsError) as info:
        split_object_name(text)
    assert why in info.value.detail
    assert list(info.value.invalid_params) == ["object"]


@pytest.mark.parametrize("pattern", ["pages\\", "a\\\\\\", "\\"])
def test_a_pattern_ending_in_a_lone_escape_is_refused(pattern: str) -> None:
    with pytest.raises(InvalidArgumentsError) as info:
        lookup(None, pattern, None)
    assert list(info.value.invalid_params) == ["name_like"]


def test_lookup_passes_the_strings_through_as_data() -> None:
    assert lookup("s'", "a\\\\%_", '"X".y') == Lookup(
        schema="s'", name_like="a\\\\%_", object_schema="X", object_name="y"
    )
