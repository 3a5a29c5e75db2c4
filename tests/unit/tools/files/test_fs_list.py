"""`sandbox_fs_list` over the real attack tree of `sandbox_fs_read`: nothing outside the root shows.

Every path of the read attack table is listed too: the answer is a listing of a directory inside
the root, or a problem without the canary or a host path. Links are listed, never followed.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_suite.problems import ProblemError
from mcp_suite.settings import Settings
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import SandboxFsListArgs, SandboxFsListResult
from mcp_suite.tools.files.opener import open_files
from mcp_suite.tools.files.sandbox_fs_list.tool import list_sync
from tests.support.fs_attacks import (
    CANARY,
    CASES,
    AttackTree,
    checked_problem,
    descriptors_in,
    root_dir,
    tree,
)

__all__ = ["root_dir", "tree"]  # the fixtures this module's tests take


def listing(
    root: fdwalk.RootDir,
    tree: AttackTree,
    path: str,
    *,
    recursive: bool = False,
    max_depth: int = 3,
    max_entries: int = 1_000,
    allow_hard_links: bool = False,
) -> SandboxFsListResult | dict[str, Any]:
    """The result, or the rendered problem; neither may hold the canary or a host path."""
    args = SandboxFsListArgs(
        relative_path=path, recursive=recursive, max_depth=max_depth, max_entries=max_entries
    )
    try:
        result = list_sync(root, args, allow_hard_links=allow_hard_links, max_bytes=16_777_216)
    except ProblemError as exc:
        return checked_problem(exc, tree)
    text = result.model_dump_json()
    assert CANARY not in text
    assert str(tree.base) not in text
    return result


def names(result: SandboxFsListResult | dict[str, Any]) -> list[str]:
    assert isinstance(result, SandboxFsListResult), result
    return [entry.name for entry in result.entries]


def walk_inside(top: Path, depth: int) -> set[str]:
    """What a listing of `top` must show: every name `depth` levels down, links not followed."""
    found: set[str] = set()
    for current, dirs, files in os.walk(top, followlinks=False):
        level = len(Path(current).relative_to(top).parts)
        for name in dirs + files:
            found.add(str((Path(current) / name).relative_to(top)))
        if level + 1 >= depth:
            dirs.clear()
    return found


def test_the_root_is_listed_with_kinds_and_sizes(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    got = listing(root_dir, tree, "")
    assert isinstance(got, SandboxFsListResult)
    by_name = {entry.name: entry for entry in got.entries}
    assert set(by_name) == set(os.listdir(tree.root))
    assert (by_name["hello.txt"].kind, by_name["hello.txt"].size) == ("file", 30)
    assert (by_name["sub"].kind, by_name["sub"].size) == ("directory", None)
    assert (by_name["out-abs-dir"].kind, by_name["out-abs-dir"].size) == ("symlink", None)
    for special in ("fifo", "unix.sock"):
        assert (by_name[special].kind, by_name[special].size) == ("other", None)
    assert names(got) == sorted(names(got))
    assert got.truncated is False


@pytest.mark.parametrize("path", ["", ".", "./", "sub/..", "to-root", "sub/up"])
def test_every_spelling_of_the_root_lists_the_root(
    root_dir: fdwalk.RootDir, tree: AttackTree, path: str
) -> None:
    assert set(names(listing(root_dir, tree, path))) == set(os.listdir(tree.root))


def test_recursive_listing_is_the_tree_inside_without_following_links(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    for depth in (1, 2, 3, 8):
        got = names(listing(root_dir, tree, "", recursive=True, max_depth=depth))
        assert set(got) == walk_inside(tree.root, depth)
        assert len(got) == len(set(got))
    deep = names(listing(root_dir, tree, "", recursive=True, max_depth=8))
    assert "sub/deeper/x.txt" in deep
    # Below a link nothing is listed: not the outside, and not the inside twice.
    real_dirs = ("sub/", "%2e%2e/")
    below_links = [
        name
        for name in deep
        if ("/" in name and not name.startswith(real_dirs)) or name.startswith(("sub/up/", "sub/upup/"))
    ]
    assert below_links == []
    # Breadth first: every top-level name before any deeper one.
    levels = [name.count("/") for name in deep]
    assert levels == sorted(levels)


def test_a_link_to_a_directory_inside_is_listed_through(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    assert set(names(listing(root_dir, tree, "in-dir"))) == set(os.listdir(tree.root / "sub"))
    assert set(names(listing(root_dir, tree, "in-abs-dir/"))) == set(os.listdir(tree.root / "sub"))


def test_every_path_of_the_read_attack_table_reveals_nothing_outside(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    inside = {os.path.realpath(p) for p in (tree.root, *tree.root.rglob("*")) if os.path.isdir(p)}
    listed = 0
    for path, _ in CASES:
        for recursive in (False, True):
            got = listing(root_dir, tree, path, recursive=recursive)
            if isinstance(got, dict):
                assert got["status"] in (403, 404, 422), (path, got)
                continue
            listed += 1
            # A listing is only ever of a directory inside the root, and its names are there.
            target = os.path.realpath(tree.root / path)
            assert target in inside, path
            for name in names(got):
                assert os.path.lexists(os.path.join(target, name)), (path, name)
    assert listed > 10


@pytest.mark.parametrize(
    ("path", "status", "reason"),
    [
        ("..", 403, "outside the sandbox root"),
        ("../outside", 403, "outside the sandbox root"),
        ("../no-such-dir", 403, "outside the sandbox root"),
        ("out-abs-dir", 403, "outside the sandbox root"),
        ("out-rel-dir/", 403, "outside the sandbox root"),
        ("sub/upup", 403, "outside the sandbox root"),
        ("proc-root", 403, "outside the sandbox root"),
        ("to-slash", 403, "outside the sandbox root"),
        ("/", 403, "is absolute"),
        ("/etc", 403, "is absolute"),
        ("sub\\deeper", 403, "backslash"),
        ("loop-a", 403, "too many symbolic links"),
        ("hello.txt", 403, "read a file with sandbox_fs_read"),
        ("in-file", 403, "read a file with sandbox_fs_read"),
        ("fifo", 403, "is not a directory"),
        ("no-such-dir", 404, "sandbox_fs_list shows what does"),
        ("dangling-in", 404, "does not exist"),
    ],
)
def test_refusals_say_why_and_what_to_do(
    root_dir: fdwalk.RootDir, tree: AttackTree, path: str, status: int, reason: str
) -> None:
    got = listing(root_dir, tree, path, recursive=True)
    assert isinstance(got, dict)
    assert got["status"] == status
    assert reason in got["detail"]
    assert got["invalid_params"] == ["relative_path"]


def test_missing_outside_is_indistinguishable_from_existing_outside(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    for existing, missing in [
        ("../outside", "../no-such-dir"),
        ("out-rel-dir", "dangling-out"),
        ("out-abs-dir/", "out-abs-dir/no-such"),
    ]:
        assert listing(root_dir, tree, existing) == listing(root_dir, tree, missing)


def test_hard_linked_files_show_no_size_unless_allowed(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    def sizes(allow: bool) -> dict[str, int | None]:
        got = listing(root_dir, tree, "", allow_hard_links=allow)
        assert isinstance(got, SandboxFsListResult)
        return {e.name: e.size for e in got.entries if e.name.startswith("hard-")}

    assert sizes(False) == {"hard-canary": None, "hard-public": None}
    assert sizes(True) == {"hard-canary": len(CANARY), "hard-public": 31}


def test_max_entries_truncates(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    everything = names(listing(root_dir, tree, "", recursive=True))
    for limit in (1, 5, len(everything) - 1):
        got = listing(root_dir, tree, "", recursive=True, max_entries=limit)
        assert isinstance(got, SandboxFsListResult)
        assert len(got.entries) == limit
        assert got.truncated is True
        assert set(names(got)) <= set(everything)
    exact = listing(root_dir, tree, "", recursive=True, max_entries=len(everything))
    assert isinstance(exact, SandboxFsListResult)
    assert exact.truncated is False


def test_a_name_that_is_not_utf8_is_left_out(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    os.close(os.open(os.fsencode(tree.root / "sub") + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o600))
    got = names(listing(root_dir, tree, "sub"))
    assert "caf\udce9.txt" in os.listdir(tree.root / "sub")
    assert set(got) == set(os.listdir(tree.root / "sub")) - {"caf\udce9.txt"}
    json.dumps(got).encode("ascii")


def test_a_directory_swapped_for_a_link_while_listing_is_not_followed(
    root_dir: fdwalk.RootDir, tree: AttackTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the top level has been read, `sub` becomes a link to the outside directory: the next
    # level opens it by name with O_NOFOLLOW, fails, and skips it.
    real_scandir = os.scandir
    calls = 0

    def scandir(fd: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            (tree.root / "sub").rename(tree.base / "sub-moved")
            (tree.root / "sub").symlink_to(tree.base / "outside")
        return real_scandir(fd)

    monkeypatch.setattr(os, "scandir", scandir)
    got = names(listing(root_dir, tree, "", recursive=True, max_depth=3))
    assert "sub" in got
    assert not [name for name in got if name.startswith("sub/")]
    assert "secret.txt" not in " ".join(got)


def test_an_unexpected_os_error_propagates_and_leaves_no_descriptor(
    root_dir: fdwalk.RootDir, tree: AttackTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fd: Any) -> Any:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "scandir", broken)
    before = descriptors_in(tree.base)
    with pytest.raises(OSError) as info:
        list_sync(root_dir, SandboxFsListArgs(relative_path="sub"), allow_hard_links=False, max_bytes=20_000)
    assert info.value.errno == errno.EIO
    assert descriptors_in(tree.base) == before


def test_no_descriptor_is_left_open(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    before = descriptors_in(tree.base)
    for path, _ in CASES:
        listing(root_dir, tree, path, recursive=True)
    assert descriptors_in(tree.base) == before


def test_arguments_are_strict_and_bounded() -> None:
    for bad in (
        {"max_entries": 0},
        {"max_entries": 1_001},
        {"max_depth": 9},
        {"recursive": "true"},
        {"max_entries": "5"},
        {"relative_path": "a" * 4_097},
        {"pattern": "*"},
    ):
        with pytest.raises(Exception) as info:  # the type is checked below
            SandboxFsListArgs.model_validate(bad, strict=True)
        assert type(info.value).__name__ == "ValidationError"


async def test_both_tools_are_served_from_one_root(tree: AttackTree) -> None:
    with trio.fail_after(10), open_files(Settings(safe_data_dir=tree.root)) as toolset:
        assert toolset is not None
        assert [spec.name for spec in toolset.tools] == ["sandbox_fs_list", "sandbox_fs_read"]
        spec = toolset.tools[0]
        result = await spec.call(spec.args_model.model_validate({"relative_path": "sub"}, strict=True))
        assert isinstance(result, SandboxFsListResult)
        assert "inner.txt" in names(result)
        # What the read tool's refusals point to is served next to it.
        read = toolset.tools[1]
        with pytest.raises(ProblemError) as info:
            await read.call(read.args_model.model_validate({"relative_path": "sub"}))
        assert "sandbox_fs_list" in info.value.detail


def test_a_character_device_is_listed_as_other_without_a_size(tree: AttackTree) -> None:
    # /dev as the sandbox root: a real character device for every user (only root can make one).
    with fdwalk.open_root(Path("/dev")) as dev:
        got = listing(dev, tree, "")
    assert isinstance(got, SandboxFsListResult)
    by_name = {entry.name: entry for entry in got.entries}
    assert (by_name["null"].kind, by_name["null"].size) == ("other", None)
