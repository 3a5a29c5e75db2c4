"""Every tool's reply frame stays within its stated bound: a multiple of its limit plus a constant.

The bounds are stated in docs/tools/<tool>.md ("Reply size"); here each tool answers at its
configured maximum with the worst content there is (all control bytes, all multi-byte characters,
all quotes or backslashes, one long line, invalid UTF-8), and the frame the server actually wrote
is measured in bytes. The figures go to stderr (`-s` shows them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from mcp_suite.protocol import core
from mcp_suite.protocol.mcp import structured_json
from mcp_suite.settings import Settings
from mcp_suite.tools.files.models import MAX_DEPTH, MAX_ENTRIES, MAX_PATH_CHARS
from mcp_suite.tools.metrics.models import RawSample
from mcp_suite.tools.metrics.policy import COUNT_MAX, shape_sample
from tests.support.harness import Harness, open_session
from tests.support.session_core import META, make_core, modern
from tests.support.wire import check_line

# The configured maximum of MCP_FS_MAX_BYTES (settings accept no more).
FS_MAX_BYTES: Final = 16_777_216
# The stated bounds (docs/tools/sandbox_fs_read.md, sandbox_fs_list.md, system_metrics.md), for a
# request id of at most 20 bytes as sent. The constants hold the caller's own path at its worst:
# 4,096 characters beyond U+FFFF, 12 bytes each in structuredContent and 14 in the text block.
READ_MULTIPLE: Final = 3
READ_CONSTANT: Final = 108_000
LIST_PER_ENTRY: Final = 13_500
LIST_CONSTANT: Final = 108_000
METRICS_CONSTANT: Final = 2_000
# The configured maximum of MCP_FS_LIST_MAX_BYTES, and the bound the byte cap gives a listing: the
# cap counts the answer as sent, and the text block repeats it with each \ and " doubled.
LIST_MAX_BYTES: Final = 16_777_216
LIST_CAP_MULTIPLE: Final = 3
LIST_CAP_CONSTANT: Final = 1_000

# A name component of 255 bytes (NAME_MAX) of two-byte characters: 6 bytes each as sent, 7 more in
# the text block, the most a byte of a name can cost once unnameable names are left out.
WIDE_NAME: Final = "é" * 126


def _read_cases() -> dict[str, bytes]:
    size = FS_MAX_BYTES
    return {
        "control-bytes": b"\x01" * size,
        "nul-bytes": b"\x00" * size,
        "quotes": b'"' * size,
        "backslashes": b"\\" * size,
        "two-byte-characters": "é".encode() * (size // 2),
        "three-byte-characters": "€".encode() * (size // 3),
        "four-byte-characters": "😀".encode() * (size // 4),
        "one-long-line": b"a" * size,
        "more-than-the-limit": b"b" * (size + 1),
    }


async def _frame(h: Harness, name: str, arguments: dict[str, Any], *, modern: bool) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = META
    request_id = await h.send_request("tools/call", params)
    line = await h.recv_line()
    assert line is not None
    message = check_line(line)
    assert message["id"] == request_id
    return line


def _report(tool: str, case: str, frame: int, limit: int, bound: int) -> None:
    sys.stderr.write(f"reply-size {tool} {case}: {frame} bytes, {frame / limit:.3f} x limit, bound {bound}\n")


@pytest.fixture(scope="module")
def read_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reply-read")
    for case, data in _read_cases().items():
        (root / case).write_bytes(data)
    (root / "invalid-utf-8").write_bytes(b"\xff" * FS_MAX_BYTES)
    return root


# The modern era's frames are the longer (`resultType`, `_meta`); one legacy frame of the worst case.
@pytest.mark.parametrize(
    ("case", "modern"), [*((case, True) for case in [*_read_cases(), "invalid-utf-8"]), ("quotes", False)]
)
async def test_a_read_at_the_configured_maximum_stays_within_three_times_max_bytes(
    read_root: Path, case: str, modern: bool
) -> None:
    settings = Settings(safe_data_dir=read_root, fs_max_bytes=FS_MAX_BYTES, metrics_enabled=False)
    bound = READ_MULTIPLE * FS_MAX_BYTES + READ_CONSTANT
    with trio.fail_after(120):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(
                h, "sandbox_fs_read", {"relative_path": case, "max_bytes": FS_MAX_BYTES}, modern=modern
            )
    _report("sandbox_fs_read", case, len(frame), FS_MAX_BYTES, bound)
    assert len(frame) <= bound
    result = json.loads(frame)["result"]
    if case == "invalid-utf-8":
        assert result["isError"] is True
        return
    content = result["structuredContent"]["content"]
    # What the limit counts: the text as sent, never more than max_bytes.
    assert len(json.dumps(content)) - 2 <= FS_MAX_BYTES
    expected = (read_root / case).read_bytes().decode()
    assert expected.startswith(content)
    assert result["structuredContent"]["truncated"] is (content != expected)


async def test_a_read_of_the_worst_path_stays_within_the_constant(tmp_path: Path) -> None:
    # A path of 4,096 characters beyond U+FFFF that leads to a file: missing names, then `..`.
    tail = "/../x"
    wide = "😀" * (MAX_PATH_CHARS - len(tail))
    (tmp_path / "x").write_bytes(b'"' * 1_000)
    settings = Settings(safe_data_dir=tmp_path, fs_max_bytes=1_000, metrics_enabled=False)
    bound = READ_MULTIPLE * 1_000 + READ_CONSTANT
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(
                h, "sandbox_fs_read", {"relative_path": wide + tail, "max_bytes": 1_000}, modern=True
            )
    _report("sandbox_fs_read", "worst-path", len(frame), 1_000, bound)
    assert json.loads(frame)["result"]["structuredContent"]["content"] == '"' * 500
    assert len(frame) <= bound


def _wide_tree(root: Path, *, files: int, name: Callable[[int], str]) -> None:
    """A chain of MAX_DEPTH - 1 directories with 255-byte names, then `files` files at the bottom."""
    deepest = root
    for level in range(MAX_DEPTH - 1):
        deepest = deepest / f"{WIDE_NAME}{level:03d}"
        deepest.mkdir()
    for index in range(files):
        (deepest / name(index)).write_bytes(b"")


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
async def test_a_listing_at_the_configured_maximum_stays_within_its_bound_per_entry(
    tmp_path: Path, modern: bool
) -> None:
    _wide_tree(tmp_path, files=MAX_ENTRIES + 10, name=lambda index: f"{WIDE_NAME}{index:03x}")
    # The byte cap at its maximum, so that the per-entry bound is what is measured.
    settings = Settings(safe_data_dir=tmp_path, metrics_enabled=False, fs_list_max_bytes=LIST_MAX_BYTES)
    bound = LIST_PER_ENTRY * MAX_ENTRIES + LIST_CONSTANT
    arguments = {"max_entries": MAX_ENTRIES, "recursive": True, "max_depth": MAX_DEPTH}
    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(h, "sandbox_fs_list", arguments, modern=modern)
    _report("sandbox_fs_list", "wide-names", len(frame), MAX_ENTRIES, bound)
    result = json.loads(frame)["result"]["structuredContent"]
    assert len(result["entries"]) == MAX_ENTRIES
    assert result["truncated"] is True
    assert len(frame) <= bound


@pytest.mark.parametrize(
    "character", ["\\", '"', "é", "a"], ids=["backslashes", "quotes", "two-byte", "ascii"]
)
async def test_a_listing_past_its_byte_cap_returns_the_entries_that_fit_within_three_times_the_cap(
    tmp_path: Path, character: str
) -> None:
    cap = Settings().fs_list_max_bytes  # the default
    for index in range(200):
        (tmp_path / f"{index:03d}{character * (250 // len(character.encode()))}").write_bytes(b"")
    settings = Settings(safe_data_dir=tmp_path, metrics_enabled=False)
    bound = LIST_CAP_MULTIPLE * cap + LIST_CAP_CONSTANT
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(h, "sandbox_fs_list", {"max_entries": MAX_ENTRIES}, modern=True)
    _report("sandbox_fs_list", f"at-the-cap-{character!r}", len(frame), cap, bound)
    result = json.loads(frame)["result"]["structuredContent"]
    assert result["truncated"] is True
    assert "bytes" in result["hint"]
    assert 0 < len(result["entries"]) < 200
    assert len(frame) <= bound


async def test_a_listing_leaves_out_names_no_caller_could_name(tmp_path: Path) -> None:
    # Control characters (a byte of one costs 13 in a reply) and bidi controls: the sanitizer
    # refuses them in every argument, so sandbox_fs_read could never be asked for such a file.
    unnameable = ["\x01" * 255, "bell\x07", "cr\r", "del\x7f", "c1\u0085", "bidi\u202e"]
    for name in [*unnameable, "plain.txt", "tab\tand\nnewline"]:
        (tmp_path / name).write_bytes(b"")
    settings = Settings(safe_data_dir=tmp_path, metrics_enabled=False)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(h, "sandbox_fs_list", {}, modern=False)
    names = [entry["name"] for entry in json.loads(frame)["result"]["structuredContent"]["entries"]]
    assert names == ["plain.txt", "tab\tand\nnewline"]


async def test_a_metrics_reply_stays_within_its_constant() -> None:
    settings = Settings(metrics_enabled=True)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            frame = await _frame(h, "system_metrics", {}, modern=True)
    _report("system_metrics", "snapshot", len(frame), 1, METRICS_CONSTANT)
    assert len(frame) <= METRICS_CONSTANT


def test_a_metrics_reply_of_the_most_extreme_readings_stays_within_its_constant() -> None:
    # The probe cannot be made to read such values, so the server's own frame is built from them:
    # the shaping the tool does, then the session core's encoding of a modern-era success.
    huge = 10**40
    longest_float = -1.2345678901234567e-300  # clamped to 0; the positive ones below stay long
    raw = RawSample(
        cpu_percent=99.99999,
        sample_seconds=1.2345678901234567e300,
        logical_count=huge,
        physical_count=huge,
        load_average=(1.2345678901234567e300, 2.2345678901234567e300, longest_float),
        mem_total=huge,
        mem_available=huge,
        mem_percent=33.333333,
        swap_total=huge,
        swap_free=huge,
        swap_percent=66.666666,
        disk_total=huge,
        disk_free=huge,
        disk_percent=77.777777,
        uptime_seconds=1.2345678901234567e300,
        rss=huge,
        threads=huge,
        open_fds=huge,
    )
    result = shape_sample(raw)
    assert result.process.rss_bytes == COUNT_MAX
    session = make_core()
    started = session.receive(modern("tools/call", {"name": "echo", "arguments": {}}, request_id=2**53))
    assert isinstance(started, core.StartCall)
    answer = session.call_finished(started.key, core.ToolSucceeded(structured_json(result)))
    assert answer.frame is not None
    _report("system_metrics", "extreme-readings", len(answer.frame), 1, METRICS_CONSTANT)
    assert check_line(answer.frame)["result"]["structuredContent"]["memory"]["total_bytes"] == COUNT_MAX
    assert len(answer.frame) <= METRICS_CONSTANT
