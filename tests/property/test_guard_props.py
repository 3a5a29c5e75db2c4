"""Properties of the guard and the sanitizer: arbitrary input only ever yields a value or a problem."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.protocol.jsonrpc import JsonRpcError, Message, decode_message
from mcp_suite.protocol.sanitize import sanitize_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_a_message_or_a_jsonrpc_error(data: bytes) -> None:
    try:
        result: Message = decode_message(data)
    except JsonRpcError as exc:
        assert exc.jsonrpc_code in (-32700, -32600)
    else:
        assert result is not None


@given(json_values)
def test_arbitrary_json_gives_a_message_or_a_jsonrpc_error(value: Any) -> None:
    frame = json.dumps(value).encode()
    try:
        decode_message(frame)
    except JsonRpcError as exc:
        assert exc.jsonrpc_code in (-32700, -32600)


@given(json_values)
def test_sanitizer_accepts_or_raises_only_validation_error(value: Any) -> None:
    try:
        sanitize_arguments({"v": value}, max_depth=8, max_items=1_000)
    except InvalidArgumentsError as exc:
        assert exc.slug == "validation-error"
