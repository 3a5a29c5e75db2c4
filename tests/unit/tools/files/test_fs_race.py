"""Races against the directory-fd walk: a tree that changes between resolving and opening.

The deterministic tests swap an entry exactly between step 1 (resolve) and step 2 (the O_NOFOLLOW
walk); the loop test lets another thread swap a directory for a link to outside and back while
reads run, thousands of times. No read may ever return the canary.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcp_suite.problems import ProblemError
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import SandboxFsReadArgs
from mcp_suite.tools.files.policy import Refusal, RefusedError
from mcp_suite.tools.files.sandbox_fs_read.tool import read_sync

CANARY = "CANARY-" + uuid.uuid4().hex
INSIDE = "inside the root\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    (outside / "nested").mkdir(parents=True)
    (outside / "file.txt").write_text(CANARY)
    (outside / "nested" / "file.txt").write_text(CANARY)
    root = tmp_path / "root"
    (root / "swap" / "nested").mkdir(parents=True)
    (root / "swap" / "file.txt").write_text(INSIDE)
    (root / "swap" / "nested" / "file.txt").write_text(INSIDE)
    (root / "swap-link").symlink_to(outside)  # staged: swapped in for "swap" by the racer
    return root


@pytest.fixture
def root_dir(root: Path) -> Iterator[fdwalk.RootDir]:
    with fdwalk.open_root(root) as opened:
        yield opened


def _swap_after_resolve(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> list[tuple[str, ...]]:
    """Make `change` happen right after step 1 resolved the path; return what step 1 answered."""
    resolved: list[tuple[str, ...]] = []
    real_resolve = fdwalk.resolve

    def resolve_then_change(root: fdwalk.RootDir, parts: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
        canonical, mode = real_resolve(root, parts)
        resolved.append(canonical)
        change()
        return canonical, mode

    monkeypatch.setattr(fdwalk, "resolve", resolve_then_change)
    return resolved


def _swap_directory_for_link(root: Path) -> None:
    os.rename(root / "swap", root / "swap-dir")
    os.rename(root / "swap-link", root / "swap")


def _refusal(root_dir: fdwalk.RootDir, path: str) -> Refusal:
    with pytest.raises(RefusedError) as info:
        fdwalk.read_file(root_dir, tuple(path.split("/")), 1_000, allow_hard_links=False)
    return info.value.refusal


def test_directory_swapped_for_a_link_after_resolving_is_refused(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolved = _swap_after_resolve(monkeypatch, lambda: _swap_directory_for_link(root))
    assert _refusal(root_dir, "swap/nested/file.txt") is Refusal.CHANGED
    assert resolved == [("swap", "nested", "file.txt")]


def test_leaf_swapped_for_a_link_after_resolving_is_refused(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        leaf = root / "swap" / "file.txt"
        leaf.unlink()
        leaf.symlink_to(root.parent / "outside" / "file.txt")

    _swap_after_resolve(monkeypatch, swap)
    assert _refusal(root_dir, "swap/file.txt") is Refusal.CHANGED


def test_leaf_swapped_for_a_fifo_after_resolving_is_refused_without_blocking(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        leaf = root / "swap" / "file.txt"
        leaf.unlink()
        os.mkfifo(leaf)

    _swap_after_resolve(monkeypatch, swap)
    assert _refusal(root_dir, "swap/file.txt") is Refusal.NOT_REGULAR


def test_leaf_swapped_for_a_hard_link_to_outside_after_resolving_is_refused(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        leaf = root / "swap" / "file.txt"
        leaf.unlink()
        os.link(root.parent / "outside" / "file.txt", leaf)

    _swap_after_resolve(monkeypatch, swap)
    assert _refusal(root_dir, "swap/file.txt") is Refusal.HARD_LINK


def test_leaf_swapped_for_a_directory_after_resolving_is_refused(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        leaf = root / "swap" / "file.txt"
        leaf.unlink()
        leaf.mkdir()

    _swap_after_resolve(monkeypatch, swap)
    assert _refusal(root_dir, "swap/file.txt") is Refusal.DIRECTORY


def test_directory_to_list_swapped_for_a_link_after_resolving_is_refused(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    _swap_after_resolve(monkeypatch, lambda: _swap_directory_for_link(root))
    with pytest.raises(RefusedError) as info:
        fdwalk.list_directory(root_dir, ("swap",), max_entries=10, depth=2, allow_hard_links=False)
    assert info.value.refusal is Refusal.CHANGED


def test_leaf_removed_after_resolving_is_not_found(
    root: Path, root_dir: fdwalk.RootDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    _swap_after_resolve(monkeypatch, (root / "swap" / "file.txt").unlink)
    assert _refusal(root_dir, "swap/file.txt") is Refusal.MISSING


@pytest.fixture
def fast_thread_switching() -> Iterator[None]:
    # Switch between the reader and the racer as often as possible, so swaps land mid-read.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.mark.usefixtures("fast_thread_switching")
def test_reads_never_escape_while_another_thread_swaps_a_directory_for_a_link(
    root: Path, root_dir: fdwalk.RootDir
) -> None:
    stop = threading.Event()
    swaps = 0
    errors: list[BaseException] = []

    def racer() -> None:
        nonlocal swaps
        try:
            while not stop.is_set():
                os.rename(root / "swap", root / "swap-dir")  # the directory aside
                os.rename(root / "swap-link", root / "swap")  # the link to outside in
                os.rename(root / "swap", root / "swap-link")  # the link out
                os.rename(root / "swap-dir", root / "swap")  # the directory back
                swaps += 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    outcomes: Counter[str] = Counter()
    paths = ["swap/file.txt", "swap/nested/file.txt", "swap/nested/../file.txt"]
    thread = threading.Thread(target=racer, daemon=True)
    thread.start()
    try:
        reads = 0
        while (reads < 6_000 or swaps < 2_000) and reads < 200_000 and not errors:
            args = SandboxFsReadArgs.model_construct(relative_path=paths[reads % 3], max_bytes=100)
            try:
                result = read_sync(root_dir, args, allow_hard_links=False)
            except ProblemError as exc:
                assert CANARY not in exc.detail
                outcomes[exc.slug] += 1
            else:
                assert result.content == INSIDE  # never the canary
                outcomes["read"] += 1
            reads += 1
    finally:
        stop.set()
        thread.join(10)
    assert not errors
    assert swaps >= 2_000
    assert outcomes["read"] > 0
    assert set(outcomes) <= {"read", "not-found", "access-denied"}
