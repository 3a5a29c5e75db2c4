"""read_only_sql's reply frame stays within its stated bound at the configured maximum of
MCP_SQL_MAX_RESULT_BYTES (docs/tools/read_only_sql.md, "Reply size"): the cap counts the result's
JSON as sent, and the text block repeats it, escaped, so a frame is at most three times the cap
plus a constant, whatever the rows hold. The frame the server wrote is measured in bytes."""

from __future__ import annotations

import json
import sys
from typing import Any, Final

import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from tests.support.harness import Harness, open_session
from tests.support.pg import sql_settings
from tests.support.session_core import META
from tests.support.wire import check_line

pytestmark = pytest.mark.pg

MAX_RESULT_BYTES: Final = 16_777_216  # the largest MCP_SQL_MAX_RESULT_BYTES settings accept
# One value fills the cap. (With many rows, the pipeline's count of bytes arriving on the socket can
# pass its limit far below a large cap, so the test would measure a refusal instead.)
ROWS: Final = 1
# The stated bound, for a request id of at most 20 bytes as sent.
MULTIPLE: Final = 3
CONSTANT: Final = 1_000

# Each case fills the cap as nearly as it can: (SQL character, the bytes one character takes inside
# the rows' JSON).
CASES: Final = {
    "quotes": ("'\"'", 2),  # \" in structuredContent, \\\" in the text block: the worst there is
    "control-characters": ("chr(1)", 6),
    "four-byte-characters": ("chr(128512)", 12),
    "plain-ascii": ("'a'", 1),
}


async def _frame(h: Harness, sql: str, max_rows: int = ROWS) -> bytes:
    params: dict[str, Any] = {
        "name": "read_only_sql",
        "arguments": {"sql": sql, "max_rows": max_rows},
        "_meta": META,
    }
    request_id = await h.send_request("tools/call", params)
    line = await h.recv_line()
    assert line is not None
    assert check_line(line)["id"] == request_id
    return line


@pytest.mark.parametrize("case", list(CASES))
async def test_a_result_at_the_configured_maximum_stays_within_three_times_the_cap(
    demo_cluster: Cluster, case: str
) -> None:
    char, sent = CASES[case]
    # The cap counts the column list, the rows and 64 bytes for the result's own members: the
    # column list is [{"name":"v","type":"text"}] (28 bytes), the rows [["…"]] (6 and the text).
    length = (MAX_RESULT_BYTES - 64 - 28 - 6) // sent
    # Built from pieces: the policy refuses one repeat() longer than 1,000,000.
    sql = (
        f"SELECT repeat(repeat({char}, 1000), {length // 1000}) || repeat({char}, {length % 1000}) AS v"
        f" FROM generate_series(1, {ROWS})"
    )
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=MAX_RESULT_BYTES, sql_max_rows=ROWS)
    bound = MULTIPLE * MAX_RESULT_BYTES + CONSTANT
    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(h, sql)
            over = await _frame(h, sql.replace(f"{length % 1000}) AS v", f"{length % 1000 + 1}) AS v"))
    sys.stderr.write(
        f"reply-size read_only_sql {case}: {len(frame)} bytes, {len(frame) / MAX_RESULT_BYTES:.3f} x cap, "
        f"bound {bound}; one character more: {len(over)} bytes\n"
    )
    result = json.loads(frame)["result"]
    assert result["isError"] is False, result["content"][0]["text"]
    assert result["structuredContent"]["row_count"] == ROWS
    assert len(frame) <= bound
    # One character more is over the cap: refused, and the refusal is small.
    assert json.loads(over)["result"]["isError"] is True
    assert len(over) <= CONSTANT


# At the default cap (sized for Claude Code's 25,000 tokens: docs/configuration.md, "Answers and
# tokens"): ten rows of one value fill it exactly; one character more in the last row, and the
# answer is the rows that fit, `truncated`, with its hint; the frame stays within 3 x the cap.
DEFAULT_CAP: Final = 20_000
TEN: Final = 10


def _ten_rows_sql(char: str, length: int, extra: int) -> str:
    return (
        f"SELECT repeat({char}, {length} + CASE WHEN n = {TEN} THEN {extra} ELSE 0 END) AS v"
        f" FROM generate_series(1, {TEN}) AS n"
    )


@pytest.mark.parametrize("case", list(CASES))
async def test_rows_at_the_default_cap_fit_whole_and_one_character_more_returns_the_rows_that_fit(
    demo_cluster: Cluster, case: str
) -> None:
    char, sent = CASES[case]
    assert sql_settings(demo_cluster.reader_dsn).sql_max_result_bytes == DEFAULT_CAP
    # The cap counts the column list (28 bytes), 64 bytes, and the rows: [ ] and 9 commas, and
    # each row's ["…"] (4 bytes and the text).
    room = DEFAULT_CAP - 64 - 28 - 2 - (TEN - 1) - 4 * TEN
    length, spare = divmod(room, sent * TEN)
    settings = sql_settings(demo_cluster.reader_dsn)
    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            whole = await _frame(h, _ten_rows_sql(char, length, spare // sent), max_rows=TEN)
            over = await _frame(h, _ten_rows_sql(char, length, spare // sent + 1), max_rows=TEN)
    bound = MULTIPLE * DEFAULT_CAP + CONSTANT
    sys.stderr.write(
        f"reply-size read_only_sql default cap {case}: {len(whole)} bytes ({len(whole) / DEFAULT_CAP:.3f} x"
        f" cap), one character more: {len(over)} bytes; bound {bound}\n"
    )
    answer = json.loads(whole)["result"]["structuredContent"]
    assert (answer["row_count"], answer["truncated"]) == (TEN, False)
    assert "hint" not in answer
    cut = json.loads(over)["result"]["structuredContent"]
    assert cut["truncated"] is True
    assert 0 < cut["row_count"] < TEN
    assert f"{DEFAULT_CAP} bytes" in cut["hint"]
    assert len(whole) <= bound
    assert len(over) <= bound
