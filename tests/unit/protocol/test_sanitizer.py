"""The structural sanitizer (docs/wire.md)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.protocol.sanitize import sanitize_arguments


def _check(arguments: Any) -> None:
    sanitize_arguments(arguments, max_depth=8, max_items=1_000)


def _refused(arguments: Any) -> InvalidArgumentsError:
    with pytest.raises(InvalidArgumentsError) as info:
        _check(arguments)
    return info.value


def _nest(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        node = {"k": node}
    return node


def test_sanitizer_accepts_ordinary_arguments() -> None:
    _check({})
    _check({"sql": "SELECT 1\n\tFROM t -- café ✓ 😀", "max_rows": 5, "flag": True, "x": None})
    _check({"a_b": [1, 2, {"c": "d"}], "_x9": 1.5})
    _check(_nest(8))
    _check({"k": list(range(999))})


@pytest.mark.parametrize(
    "key",
    ["", "1abc", "a-b", "a b", "é", "a.b", "x" * 65, "$ref", "__proto__\x00", "a\u202e"],
)
def test_sanitizer_rejects_keys_that_are_not_identifiers(key: str) -> None:
    problem = _refused({key: 1})
    assert problem.slug == "validation-error"


def test_sanitizer_accepts_a_64_character_key() -> None:
    _check({"k" * 64: 1})


def test_sanitizer_rejects_nested_bad_key_and_names_the_root() -> None:
    assert _refused({"outer": {"bad key": 1}}).invalid_params == ("outer",)


def test_sanitizer_rejects_depth_over_8() -> None:
    assert "deeper than 8" in _refused(_nest(9)).detail
    assert _refused({"a": [[[[[[[[1]]]]]]]]}).slug == "validation-error"
    _check({"a": [[[[[[[1]]]]]]]})


def test_sanitizer_handles_deep_nesting_iteratively() -> None:
    node: Any = 1
    for _ in range(100_000):
        node = [node]
    _refused({"a": node})


def test_sanitizer_rejects_more_than_1000_items() -> None:
    _refused({"k": list(range(1_000))})  # 1 key + 1,000 elements
    _refused({f"k{i}": i for i in range(1_001)})
    _refused({"a": [[0] * 600, [0] * 600]})


@pytest.mark.parametrize(
    "char",
    [
        "\x00",
        "\x01",
        "\x08",
        "\x0b",
        "\x0c",
        "\r",
        "\x1b",
        "\x1f",
        "\x7f",
        "\x80",
        "\x9f",
        "\u202a",
        "\u202b",
        "\u202c",
        "\u202d",
        "\u202e",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\u200e",
        "\u200f",
        "\u061c",
        chr(0xD800),
        chr(0xDFFF),
    ],
)
def test_sanitizer_rejects_control_bidi_and_surrogate_characters(char: str) -> None:
    problem = _refused({"text": f"abc{char}def"})
    assert problem.invalid_params == ("text",)
    _refused({"list": ["ok", f"x{char}"]})
    _refused({"deep": {"deeper": f"{char}"}})


def test_sanitizer_allows_tab_and_newline() -> None:
    _check({"text": "a\tb\nc"})


def test_sanitizer_rejects_non_object_arguments() -> None:
    _refused([1, 2])
    _refused("x")
