"""read_only_sql's hint for a truncated result fits the room the byte cap keeps for it
(`result.HINT_BYTES`), whatever the figures, and costs no escapes on the wire."""

from __future__ import annotations

import pytest

from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql.engine.result import HINT_BYTES
from mcp_suite.tools.sql.read_only_sql.tool import truncation_hint


@pytest.mark.parametrize("cut_at_bytes", [True, False])
def test_the_hint_with_the_largest_figures_fits_its_room(cut_at_bytes: bool) -> None:
    hint = truncation_hint(10_000, cut_at_bytes=cut_at_bytes, max_rows_limit=10_000, max_bytes=16_777_216)
    member = f',"hint":{compact_json(hint)}'
    assert len(member) <= HINT_BYTES
    # Plain ASCII without quotes or backslashes: the text block repeats it byte for byte.
    assert hint.isascii()
    assert '"' not in hint
    assert "\\" not in hint


def test_the_hint_says_which_limit_cut_the_rows_and_how_to_read_on() -> None:
    by_rows = truncation_hint(50, cut_at_bytes=False, max_rows_limit=200, max_bytes=20_000)
    by_bytes = truncation_hint(7, cut_at_bytes=True, max_rows_limit=200, max_bytes=20_000)
    assert "max_rows (at most 200)" in by_rows
    assert "OFFSET 50" in by_rows
    assert "20000 bytes" in by_bytes
    assert "OFFSET 7" in by_bytes
