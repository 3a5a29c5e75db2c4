"""Properties of the guard and the sanitizer: arbitrary input only ever yields a value or a problem."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.protocol.jsonrpc import JsonRpcError, Message, decode_message
from mcp_suite.protocol.sanitize import is_flat_and_clean, sanitize_arguments, walk_arguments
from tests.support.properties import security_property

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@security_property
@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_a_message_or_a_jsonrpc_error(data: bytes) -> None:
    try:
        result: Message = decode_message(data)
    except JsonRpcError as exc:
        assert exc.jsonrpc_code in (-32700, -32600)
    else:
        assert result is not None


@security_property
@given(json_values)
def test_arbitrary_json_gives_a_message_or_a_jsonrpc_error(value: Any) -> None:
    frame = json.dumps(value).encode()
    try:
        decode_message(frame)
    except JsonRpcError as exc:
        assert exc.jsonrpc_code in (-32700, -32600)


@security_property
@given(json_values)
def test_sanitizer_accepts_or_raises_only_validation_error(value: Any) -> None:
    try:
        sanitize_arguments({"v": value}, max_depth=8, max_items=1_000)
    except InvalidArgumentsError as exc:
        assert exc.slug == "validation-error"


# Keys and strings drawn to hit the sanitizer's rules: valid identifiers, near misses, and strings
# with the control, bidi and surrogate characters it refuses.
_keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,63}", fullmatch=True) | st.text(max_size=70)
_strings = st.text(max_size=20) | st.sampled_from(["\x00", "a\x1fb", "\u202e", "\ud800", "ok\tok\n", "\x85"])
_flat_values = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _strings


@security_property
@given(
    st.dictionaries(_keys, _flat_values | st.lists(_flat_values, max_size=3), max_size=6),
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=0, max_value=8),
)
def test_the_flat_fast_path_accepts_exactly_what_the_full_walk_accepts(
    arguments: dict[str, Any], max_depth: int, max_items: int
) -> None:
    def outcome(check: Any) -> str:
        try:
            check(arguments, max_depth=max_depth, max_items=max_items)
        except InvalidArgumentsError as exc:
            return f"refused: {exc.detail}"
        return "accepted"

    assert outcome(sanitize_arguments) == outcome(walk_arguments)
    if is_flat_and_clean(arguments) and len(arguments) <= max_items:
        assert outcome(walk_arguments) == "accepted"
