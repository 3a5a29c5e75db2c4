"""The untrusted-data frame (protocol/untrusted.py, issue 44) and the invisible-characters count
(tools/text.py), without a server: what the core sends for a tool that read data and for one
that did not, the boundary's draw, and the planted texts of tests/support/injections.py."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Final

import pytest

from mcp_suite.problems import AccessDeniedError
from mcp_suite.protocol import core
from mcp_suite.protocol.jsonrpc import compact_json, encode_tool_success
from mcp_suite.protocol.untrusted import BOUNDARY_BITS, FIELD, FRAMED, INSTRUCTIONS, declare, new_boundary
from mcp_suite.runtime.calls import SECRET_IDS, catalogue_of
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.registry import open_registry
from mcp_suite.tools.text import count_invisible, counted, lines_holding, listed
from tests.support.injections import INJECTIONS, Injection, check_framed
from tests.support.session_core import CALL, answer_of, initialized, line, modern
from tests.support.wire import check_line, slug_of

# Every tool whose result carries database values, catalogue text, a plan or a folder's text and
# names; system_metrics carries none. A database nobody listens on: the tools are listed all the same.
_DATA_TOOLS: Final = {"sql_schema", "read_only_sql", "explain_sql", "sandbox_fs_list", "sandbox_fs_read"}
_NO_DATABASE: Final = "postgresql://reader:secret@127.0.0.1:1/mcp_demo"


def _start(session: core.SessionCore, frame: bytes) -> core.StartCall:
    event = session.receive(frame)
    assert isinstance(event, core.StartCall), event
    return event


def _answer(outcome: core.CallOutcome, *, era: str = "legacy") -> dict[str, Any]:
    session = initialized()
    frame = modern("tools/call", CALL, 3) if era == "modern" else line("tools/call", CALL, 3)
    started = _start(session, frame)
    answer = session.call_finished(started.key, outcome)
    assert answer.frame is not None
    check_line(answer.frame)  # the wire contract, frame included
    result: dict[str, Any] = answer_of(answer)["result"]
    return result


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("injection", INJECTIONS, ids=[i.why for i in INJECTIONS])
def test_a_planted_text_comes_back_inside_the_frame_and_forges_nothing(
    era: str, injection: Injection
) -> None:
    data = compact_json({"rows": [[injection.text, 1]], "note": injection.text}).encode("ascii")
    result = _answer(core.ToolSucceeded(data, untrusted=True), era=era)
    _, body = check_framed(result, (injection,))
    assert body == {"rows": [[injection.text, 1]], "note": injection.text}  # unchanged


def test_a_tool_that_read_nothing_and_a_refusal_carry_no_frame() -> None:
    plain = _answer(core.ToolSucceeded(b'{"cpu":1}'))
    assert plain["structuredContent"] == {"cpu": 1}
    assert plain["content"] == [{"type": "text", "text": '{"cpu":1}'}]
    refused = _answer(core.CallRaised(AccessDeniedError("no")))
    assert "structuredContent" not in refused
    (block,) = refused["content"]
    assert slug_of(json.loads(block["text"])) == "access-denied"
    assert "untrusted-data" not in block["text"]


def test_every_answer_draws_a_fresh_boundary_and_the_server_draws_them_from_secrets() -> None:
    session = initialized()  # its draws count 1, 2, 3...
    seen = []
    for request_id in range(1, 51):
        started = _start(session, line("tools/call", CALL, request_id))
        answer = session.call_finished(started.key, core.ToolSucceeded(b'{"rows":[]}', untrusted=True))
        boundary, _ = check_framed(answer_of(answer)["result"])
        seen.append(boundary)
    assert seen == [f"{n:039d}" for n in range(1, 51)]
    # The server's draws: 128 bits from the CSPRNG, never the same twice.
    assert len({SECRET_IDS.boundary() for _ in range(50)}) == 50
    assert all(0 <= SECRET_IDS.boundary() < 2**BOUNDARY_BITS for _ in range(50))


def test_a_boundary_the_body_holds_is_drawn_again() -> None:
    held = 123456789
    body = b'{"rows":[["%039d"]]}' % held
    draws = itertools.chain([held, held], itertools.count(7))
    boundary = new_boundary(body, lambda: next(draws))
    assert boundary == b"%039d" % 7
    assert boundary not in body
    # Only digits, always 39 of them: the largest 128-bit value fits.
    assert new_boundary(b"{}", lambda: 2**BOUNDARY_BITS - 1) == str(2**BOUNDARY_BITS - 1).encode()
    assert len(str(2**BOUNDARY_BITS - 1)) == 39


def test_the_frame_of_an_empty_object_and_of_a_member_holding_a_quote() -> None:
    for data in (b"{}", b'{"a":"say \\"hi\\"\\\\ and \\u007f"}'):
        line_ = encode_tool_success(1, data, boundary=b"4" * 39)
        result = json.loads(line_)["result"]
        found = FRAMED.fullmatch(result["content"][0]["text"])
        assert found is not None
        assert json.loads(found["body"]) == json.loads(data)
        assert result["structuredContent"] == {**json.loads(data), FIELD: "4" * 39}


def test_the_declared_schema_holds_the_member_and_keeps_the_rest() -> None:
    schema = {"type": "object", "properties": {"rows": {"type": "array"}}, "required": ["rows"]}
    declared = declare(schema)
    assert declared["properties"] == {"rows": {"type": "array"}, FIELD: {"type": "string"}}
    assert declared["required"] == ["rows"]
    assert FIELD not in schema["properties"]  # the tool's own schema is not changed


@pytest.mark.parametrize("injection", INJECTIONS, ids=[i.why for i in INJECTIONS])
def test_every_invisible_character_is_counted(injection: Injection) -> None:
    assert count_invisible(injection.text) == injection.hidden
    assert count_invisible([injection.text, {injection.text: [injection.text]}]) == 3 * injection.hidden


def test_lines_holding_invisible_characters_are_numbered_and_the_list_is_bounded() -> None:
    text = "a\nb\u200bc\u200b\nplain\n" + "\u202e\n" * 12
    characters, lines, first = lines_holding(text, 10)
    assert (characters, lines) == (14, 13)
    assert first == [2, *range(4, 13)]  # line 3 is plain
    assert listed(first, lines) == "2, 4, 5, 6, 7, 8, 9, 10, 11, 12, ..."
    assert listed([4], 1) == "4"
    assert lines_holding("only ascii\n", 10) == (0, 0, [])
    assert lines_holding("caf\u00e9", 10) == (0, 0, [])  # not ASCII, nothing hidden
    assert (counted(1, "line"), counted(2, "line")) == ("1 line", "2 lines")


@pytest.mark.parametrize(
    ("sql", "fs", "metrics"), [(True, True, True), (False, False, True), (False, True, False)]
)
def test_every_tool_that_returns_what_it_read_is_framed_and_declares_it_and_no_other(
    tmp_path: Path, sql: bool, fs: bool, metrics: bool
) -> None:
    settings = Settings(
        sql_dsn=SecretStr(_NO_DATABASE) if sql else None,
        safe_data_dir=tmp_path if fs else None,
        metrics_enabled=metrics,
        sql_connect_timeout_s=1.0,
    )
    with open_registry(settings) as registry:
        framed = {name for name, tool in registry.tools.items() if tool.untrusted}
        declared = {
            tool.name
            for tool in catalogue_of(registry).descriptions()
            if tool.output_schema is not None and FIELD in tool.output_schema["properties"]
        }
        instructions = registry.instructions
    assert framed == declared == _DATA_TOOLS & set(registry.tools)
    assert (INSTRUCTIONS in instructions) == bool(framed)  # said once, only when some tool is framed
    assert instructions.count("untrusted-data") <= 2
