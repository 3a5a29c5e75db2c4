"""sandbox_fs_list's byte cap (MCP_FS_LIST_MAX_BYTES): the entries that fit, `truncated` and a hint
past it, a refusal only when not even one entry fits, and the answer as sent never over the cap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.protocol.mcp import structured_json
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import MAX_ENTRIES, SandboxFsListArgs
from mcp_suite.tools.files.sandbox_fs_list.tool import HINT_BYTES, fit_entries, list_sync, listing_hint

ENVELOPE = 64  # what the cap keeps for {"path":..,"entries":[],"truncated":false}


def _entries(count: int, name_chars: int = 40) -> tuple[fdwalk.DirEntry, ...]:
    return tuple(fdwalk.DirEntry(f"{index:04d}" + "é" * name_chars, "file", 123) for index in range(count))


def _needed(entries: Sequence[fdwalk.DirEntry], path: str) -> int:
    sizes = [len(compact_json({"name": e.name, "kind": e.kind, "size": e.size})) + 1 for e in entries]
    return len(compact_json(path)) + ENVELOPE + sum(sizes)


@pytest.mark.parametrize("cut_at_bytes", [True, False])
def test_the_hint_with_the_largest_figures_fits_its_room(cut_at_bytes: bool) -> None:
    hint = listing_hint(cut_at_bytes=cut_at_bytes, max_bytes=16_777_216, max_entries_limit=MAX_ENTRIES)
    assert len(f',"hint":{compact_json(hint)}') <= HINT_BYTES
    assert hint.isascii()
    assert '"' not in hint
    assert "\\" not in hint


def test_at_the_cap_every_entry_one_byte_under_the_ones_that_fit_with_the_hints_room() -> None:
    entries = _entries(60)
    needed = _needed(entries, "sub")
    assert fit_entries(entries, "sub", max_bytes=needed, more=False) == (entries, False)
    assert fit_entries(entries, "sub", max_bytes=needed + 1, more=False) == (entries, False)
    kept, cut = fit_entries(entries, "sub", max_bytes=needed - 1, more=False)
    assert cut
    assert 0 < len(kept) < len(entries)
    assert kept == entries[: len(kept)]  # the first ones, in the listing's order
    assert _needed(kept, "sub") + HINT_BYTES <= needed - 1


def test_a_listing_cut_at_max_entries_also_keeps_room_for_its_hint() -> None:
    entries = _entries(60)
    needed = _needed(entries, "")
    kept, cut = fit_entries(entries, "", max_bytes=needed, more=True)
    assert cut
    assert _needed(kept, "") + HINT_BYTES <= needed


def test_an_entry_too_large_to_show_alone_is_refused() -> None:
    entries = _entries(3, name_chars=400)  # 2,400 bytes of JSON each: \u00e9 is 6
    with pytest.raises(ResultTooLargeError) as caught:
        fit_entries(entries, "", max_bytes=2_000, more=False)
    assert caught.value.metadata == {"max_result_bytes": 2_000}


def test_an_empty_directory_fits_any_cap_its_path_fits() -> None:
    assert fit_entries((), "a", max_bytes=1_024, more=False) == ((), False)
    with pytest.raises(ResultTooLargeError):
        fit_entries((), "😀" * 100, max_bytes=1_024, more=False)  # 1,202 bytes of path alone


def test_a_real_listing_past_the_cap_returns_what_fits_as_sent(tmp_path: Path) -> None:
    for index in range(300):
        (tmp_path / f"{index:03d}-{'ü' * 30}.txt").write_bytes(b"x")
    with fdwalk.open_root(tmp_path) as root:
        result = list_sync(
            root, SandboxFsListArgs(max_entries=1_000), allow_hard_links=False, max_bytes=20_000
        )
    sent = structured_json(result)
    assert len(sent) <= 20_000
    assert result.truncated is True
    assert result.hint
    assert "20000 bytes" in result.hint
    assert 50 < len(result.entries) < 300
    assert len(sent) > 20_000 - HINT_BYTES - 300  # filled as far as the next entry allowed


def test_a_listing_that_fits_has_no_hint(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_bytes(b"x")
    with fdwalk.open_root(tmp_path) as root:
        result = list_sync(root, SandboxFsListArgs(), allow_hard_links=False, max_bytes=20_000)
    assert (
        structured_json(result)
        == b'{"path":"","entries":[{"name":"one.txt","kind":"file","size":1}],"truncated":false}'
    )
