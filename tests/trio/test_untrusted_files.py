"""The untrusted-data frame around the folder's files and names, through the whole server (issue 44).

Each injection text of tests/support/injections.py is planted as a file's text and, where a file
name can hold it, as a name: it comes back inside the frame of sandbox_fs_read and sandbox_fs_list,
none forges it, the text comes back as the file holds it, and every invisible character is counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import trio

from mcp_suite.settings import Settings
from tests.support.harness import open_session
from tests.support.injections import INJECTIONS, NAME_SAFE, check_framed

# Names holding a bidi control are left out of a listing (no caller could name them: the sanitizer
# refuses them in every argument), so they are not planted as names.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
NAMED = tuple(i for i in NAME_SAFE if not _BIDI.intersection(i.text))


async def _calls(root: Path, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    settings = Settings(safe_data_dir=root, metrics_enabled=False)
    results = []
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            tools = (await h.request("tools/list"))["result"]["tools"]
            schemas = {tool["name"]: tool["outputSchema"] for tool in tools}
            for name, arguments in calls:
                result = (await h.response(await h.call(name, arguments)))["result"]
                # As the SDK clients check it: the frame's member and the report are declared.
                jsonschema.Draft202012Validator(schemas[name]).validate(result["structuredContent"])
                results.append(result)
    return results


def _counted(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


async def test_a_file_holding_an_injection_comes_back_inside_the_frame_as_it_is(tmp_path: Path) -> None:
    for index, injection in enumerate(INJECTIONS):
        (tmp_path / f"{index:02d}.txt").write_text(f"line one\n{injection.text}\n", encoding="utf-8")
    calls = [("sandbox_fs_read", {"relative_path": f"{index:02d}.txt"}) for index in range(len(INJECTIONS))]
    results = await _calls(tmp_path, *calls)
    boundaries = set()
    for injection, result in zip(INJECTIONS, results, strict=True):
        boundary, body = check_framed(result, (injection,))
        boundaries.add(boundary)
        assert body["content"] == f"line one\n{injection.text}\n", injection.why
        if injection.hidden:
            assert body["invisible"] == f"{_counted(injection.hidden, 'invisible character')} on 1 line: 2"
        else:
            assert "invisible" not in body, injection.why
    assert len(boundaries) == len(INJECTIONS)


async def test_the_report_names_the_first_lines_and_counts_them_all(tmp_path: Path) -> None:
    lines = ["plain"] * 30
    for number in (3, 5, 8, 13, 14, 15, 16, 17, 18, 19, 20, 25):
        lines[number - 1] = "zero\u200bwidth"
    (tmp_path / "many.txt").write_text("\n".join(lines), encoding="utf-8")
    (result,) = await _calls(tmp_path, ("sandbox_fs_read", {"relative_path": "many.txt"}))
    _, body = check_framed(result)
    assert (
        body["invisible"] == "12 invisible characters on 12 lines: 3, 5, 8, 13, 14, 15, 16, 17, 18, 19, ..."
    )


async def test_names_holding_an_injection_come_back_inside_the_frame_their_hidden_characters_counted(
    tmp_path: Path,
) -> None:
    for injection in NAMED:
        (tmp_path / injection.text).write_bytes(b"")
    (result,) = await _calls(tmp_path, ("sandbox_fs_list", {}))
    _, body = check_framed(result, NAMED)
    names = [entry["name"] for entry in body["entries"]]
    assert sorted(names) == sorted(i.text for i in NAMED)
    hidden = {i.text: i.hidden for i in NAMED}
    holding = [index for index, name in enumerate(names) if hidden[name]]
    characters = sum(hidden.values())
    assert body["invisible"] == (
        f"{characters} invisible characters in {len(holding)} names: entries {', '.join(map(str, holding))}"
    )
