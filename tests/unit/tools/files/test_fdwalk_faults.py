"""The descriptor walk when the system fails it: errors that are not the caller's doing propagate
(they become an internal error with an incident id), a tree that changes mid-walk is refused or
skipped, and no descriptor is left open either way."""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.policy import Refusal, RefusedError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.txt").write_text("deep\n")
    (root / "a" / "b-moved").mkdir()
    (root / "file.txt").write_text("inside\n")
    return root


@pytest.fixture
def root_dir(root: Path) -> Iterator[fdwalk.RootDir]:
    with fdwalk.open_root(root) as opened:
        yield opened


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextlib.contextmanager
def _no_descriptor_left() -> Iterator[None]:
    """The process may open no more descriptors (EMFILE) until the block ends."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = os.open(os.devnull, os.O_RDONLY)
    os.close(lowest_free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_file_system_root_cannot_be_the_sandbox_root(tmp_path: Path) -> None:
    (tmp_path / "slash").symlink_to("/")
    for path in (Path("/"), tmp_path / "slash"):
        with pytest.raises(ValueError, match="must not be the file system root"), fdwalk.open_root(path):
            pass


def test_a_link_target_climbing_above_the_file_system_root_stays_at_it(
    root: Path, root_dir: fdwalk.RootDir
) -> None:
    # "/.." is "/" for the kernel and for realpath: the target comes back into the root.
    (root / "link").symlink_to("/../" + str(root).lstrip("/") + "/file.txt")
    got = fdwalk.read_file(root_dir, ("link",), 100, allow_hard_links=False)
    assert got.data == b"inside\n"


def test_a_link_gone_between_its_lstat_and_its_readlink_is_refused_as_changed(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "link").symlink_to("file.txt")
    real_readlink = os.readlink

    def remove_then_readlink(path: Any, *args: Any, **kwargs: Any) -> Any:
        if path == "link":
            (root / "link").unlink()
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", remove_then_readlink)
    with pytest.raises(RefusedError) as info:
        fdwalk.read_file(root_dir, ("link",), 100, allow_hard_links=False)
    assert info.value.refusal is Refusal.CHANGED


def test_a_root_descriptor_that_is_not_open_is_an_error_not_a_refusal(root: Path) -> None:
    closed = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    os.close(closed)
    broken = fdwalk.RootDir(fd=closed, parts=tuple(str(root).strip("/").split("/")))
    with pytest.raises(OSError) as info:
        fdwalk.read_file(broken, ("file.txt",), 100, allow_hard_links=False)
    assert info.value.errno == errno.EBADF


def test_a_read_with_no_descriptor_left_is_an_error_not_a_refusal(root_dir: fdwalk.RootDir) -> None:
    with _no_descriptor_left(), pytest.raises(OSError) as info:
        fdwalk.read_file(root_dir, ("file.txt",), 100, allow_hard_links=False)
    assert info.value.errno == errno.EMFILE


def test_a_listing_with_no_descriptor_left_is_an_error_not_a_refusal(root_dir: fdwalk.RootDir) -> None:
    with _no_descriptor_left(), pytest.raises(OSError) as info:
        fdwalk.list_directory(root_dir, (), max_entries=10, depth=1, allow_hard_links=False)
    assert info.value.errno == errno.EMFILE


def _open_with(monkeypatch: pytest.MonkeyPatch, name: str, before: Any) -> None:
    """Call `before()` just before the walk opens `name`, then open it for real."""
    real_open = os.open

    def open_after(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == name:
            before()
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_after)


def test_a_subdirectory_that_cannot_be_opened_for_want_of_descriptors_is_an_error(
    root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_descriptor_left() -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    _open_with(monkeypatch, "b", no_descriptor_left)
    before = _open_fds()
    with pytest.raises(OSError) as info:
        fdwalk.list_directory(root_dir, (), max_entries=10, depth=3, allow_hard_links=False)
    assert info.value.errno == errno.EMFILE
    assert _open_fds() == before


def test_a_nested_directory_swapped_for_a_link_mid_listing_is_skipped_without_a_leak(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        (root / "a" / "b").rename(root / "a" / "b-old")
        (root / "a" / "b").symlink_to("b-old")

    _open_with(monkeypatch, "b", swap)
    before = _open_fds()
    got = fdwalk.list_directory(root_dir, (), max_entries=10, depth=3, allow_hard_links=False)
    names = [entry.name for entry in got.entries]
    assert names == ["a", "file.txt", "a/b", "a/b-moved"]  # a/b/deep.txt is never reached
    assert not got.truncated
    assert _open_fds() == before


def test_an_entry_removed_between_reading_the_directory_and_its_stat_is_left_out(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_scandir = os.scandir

    @contextlib.contextmanager
    def scandir_then_remove(fd: int) -> Iterator[Iterator[os.DirEntry[str]]]:
        with real_scandir(fd) as scan:
            entries = list(scan)  # the names are read; file.txt then goes before its stat
            (root / "file.txt").unlink()
            yield iter(entries)

    monkeypatch.setattr(os, "scandir", scandir_then_remove)
    got = fdwalk.list_directory(root_dir, (), max_entries=10, depth=1, allow_hard_links=False)
    assert [(entry.name, entry.kind) for entry in got.entries] == [("a", "directory")]
