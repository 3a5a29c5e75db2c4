"""The sanitizer's refusals, exactly: each input, under given limits, and the problem it becomes
(detail, `invalid_params`, metadata). A caller (or a model) fixes its arguments from these words."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.protocol.sanitize import sanitize_arguments

KEY_RULE = "is not an identifier (letters, digits and _, not starting with a digit, at most 64 characters)."


def _char(name: str, what: str) -> str:
    return f"The argument {name!r} contains {what}, which is not allowed in any argument."


# (arguments, max_depth, max_items, detail, invalid_params)
REFUSALS: list[tuple[Any, int, int, str, tuple[str, ...]]] = [
    ([], 8, 100, "The arguments must be a JSON object.", ()),
    ("{}", 8, 100, "The arguments must be a JSON object.", ()),
    (None, 8, 100, "The arguments must be a JSON object.", ()),
    # keys
    ({"1a": 1}, 8, 100, f"The argument key '1a' {KEY_RULE}", ()),
    ({"ok": 1, "a-b": 2}, 8, 100, f"The argument key 'a-b' {KEY_RULE}", ()),
    ({"outer": {"bad key": 1}}, 8, 100, f"The argument key 'bad key' {KEY_RULE}", ("outer",)),
    ({"o": {"p": {"": 1}}}, 8, 100, f"The argument key '' {KEY_RULE}", ("o",)),
    ({"o": {"p": {"q": {"": 1}}}}, 8, 100, f"The argument key '' {KEY_RULE}", ("o",)),
    # repr escapes the bidi control: the detail never carries it back
    ({"o": [{"k\u202e": 1}]}, 8, 100, f"The argument key 'k\\u202e' {KEY_RULE}", ("o",)),
    ({"x" * 65: 1}, 8, 100, f"The argument key '{'x' * 65}' {KEY_RULE}", ()),
    ({"x" * 100: 1}, 8, 100, f"The argument key '{'x' * 78}… {KEY_RULE}", ()),
    # depth: the arguments object itself is level 1
    ({}, 0, 100, "The arguments nest deeper than 0 levels.", ()),
    ({"a": 1}, 0, 100, "The arguments nest deeper than 0 levels.", ()),
    ({"a": {"b": 1}}, 1, 100, "The arguments nest deeper than 1 levels.", ("a",)),
    ({"a": [1]}, 1, 100, "The arguments nest deeper than 1 levels.", ("a",)),
    ({"a": {"b": {"c": 1}}}, 2, 100, "The arguments nest deeper than 2 levels.", ("a",)),
    ({"a": [[1]]}, 2, 100, "The arguments nest deeper than 2 levels.", ("a",)),
    ({"a": {"b": [{"c": 1}]}}, 3, 100, "The arguments nest deeper than 3 levels.", ("a",)),
    ({"a": {"b": {"c": {"d": 1}}}}, 3, 100, "The arguments nest deeper than 3 levels.", ("a",)),
    # items: every key, list element and scalar below the root
    ({"a": 1, "b": 2, "c": 3, "d": 4}, 8, 3, "The arguments hold more than 3 items in total.", ()),
    ({"k": [1, 2, 3]}, 8, 3, "The arguments hold more than 3 items in total.", ("k",)),
    ({"k": {"a": 1, "b": 2, "c": 3}}, 8, 3, "The arguments hold more than 3 items in total.", ("k",)),
    ({"k": 1}, 8, 0, "The arguments hold more than 0 items in total.", ()),
    # characters, named by kind and code point, against the top-level argument
    ({"s": "a\x00"}, 8, 100, _char("s", "a control character (U+0000)"), ("s",)),
    ({"s": "\x08"}, 8, 100, _char("s", "a control character (U+0008)"), ("s",)),
    ({"s": "\x0b"}, 8, 100, _char("s", "a control character (U+000B)"), ("s",)),
    ({"s": "\x1f"}, 8, 100, _char("s", "a control character (U+001F)"), ("s",)),
    ({"s": "\x7f"}, 8, 100, _char("s", "a control character (U+007F)"), ("s",)),
    ({"s": "\x9f"}, 8, 100, _char("s", "a control character (U+009F)"), ("s",)),
    ({"s": "\u061c"}, 8, 100, _char("s", "a bidirectional control character (U+061C)"), ("s",)),
    ({"s": "\u200e"}, 8, 100, _char("s", "a bidirectional control character (U+200E)"), ("s",)),
    ({"s": "\u200f"}, 8, 100, _char("s", "a bidirectional control character (U+200F)"), ("s",)),
    ({"s": "\u202a"}, 8, 100, _char("s", "a bidirectional control character (U+202A)"), ("s",)),
    ({"s": "\u202e"}, 8, 100, _char("s", "a bidirectional control character (U+202E)"), ("s",)),
    ({"s": "\u2066"}, 8, 100, _char("s", "a bidirectional control character (U+2066)"), ("s",)),
    ({"s": "\u2069"}, 8, 100, _char("s", "a bidirectional control character (U+2069)"), ("s",)),
    ({"s": "\ud800"}, 8, 100, _char("s", "a lone surrogate"), ("s",)),
    ({"s": "x\udfff"}, 8, 100, _char("s", "a lone surrogate"), ("s",)),
    (
        {"o": {"p": ["ok", "x\u202e"]}},
        8,
        100,
        _char("o", "a bidirectional control character (U+202E)"),
        ("o",),
    ),
    ({"o": ["\x00"]}, 8, 100, _char("o", "a control character (U+0000)"), ("o",)),
    ({"o": {"p": {"q": "\x00"}}}, 8, 100, _char("o", "a control character (U+0000)"), ("o",)),
]


@pytest.mark.parametrize(("arguments", "max_depth", "max_items", "detail", "invalid"), REFUSALS)
def test_each_refusal_has_its_exact_detail_and_parameters(
    arguments: Any, max_depth: int, max_items: int, detail: str, invalid: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        sanitize_arguments(arguments, max_depth=max_depth, max_items=max_items)
    problem = caught.value
    assert problem.detail == detail
    assert problem.invalid_params == invalid
    assert problem.metadata == {}
    assert problem.slug == "validation-error"


# (arguments, max_depth, max_items): each at a limit, or next to a refused character
ACCEPTED: list[tuple[dict[str, Any], int, int]] = [
    ({}, 1, 0),
    ({"a": 1}, 1, 1),
    ({"a": 1, "b": 2.5, "c": True, "d": None, "e": "text"}, 1, 5),
    ({"a": {"b": 1}}, 2, 2),
    ({"a": [1, 2]}, 2, 3),
    ({"a": [[1]]}, 3, 3),
    ({"a": {"b": {"c": [1]}}}, 4, 4),
    ({"k": [1, 2], "j": {"x": 1}}, 8, 5),
    ({"x" * 64: 1, "_": 2, "A9_z": 3}, 1, 3),
    (
        {"s": "tab\tnewline\n \xa0 \u061b \u061d \u200d \u2010 \u2029 \u202f \u2065 \u206a \ud7ff \ue000"},
        1,
        1,
    ),
    ({"o": {"p": ["tab\t", "nl\n", "é😀"]}}, 3, 5),
]


@pytest.mark.parametrize(("arguments", "max_depth", "max_items"), ACCEPTED)
def test_arguments_at_the_limits_and_next_to_refused_characters_pass(
    arguments: dict[str, Any], max_depth: int, max_items: int
) -> None:
    sanitize_arguments(arguments, max_depth=max_depth, max_items=max_items)
