"""The message guard's refusals, exactly: each line, the JSON-RPC code and the detail the client
reads in `error.data.detail`; where the guard looks for JSON and where it stops; the error frame;
and what the id sniffer reads from the head of an oversized line."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii  # the escaper json.dumps uses

import pytest

from mcp_suite.problems import (
    INVALID_REQUEST,
    PARSE_ERROR,
    MissingClientCapabilityError,
    UnsupportedVersionError,
)
from mcp_suite.protocol.jsonrpc import (
    JsonRpcError,
    Request,
    decode_message,
    encode_error,
    encode_tool_success,
    sniff_id,
    sniff_tail_id,
)

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
INVALID_JSON = "The message is not valid JSON."
TRAILING = "The message has data after the JSON value."

# (line, JSON-RPC code, detail)
REFUSALS: list[tuple[bytes, int, str]] = [
    (b"\xef\xbb\xbf" + PING, PARSE_ERROR, "The message starts with a byte order mark; send plain UTF-8."),
    (b'{"jsonrpc":"2.0","id":1,"method":"p\xff"}', PARSE_ERROR, "The message is not valid UTF-8."),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","id":2}',
        PARSE_ERROR,
        "The message has an object with a duplicate key.",
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}',
        PARSE_ERROR,
        "NaN and Infinity are not JSON; the message uses one.",
    ),
    (b"[" * 100_000 + b"]" * 100_000, PARSE_ERROR, "The message nests deeper than 64 levels."),
    (b"{not json}", PARSE_ERROR, INVALID_JSON),
    (PING + b" {}", PARSE_ERROR, TRAILING),
    (b"[" + PING + b"]", INVALID_REQUEST, "Batches are not supported; send one JSON-RPC object per line."),
    (b'"ping"', INVALID_REQUEST, "A JSON-RPC message must be a JSON object."),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', INVALID_REQUEST, '"jsonrpc" must be exactly "2.0".'),
    (b'{"jsonrpc":"2.0","id":1}', INVALID_REQUEST, 'The message has no "method".'),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}',
        INVALID_REQUEST,
        'A message cannot carry "method" together with "result" or "error".',
    ),
    (b'{"jsonrpc":"2.0","id":1,"method":""}', INVALID_REQUEST, '"method" must be a non-empty string.'),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}',
        INVALID_REQUEST,
        '"params" must be an object when present.',
    ),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, '"id" must be a string or an integer.'),
]


@pytest.mark.parametrize(("line", "code", "detail"), REFUSALS)
def test_each_refusal_has_its_code_and_its_exact_detail(line: bytes, code: int, detail: str) -> None:
    with pytest.raises(JsonRpcError) as info:
        decode_message(line)
    assert (info.value.jsonrpc_code, info.value.detail) == (code, detail)
    assert str(info.value) == detail


@pytest.mark.parametrize("lead", [b" ", b"\t", b"\r", b"  \t \r "])
def test_json_whitespace_before_the_message_is_skipped(lead: bytes) -> None:
    assert decode_message(lead + PING) == Request(1, "ping", {})


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        (b"X" + PING, INVALID_JSON),
        (b"\x0c" + PING, INVALID_JSON),  # a form feed is Python whitespace, not JSON whitespace
        (b"\xc2\xa0" + PING, INVALID_JSON),  # nor is a no-break space
        (PING + b"X", TRAILING),
        (PING + b"\x0b", TRAILING),
        (PING + b"\xe2\x80\xa8", TRAILING),  # U+2028, a line separator to Python
    ],
)
def test_anything_but_json_whitespace_around_the_message_is_refused(line: bytes, detail: str) -> None:
    with pytest.raises(JsonRpcError) as info:
        decode_message(line)
    assert (info.value.jsonrpc_code, info.value.detail) == (PARSE_ERROR, detail)


def test_nesting_is_measured_when_there_are_more_brackets_than_levels() -> None:
    # Five brackets, four levels (the message, "params", "a" and the list in it): the count alone
    # does not decide, the walk does, and it allows exactly max_depth levels.
    frame = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[[]],"b":[]}}'
    assert decode_message(frame, max_depth=4) == Request(1, "ping", {"a": [[]], "b": []})
    with pytest.raises(JsonRpcError, match="deeper than 3 levels") as info:
        decode_message(frame, max_depth=3)
    assert info.value.jsonrpc_code == PARSE_ERROR


def test_the_error_frame_leaves_out_an_unknown_id_only_when_asked_and_adds_the_extra_members() -> None:
    problem = UnsupportedVersionError("The server does not speak 1999-01-01.")
    extra = {"supported": ["2025-06-18"], "requested": "1999-01-01"}
    line = encode_error(None, problem, omit_unknown_id=True, data_extra=extra)
    assert line.endswith(b"\n")
    frame = json.loads(line)
    assert sorted(frame) == ["error", "jsonrpc"]
    assert frame["jsonrpc"] == "2.0"
    error = frame["error"]
    assert (error["code"], error["message"], error["data"]["detail"]) == (
        -32022,  # the problem class's own code
        problem.title,
        problem.detail,
    )
    assert error["data"]["supported"] == ["2025-06-18"]
    assert error["data"]["requested"] == "1999-01-01"
    known = json.loads(encode_error(9, problem, omit_unknown_id=True))
    assert known["id"] == 9
    assert "supported" not in known["error"]["data"]


def test_the_text_block_of_a_success_frame_with_a_raw_del_is_the_general_escapers_string() -> None:
    structured = b'{"t":"a\x7fb"}'
    frame = encode_tool_success(1, structured)
    assert encode_basestring_ascii(structured.decode("ascii")).encode("ascii") in frame
    assert frame.count(b"\x7f") == 1  # only structuredContent, verbatim, keeps the raw byte


ID_OF_256_BYTES = '"' + "i" * 254 + '"'


@pytest.mark.parametrize(
    ("head", "found"),
    [
        (b'{ "id" : 7 ,', 7),  # JSON whitespace between the tokens
        (b'{\t"a" :\r1 ,\n"id":8,', 8),
        (b'{"":1,"id":2,', 2),  # an empty key
        (b'{"a\\\\":1,"id":4,', 4),  # a key that ends in an escaped backslash
        (b'{"a":"","id":5,', 5),  # an empty string value
        (b'{"params":{"text":"' + b"t" * 600 + b'"},"id":6,', 6),  # the id after a long member
        (b'{"id":' + ID_OF_256_BYTES.encode() + b",", "i" * 254),  # the longest id read
        (b'{"id":"' + b"i" * 255 + b'",', None),  # one byte longer
        # members are skipped by their brackets and quotes only, never parsed
        (b'{"a":[X,1],"id":1,', 1),
        (b'{"a":X,"id":2,', 2),
        (b"\x0c" + b'{"id":1,', None),  # a form feed is not JSON whitespace
        (b"{", None),  # the head ends where a key should start
        (b"{ ", None),
        (b'{"a":1,', None),
        (b'{x":1,"id":5,', None),  # a key must start with a quote
        (b'{"id"', None),  # the head ends where the colon should be
        (b'{"id" ', None),
        (b'{"a" 1,"id":2,', None),  # a key without its colon
        (b'{"a":1', None),  # the head ends where a comma should be
        (b'{"a":1 ', None),
        (b'{"a":1;"id":2,', None),  # members not separated by a comma
        (b'{"a":1}"id":2,', None),  # the object closed before any id
        (b'{"a":["x', None),  # a string cut off inside a value
    ],
)
def test_the_sniffer_reads_an_id_only_from_a_head_that_holds_it_whole(head: bytes, found: object) -> None:
    assert sniff_id(head) == found


@pytest.mark.parametrize(
    ("tail", "found"),
    [
        (b'xx"},"id":7}', 7),  # the TypeScript SDKs' order: id last
        (b'xx"},"id":-3}\r\n', -3),
        (b'xx"} , "id" : "a\\"b" } ', 'a"b'),
        (b'{"id":"only"}', "only"),
        (b'xx"},"id":' + ID_OF_256_BYTES.encode() + b"}", "i" * 254),  # the longest id read
        (b'xx"},"id":"' + b"i" * 255 + b'"}', None),  # one byte longer
        (b'xx"},"id":7}}', None),  # an `id` of a nested object: the top level closes after it
        (b'xx"}],"id":7]', None),
        (b'xx"},"id":7,"jsonrpc":"2.0"}', None),  # not the last member: the head's business
        (b'xx\\"id\\":7}', None),  # an escaped quote: inside a string
        (b'xx"},"id":1.5}', None),  # not an integer
        (b'xx"},"id":007}', None),  # not JSON
        (b'xx"},"id":"\\q"}', None),  # a bad escape
        (b'xx"},"id":"\xff"}', None),  # not UTF-8
        (b'xx"},"id":true}', None),
        (b'xx"},"id":7', None),  # cut off
        (b"", None),
    ],
)
def test_the_tail_sniffer_reads_an_id_only_when_it_is_the_objects_last_member(
    tail: bytes, found: object
) -> None:
    assert sniff_tail_id(tail) == found


def test_a_missing_capability_error_names_the_capabilities_in_its_data_as_the_schema_does() -> None:
    problem = MissingClientCapabilityError("Needs sampling.", required={"sampling": {}})
    error = json.loads(encode_error(7, problem))["error"]
    assert (error["code"], error["message"]) == (-32021, problem.title)
    # a ClientCapabilities object, beside the problem document (never an array of names)
    assert error["data"]["requiredCapabilities"] == {"sampling": {}}
    assert error["data"]["type"] == "urn:mcp-suite:problem:missing-client-capability"
