"""The message guard (docs/wire.md): strict UTF-8 and JSON, envelope rules, the right code for each."""

from __future__ import annotations

import json

import pytest

from mcp_suite.problems import INVALID_REQUEST, PARSE_ERROR
from mcp_suite.protocol.jsonrpc import (
    ClientResponse,
    JsonRpcError,
    Notification,
    Request,
    decode_message,
    encode_error,
    encode_result,
    encode_tool_success,
    sniff_id,
)


def _error(frame: bytes) -> JsonRpcError:
    with pytest.raises(JsonRpcError) as info:
        decode_message(frame)
    return info.value


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"x"}', PARSE_ERROR),  # duplicate key
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"a":2}}', PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}', PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}', PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"p\xff"}', PARSE_ERROR),  # invalid UTF-8
        (b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}', PARSE_ERROR),  # encoded surrogate
        (b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', PARSE_ERROR),  # BOM
        (b"{not json}", PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"} {}', PARSE_ERROR),  # trailing data
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', INVALID_REQUEST),  # batch
        (b"[]", INVALID_REQUEST),
        (b'"ping"', INVALID_REQUEST),
        (b"42", INVALID_REQUEST),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":2.0,"id":1,"method":"ping"}', INVALID_REQUEST),
        (b'{"id":1,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":""}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":null}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}', INVALID_REQUEST),
    ],
)
def test_guard_rejects_with_the_right_code(frame: bytes, code: int) -> None:
    assert _error(frame).jsonrpc_code == code


def test_guard_rejects_nesting_past_the_limit_without_recursion_error() -> None:
    ok = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * 62 + b"]" * 62 + b"}}"
    assert isinstance(decode_message(ok), Request)
    deep = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * 63 + b"]" * 63 + b"}}"
    assert _error(deep).jsonrpc_code == PARSE_ERROR
    very_deep = b"[" * 200_000 + b"]" * 200_000
    assert _error(very_deep).jsonrpc_code == PARSE_ERROR


def test_guard_counts_nesting_not_brackets() -> None:
    # Many more brackets than the limit, side by side: shallow, so the message is accepted.
    siblings = b",".join([b"[]"] * 100)
    wide = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[' + siblings + b"]}}"
    assert decode_message(wide) == Request(1, "ping", {"a": [[]] * 100})
    # Brackets inside a string are text: a bare string is refused for not being an object.
    text = b'"' + b"[" * 100 + b'"'
    error = _error(text)
    assert error.jsonrpc_code == INVALID_REQUEST
    assert "must be a JSON object" in str(error)


def test_guard_nesting_limit_is_a_parameter() -> None:
    frame = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[[]]}}'  # four levels
    assert decode_message(frame, max_depth=4) == Request(1, "ping", {"a": [[]]})
    with pytest.raises(JsonRpcError, match="deeper than 3 levels") as info:
        decode_message(frame, max_depth=3)
    assert info.value.jsonrpc_code == PARSE_ERROR


def test_guard_rejects_huge_integers_as_parse_errors() -> None:
    frame = b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}'
    assert _error(frame).jsonrpc_code == PARSE_ERROR


def test_error_carries_the_id_when_it_was_found() -> None:
    assert _error(b'{"jsonrpc":"1.0","id":"abc","method":"ping"}').request_id == "abc"
    assert _error(b'{"jsonrpc":"2.0","id":7,"method":""}').request_id == 7
    assert _error(b'{"jsonrpc":"2.0","id":true,"method":"x"}').request_id is None
    assert _error(b"{bad").request_id is None


def test_guard_accepts_requests_notifications_and_reads_client_responses() -> None:
    assert decode_message(b'{"jsonrpc":"2.0","id":"a","method":"ping"}') == Request("a", "ping", {})
    assert decode_message(b'{"jsonrpc":"2.0","id":-3,"method":"x","params":{"k":1}}') == Request(
        -3, "x", {"k": 1}
    )
    assert decode_message(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Notification(
        "notifications/initialized", {}
    )
    assert decode_message(b'{"jsonrpc":"2.0","id":1,"result":{}}') == ClientResponse(1, {}, None)
    assert decode_message(b'{"jsonrpc":"2.0","id":"a","error":{"code":1}}') == ClientResponse(
        "a", None, {"code": 1}
    )
    assert decode_message(b'{"jsonrpc":"2.0","id":1.5,"result":7}') == ClientResponse(None, None, None)


def test_encoded_responses_are_one_ascii_line() -> None:
    line = encode_result(1, {"text": "caf\u00e9 \u202e \U0001f600"})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert line.isascii()
    assert json.loads(line)["result"]["text"] == "caf\u00e9 \u202e \U0001f600"
    problem = _error(b"{bad")
    line = encode_error(None, problem)
    assert json.loads(line) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": PARSE_ERROR,
            "message": problem.title,
            "data": {
                "type": "urn:mcp-suite:problem:invalid-request",
                "title": problem.title,
                "status": 400,
                "detail": problem.detail,
                "code": "MCP_INVALID_REQUEST",
                "invalid_params": [],
                "metadata": {},
            },
        },
    }


@pytest.mark.parametrize(
    ("head", "found"),
    [
        (b'{"id":7,', 7),
        (b'  {"jsonrpc":"2.0","id":"a"', "a"),
        (b'{"a":[1,{"b":2}],"id":3,', 3),
        (b'{"a":"x\\"y}","id":5,', 5),  # a quote and a brace inside a string are not structure
        (b'{"id":7', None),  # the number may go on past the head: not read
        (b"[1]", None),  # not an object
        (b"{id:1}", None),  # a key that is not a string
        (b'{"unterminated', None),  # a key that never ends
        (b'{"id" 1}', None),  # no colon after the key
        (b'{"a":1}', None),  # no id at all
        (b'{"a":1 "id":2}', None),  # no comma between members
        (b'{"a":]', None),  # a value that closes what it never opened
        (b'{"a":[1,2', None),  # a value that never ends
        (b'{"id":' + b"1" * 300 + b",", None),  # longer than any id worth matching
        (b'{"id":tru,', None),  # not JSON
        (b'{"id":null,', None),  # not a valid id
        (b'{"id":1.5,', None),
        (b'{"id":true,', None),
    ],
)
def test_the_id_of_an_oversized_line_is_read_from_its_head_only_when_it_is_certain(
    head: bytes, found: object
) -> None:
    assert sniff_id(head) == found


def test_a_success_frame_whose_json_holds_a_raw_del_quotes_it_as_the_general_encoder_does() -> None:
    structured = b'{"t":"a\x7fb"}'
    frame = json.loads(encode_tool_success(1, structured))
    assert frame["result"]["content"][0]["text"] == structured.decode("ascii")
    assert frame["result"]["structuredContent"] == {"t": "a\x7fb"}
