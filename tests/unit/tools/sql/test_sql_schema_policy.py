"""`sql_schema`'s pure argument decisions: `object` as PostgreSQL reads a qualified name,
`name_like` patterns that end inside an escape, the paging cursor and the cut comment."""

from __future__ import annotations

import base64
import json

import pytest

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.tools.sql.engine.introspect.lookup import (
    MAX_CURSOR_CHARS,
    Lookup,
    cap_comment,
    decode_cursor,
    encode_cursor,
    lookup,
    split_object_name,
)


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


EVERYTHING = lookup(None, None, None)


@pytest.mark.parametrize(
    ("schema", "name"),
    [("docs", "pages"), ("My Schema", 'a "quoted", dotted.name'), ("ünïcode", "名前"), ("s", "=/+")],
)
def test_a_cursor_gives_back_the_object_it_was_made_after(schema: str, name: str) -> None:
    cursor = encode_cursor(EVERYTHING, schema, name)
    assert cursor.isascii()
    assert "=" not in cursor  # base64url without padding: nothing to escape in JSON or a URL
    assert decode_cursor(cursor, EVERYTHING) == (schema, name)


def test_the_longest_names_make_a_cursor_the_argument_accepts() -> None:
    longest = '"' * 63  # every byte escaped in the cursor's JSON
    assert len(encode_cursor(lookup("s" * 300, "%" * 300, None), longest, longest)) <= MAX_CURSOR_CHARS


def bad_cursors() -> list[str]:
    good = encode_cursor(EVERYTHING, "docs", "pages")
    raw = base64.urlsafe_b64decode(good + "=" * (-len(good) % 4))

    def b64(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()

    return [
        "!!!",  # not base64
        "a",  # base64 of nothing whole
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),  # not UTF-8
        base64.urlsafe_b64encode(b"not json").decode(),
        b64({"after": "docs.pages"}),  # not a list
        b64(["s1", "docs", "pages"]),  # too short
        b64(["s1", "docs", 7, json.loads(raw)[3]]),  # not strings
        b64(["s0", "docs", "pages", json.loads(raw)[3]]),  # another version
        b64(["s1", "", "pages", json.loads(raw)[3]]),  # an empty name
        b64(["s1", "docs", "pages", "0" * 16]),  # edited filters
        encode_cursor(lookup("docs", None, None), "docs", "pages"),  # another listing's
        encode_cursor(lookup(None, "p%", None), "docs", "pages"),
        encode_cursor(lookup(None, None, "docs.pages"), "docs", "pages"),
    ]


@pytest.mark.parametrize("cursor", bad_cursors())
def test_a_cursor_this_server_did_not_give_for_this_listing_is_a_validation_error(cursor: str) -> None:
    with pytest.raises(InvalidArgumentsError) as raised:
        decode_cursor(cursor, EVERYTHING)
    assert raised.value.invalid_params == ("cursor",)
    assert "start again without a cursor" in raised.value.detail


@pytest.mark.parametrize(
    ("text", "total", "expected"),
    [
        (None, None, None),
        ("short", 5, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("0123456789", 300_000, "0123456789… [cut: 300000 characters in all]"),
    ],
)
def test_a_comment_longer_than_the_limit_is_cut_and_marked(
    text: str | None, total: int | None, expected: str | None
) -> None:
    assert cap_comment(text, total, 10) == expected
