"""The descriptor walk at its edges: the bounds on the names a listing looks at and on the bytes a
read takes, a directory that vanishes or changes kind between the steps, an error without an errno."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_suite.talk import current_talk
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.policy import MAX_SYMLINK_HOPS, Refusal, RefusedError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two directories of ten files each, and one file, at the top."""
    top = tmp_path / "top"
    for directory in ("a", "b"):
        (top / directory).mkdir(parents=True)
        for index in range(10):
            (top / directory / f"f{index}").write_text(directory)
    (top / "z.txt").write_text("z")
    return top


@pytest.fixture
def root_dir(root: Path) -> Iterator[fdwalk.RootDir]:
    with fdwalk.open_root(root) as opened:
        yield opened


def _list(root_dir: fdwalk.RootDir, *, max_entries: int = 100, depth: int = 2) -> fdwalk.Listing:
    return fdwalk.list_directory(root_dir, (), max_entries=max_entries, depth=depth, allow_hard_links=False)


class _CountingScan:
    """`os.scandir` that counts the entries whose stat the listing asks for."""

    def __init__(self, real: Any, counter: list[int], fd: int) -> None:
        self._scan = real(fd)
        self._counter = counter

    def __enter__(self) -> _CountingScan:
        return self

    def __exit__(self, *exc: object) -> None:
        self._scan.close()

    def __iter__(self) -> Iterator[Any]:
        for entry in self._scan:
            yield _CountingEntry(entry, self._counter)


class _CountingEntry:
    def __init__(self, entry: os.DirEntry[str], counter: list[int]) -> None:
        self.name = entry.name
        self._entry = entry
        self._counter = counter

    def stat(self, *, follow_symlinks: bool) -> os.stat_result:
        self._counter[0] += 1
        return self._entry.stat(follow_symlinks=follow_symlinks)


@pytest.mark.parametrize("max_entries", [1, 2, 3, 5, 12, 21])
def test_a_listing_stats_at_most_max_entries_plus_one_names(
    root_dir: fdwalk.RootDir, max_entries: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, stats = os.scandir, [0]
    monkeypatch.setattr(os, "scandir", lambda fd: _CountingScan(real, stats, fd))
    listing = _list(root_dir, max_entries=max_entries)
    assert len(listing.entries) == max_entries
    assert listing.truncated is True
    assert stats[0] == max_entries + 1  # the extra one only says `truncated`


def test_a_listing_that_fits_is_whole_and_not_truncated(root_dir: fdwalk.RootDir) -> None:
    listing = _list(root_dir, max_entries=23)
    assert len(listing.entries) == 23
    assert listing.truncated is False
    assert _list(root_dir, depth=0) == fdwalk.Listing((), truncated=False)  # no level: nothing


def test_a_subdirectory_that_vanishes_mid_listing_is_skipped_and_its_siblings_still_listed(
    root_dir: fdwalk.RootDir, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "a" and (root / "a").is_dir():  # the top has been read; `a` goes before it is opened
            for child in (root / "a").iterdir():
                child.unlink()
            (root / "a").rmdir()
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    names = [entry.name for entry in _list(root_dir).entries]
    assert names == ["a", "b", "z.txt", *(f"b/f{index}" for index in range(10))]


def test_a_directory_that_became_a_file_after_it_was_resolved_is_refused_as_changed(
    root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Step 1 saw a directory; by step 2 the name holds a file: O_DIRECTORY refuses to open it.
    monkeypatch.setattr(fdwalk, "resolve", lambda root, parts: (("z.txt",), stat.S_IFDIR))
    with pytest.raises(RefusedError) as info:
        fdwalk.list_directory(root_dir, ("a",), max_entries=10, depth=1, allow_hard_links=False)
    assert info.value.refusal is Refusal.CHANGED


def test_an_open_error_without_an_errno_propagates_from_a_listing(
    root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> int:
        raise OSError("no errno")

    # step 1 only lstats; the first open is the leaf's (step 2)
    monkeypatch.setattr(os, "open", broken)
    with pytest.raises(OSError, match="no errno") as info:
        _list(root_dir)
    assert not isinstance(info.value, RefusedError)


def test_an_open_error_without_an_errno_propagates_from_a_read(
    root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> int:
        raise OSError("no errno")

    # step 1 only lstats; the first open is the leaf's (step 2)
    monkeypatch.setattr(os, "open", broken)
    with pytest.raises(OSError, match="no errno") as info:
        fdwalk.read_file(root_dir, ("z.txt",), 10, allow_hard_links=False)
    assert not isinstance(info.value, RefusedError)


@pytest.mark.parametrize("max_bytes", [1, (1 << 20) - 1, 1 << 20, (3 << 19) + 7, 3 << 20])
def test_a_read_of_a_file_larger_than_a_chunk_takes_at_most_max_bytes_plus_one(
    root_dir: fdwalk.RootDir, root: Path, max_bytes: int
) -> None:
    content = bytes(range(251)) * ((3 << 20) // 251 + 1)  # over 3 MiB: several 1 MiB chunks
    (root / "big.bin").write_bytes(content)
    with open(root / "big.bin", "rb") as handle:
        assert fdwalk.read_at_most(handle.fileno(), max_bytes + 1) == content[: max_bytes + 1]
    read = fdwalk.read_file(root_dir, ("big.bin",), max_bytes, allow_hard_links=False)
    assert (read.size, read.data, read.truncated) == (len(content), content[:max_bytes], True)


@pytest.mark.parametrize("max_bytes", [1, 4095, (1 << 20) + 3])
def test_a_read_takes_no_more_than_max_bytes_plus_one_from_the_file(
    root_dir: fdwalk.RootDir, root: Path, max_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "big.bin").write_bytes(b"x" * (3 << 20))
    real, taken = os.read, []

    def read(fd: int, size: int) -> bytes:
        data = real(fd, size)
        taken.append(len(data))
        return data

    monkeypatch.setattr(os, "read", read)
    result = fdwalk.read_file(root_dir, ("big.bin",), max_bytes, allow_hard_links=False)
    assert (len(result.data), result.truncated) == (max_bytes, True)
    assert sum(taken) == max_bytes + 1  # the extra byte only says `truncated`


@pytest.mark.parametrize(("size", "truncated"), [(9, False), (10, False), (11, True)])
def test_a_file_of_exactly_max_bytes_is_read_whole_and_not_truncated(
    root_dir: fdwalk.RootDir, root: Path, size: int, truncated: bool
) -> None:
    content = bytes(range(97, 97 + size))
    (root / "edge.txt").write_bytes(content)
    read = fdwalk.read_file(root_dir, ("edge.txt",), 10, allow_hard_links=False)
    assert (read.size, read.data, read.truncated) == (size, content[:10], truncated)


def test_a_chain_of_max_symlink_hops_links_resolves_and_one_more_is_a_loop(
    root_dir: fdwalk.RootDir, root: Path
) -> None:
    (root / "link0").symlink_to("z.txt")
    for index in range(1, MAX_SYMLINK_HOPS + 1):
        (root / f"link{index}").symlink_to(f"link{index - 1}")
    assert fdwalk.resolve(root_dir, (f"link{MAX_SYMLINK_HOPS - 1}",))[0] == ("z.txt",)
    with pytest.raises(RefusedError) as info:
        fdwalk.resolve(root_dir, (f"link{MAX_SYMLINK_HOPS}",))
    assert info.value.refusal is Refusal.SYMLINK_LOOP


def test_the_callers_dot_dot_never_climbs_above_the_root_even_after_a_link(
    root_dir: fdwalk.RootDir, root: Path
) -> None:
    (root / "to-a").symlink_to("a")
    (root / "to-a-abs").symlink_to(root / "a")
    (root / "to-to-a").symlink_to("to-a")  # a link in a link's target
    for link in ("to-a", "to-a-abs", "to-to-a"):
        with pytest.raises(RefusedError) as info:
            fdwalk.resolve(root_dir, (link, "..", "..", root.name, "z.txt"))
        assert info.value.refusal is Refusal.OUTSIDE_ROOT
    assert fdwalk.resolve(root_dir, ("to-a", "..", "z.txt"))[0] == ("z.txt",)


def test_a_link_may_not_detour_through_another_directory_above_the_root(
    root_dir: fdwalk.RootDir, root: Path
) -> None:
    above = root.parent
    (above / "elsewhere").mkdir()
    (root / "detour").symlink_to(f"/{above.parts[1]}-not/../{str(root)[1:]}/z.txt")
    (root / "detour-below").symlink_to(f"{above}/elsewhere/../{root.name}/z.txt")
    for link in ("detour", "detour-below"):
        with pytest.raises(RefusedError) as info:
            fdwalk.resolve(root_dir, (link,))
        assert info.value.refusal is Refusal.OUTSIDE_ROOT
    (root / "straight").symlink_to(root / "z.txt")
    assert fdwalk.resolve(root_dir, ("straight",))[0] == ("z.txt",)
    (root / "dotted").symlink_to("./a/./f0")
    assert fdwalk.resolve(root_dir, ("dotted",))[0] == ("a", "f0")  # canonical: no "." left


def test_dot_dot_after_missing_names_is_lexical_however_deep(root_dir: fdwalk.RootDir) -> None:
    for parts in (("gone", "..", "z.txt"), ("gone", "x", "y", "..", "..", "..", "z.txt")):
        assert fdwalk.resolve(root_dir, parts)[0] == ("z.txt",)
    with pytest.raises(RefusedError) as info:
        fdwalk.resolve(root_dir, ("gone", "x", "..", "y"))
    assert info.value.refusal is Refusal.MISSING


def test_an_lstat_error_without_an_errno_propagates(
    root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> os.stat_result:
        raise OSError("no errno")

    monkeypatch.setattr(os, "lstat", broken)
    with pytest.raises(OSError, match="no errno") as info:
        fdwalk.resolve(root_dir, ("z.txt",))
    assert not isinstance(info.value, RefusedError)


class _Noting:
    """A call's context that only records what the read noted (`mcp_suite.talk.Talk.note`)."""

    def __init__(self) -> None:
        self.noted: list[int | None] = []

    def note(self, *, rows: int | None = None, bytes_read: int | None = None) -> None:
        self.noted.append(bytes_read)


def test_a_large_read_notes_the_bytes_read_after_each_chunk_for_the_call_s_progress(root: Path) -> None:
    (root / "big.bin").write_bytes(b"x" * ((5 << 19) + 3))  # 2.5 MiB and 3 bytes: three chunks
    noting = _Noting()
    entered = current_talk.set(noting)  # type: ignore[arg-type]  # records `note` only; nothing else is called
    try:
        with open(root / "big.bin", "rb") as handle:
            fdwalk.read_at_most(handle.fileno(), 10 << 20)
    finally:
        current_talk.reset(entered)
    assert noting.noted == [1 << 20, 2 << 20, (5 << 19) + 3]
