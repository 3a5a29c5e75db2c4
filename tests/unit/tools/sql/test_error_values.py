"""What a data or constraint error may show of a value: only what the caller's own text holds (issue 51).
The messages are PostgreSQL's own forms; the values are a hidden row's or the caller's literal."""

from __future__ import annotations

import pytest

from mcp_suite.tools.sql.engine.error_values import WITHHELD, withhold_values

HIDDEN = [
    # (message, caller's text, what the caller sees)
    (
        'invalid input syntax for type integer: "s3cret"',
        "SELECT x::int FROM v",
        f"invalid input syntax for type integer: {WITHHELD}",
    ),
    (
        'value "99999999999" is out of range for type integer',
        "SELECT x::int FROM v LIMIT 10",
        f"value {WITHHELD} is out of range for type integer",
    ),
    (
        'date/time field value out of range: "2020-13-45"',
        "SELECT d::date FROM v",
        f"date/time field value out of range: {WITHHELD}",
    ),
    # A value over several lines, and one holding a quotation mark: all of it, first mark to last.
    (
        'invalid input syntax for type json: "{\n  \\"k\\": 1"',
        "SELECT j::json FROM v",
        f"invalid input syntax for type json: {WITHHELD}",
    ),
    (
        'invalid input syntax for type integer: "a" b "c"',
        'SELECT "a", "c" FROM v',
        f"invalid input syntax for type integer: {WITHHELD}",
    ),
    # Bare values: a date of numbers, a code point, bytes of an encoding.
    (
        "date field value out of range: 2020-13-01",
        "SELECT make_date(y, m, d) FROM v",
        f"date field value out of range: {WITHHELD}",
    ),
    (
        "requested character too large for encoding: 1114112",
        "SELECT chr(n) FROM v",
        f"requested character too large for encoding: {WITHHELD}",
    ),
    (
        'invalid byte sequence for encoding "UTF8": 0xe2 0x82',
        "SELECT convert_from(b, 'UTF8') FROM v",
        f'invalid byte sequence for encoding "UTF8": {WITHHELD}',
    ),
    (
        'invalid byte sequence for encoding "UTF8": 0xe2 0x82',
        "SELECT convert_from(b, e) FROM v",
        f"invalid byte sequence for encoding {WITHHELD}: {WITHHELD}",
    ),
    # A translation's marks.
    (
        "ungültige Eingabesyntax für Typ integer: »s3cret«",
        "SELECT x::int FROM v",
        f"ungültige Eingabesyntax für Typ integer: {WITHHELD}",
    ),
    # Part of a longer word or number of the text is not the value.
    (
        'invalid input syntax for type integer: "abc"',
        "SELECT abcdef::int FROM v",
        f"invalid input syntax for type integer: {WITHHELD}",
    ),
    (
        'invalid input syntax for type integer: "1"',
        "SELECT x::int FROM v LIMIT 10",
        f"invalid input syntax for type integer: {WITHHELD}",
    ),
    (
        'invalid input syntax for type integer: ""',
        "SELECT x::int FROM v",
        f"invalid input syntax for type integer: {WITHHELD}",
    ),
]

KEPT = [
    ('invalid input syntax for type integer: "twelve"', "SELECT 'twelve'::int"),
    ('value "99999999999" is out of range for type integer', "SELECT 99999999999::int"),
    ('invalid input syntax for type integer: "it\'s"', "SELECT 'it''s'::int"),
    ('invalid input syntax for type integer: ""', "SELECT ''::int"),
    ('invalid input syntax for type integer: "-"', "SELECT '-'::int"),
    ('invalid input syntax for type integer: "a" b "c"', "SELECT 'a\" b \"c'::int"),
    ("date field value out of range: 2020-13-01", "SELECT make_date(2020, 13, 01) -- 2020-13-01"),
    ("integer out of range", "SELECT 2147483647 + 1"),
    ("division by zero", "SELECT 1/0"),
]


@pytest.mark.parametrize(("message", "text", "shown"), HIDDEN)
def test_a_value_the_callers_text_does_not_hold_is_withheld_and_the_rest_is_kept(
    message: str, text: str, shown: str
) -> None:
    assert withhold_values(message, text) == shown


@pytest.mark.parametrize(("message", "text"), KEPT)
def test_a_value_the_caller_wrote_stays_so_it_can_fix_its_literal(message: str, text: str) -> None:
    assert withhold_values(message, text) == message


def test_a_single_quotation_mark_quotes_nothing() -> None:
    assert withhold_values('unterminated "', "SELECT 1") == 'unterminated "'
