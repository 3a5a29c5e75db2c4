"""The attack suite for `sandbox_fs_read`, table-driven, over a real temporary tree (docs/tools/).

The tree, its canary and the attack table are in `tests.support.fs_attacks`, shared with the listing
and end-to-end tests. Every problem is checked for the canary and for absolute host paths. Tests
run as root in CI, so nothing here relies on permission bits.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_suite.problems import ProblemError
from mcp_suite.settings import Settings
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import (
    SandboxFsReadArgs,
    SandboxFsReadResult,
    args_model_for,
)
from mcp_suite.tools.files.opener import open_files
from mcp_suite.tools.files.sandbox_fs_read.tool import read_sync
from tests.support.fs_attacks import (
    CANARY,
    CASES,
    DENIED,
    INNER,
    MISSING,
    PUBLIC,
    UNSUPPORTED,
    AttackTree,
    checked_problem,
    descriptors_in,
    root_dir,
    tree,
)

__all__ = ["root_dir", "tree"]  # the fixtures this module's tests take


def outcome(
    root: fdwalk.RootDir,
    tree: AttackTree,
    path: str,
    max_bytes: int = 65_536,
    *,
    allow_hard_links: bool = False,
) -> SandboxFsReadResult | dict[str, Any]:
    """The result, or the rendered problem (checked for host paths and the canary)."""
    args = SandboxFsReadArgs.model_construct(relative_path=path, max_bytes=max_bytes)
    try:
        result = read_sync(root, args, allow_hard_links=allow_hard_links)
    except ProblemError as exc:
        return checked_problem(exc, tree)
    assert CANARY not in result.content
    return result


@pytest.mark.parametrize(("path", "expected"), CASES, ids=[repr(case[0])[:60] for case in CASES])
def test_attack_table(root_dir: fdwalk.RootDir, tree: AttackTree, path: str, expected: str) -> None:
    got = outcome(root_dir, tree, path)
    if expected in (DENIED, MISSING, UNSUPPORTED):
        assert isinstance(got, dict), got
        assert got["type"] == f"urn:mcp-suite:problem:{expected}"
        assert got["invalid_params"] == ["relative_path"]
    else:
        assert isinstance(got, SandboxFsReadResult), got
        assert got.content == expected
        assert got.path == path
        assert got.size == len(expected.encode())
        assert got.truncated is False


def test_missing_outside_is_indistinguishable_from_existing_outside(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    pairs = [
        ("../canary.txt", "../no-such.txt"),
        ("out-rel-dir/secret.txt", "out-rel-dir/no-such.txt"),
        ("out-abs-dir/secret.txt", "out-abs-dir/no-such/deeper.txt"),
        ("../outside/secret.txt", "../no-such-dir/secret.txt"),
        ("/etc/passwd", "/etc/no-such-file"),
        ("out-rel-file", "dangling-out"),
    ]
    for existing, missing in pairs:
        assert outcome(root_dir, tree, existing) == outcome(root_dir, tree, missing)


def test_every_refusal_is_a_problem_without_host_paths(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    # outcome() checks each problem; this makes sure the table produced every kind of refusal.
    slugs = set()
    for path, _ in CASES:
        got = outcome(root_dir, tree, path)
        if isinstance(got, dict):
            slugs.add(got["type"].rsplit(":", 1)[1])
    assert slugs == {DENIED, MISSING, UNSUPPORTED}


def test_problem_echoes_at_most_256_characters_of_the_path(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    long_path = "/".join(["d" * 200] * 20)  # 4,019 characters, not found
    got = outcome(root_dir, tree, long_path)
    assert isinstance(got, dict)
    assert got["type"].endswith(":not-found")
    assert "d" * 200 + "/" + "d" * 56 not in got["detail"]
    assert "d" * 200 in got["detail"]
    assert len(got["detail"]) < 256 + 100


def test_relative_echo_is_kept_for_paths_inside_the_root(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    got = outcome(root_dir, tree, "sub/no-such.txt")
    assert isinstance(got, dict)
    assert "'sub/no-such.txt'" in got["detail"]


def test_a_5000_character_path_is_a_validation_error_from_the_schema(tree: AttackTree) -> None:
    model = args_model_for(Settings(safe_data_dir=tree.root))
    with pytest.raises(Exception, match="at most 4096 characters") as info:
        model.model_validate({"relative_path": "a/" * 2_500}, strict=True)
    assert type(info.value).__name__ == "ValidationError"


def test_a_5000_character_path_past_the_schema_is_still_handled(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    # Defence in depth: the walk itself copes with any length (here: escapes and missing files).
    escape = outcome(root_dir, tree, "../" * 1_666 + "x")
    assert isinstance(escape, dict)
    assert escape["type"].endswith(":access-denied")
    got = outcome(root_dir, tree, "a/" * 2_499 + "a")
    assert isinstance(got, dict)
    assert got["type"].endswith(":not-found")


def test_hard_link_when_allowed_reads_the_same_file(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    # What the docs warn about: a hard link is the file itself, wherever its other names live.
    got = outcome(root_dir, tree, "hard-public", allow_hard_links=True)
    assert isinstance(got, SandboxFsReadResult)
    assert got.content == PUBLIC


def test_a_second_name_inside_the_root_is_refused_by_default(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    os.link(tree.root / "hello.txt", tree.root / "hello-again.txt")
    for name in ("hello.txt", "hello-again.txt"):
        got = outcome(root_dir, tree, name)
        assert isinstance(got, dict)
        assert "hard link" in got["detail"]


def test_fifo_returns_promptly_even_with_a_writer_waiting(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(outcome(root_dir, tree, "fifo")), daemon=True)
    worker.start()
    worker.join(10)  # a bound on a hang, not a speed check
    assert not worker.is_alive()
    assert isinstance(results[0], dict)
    assert results[0]["type"].endswith(":access-denied")


def test_device_is_refused_before_it_is_opened(
    root_dir: fdwalk.RootDir, tree: AttackTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []
    real_open = os.open

    def spy(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        opened.append(path)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    # /dev as the sandbox root: a real character device for every user (only root can make one).
    with fdwalk.open_root(Path("/dev")) as dev:
        monkeypatch.setattr(os, "open", spy)
        got = outcome(dev, tree, "zero")
    assert isinstance(got, dict)
    assert got["status"] == 403
    assert "is not a regular file" in got["detail"]
    assert "zero" not in opened


@pytest.mark.parametrize(
    ("max_bytes", "content", "truncated"),
    [
        (1, "", True),
        (2, "", True),
        (3, "", True),
        (5, "", True),
        (6, "€", True),
        (17, "€€", True),
        (18, "€€€", False),
    ],
)
def test_truncation_cuts_at_a_whole_character_counting_it_as_sent(
    root_dir: fdwalk.RootDir, tree: AttackTree, max_bytes: int, content: str, truncated: bool
) -> None:
    got = outcome(root_dir, tree, "euros.txt", max_bytes)
    assert isinstance(got, SandboxFsReadResult)
    assert (got.content, got.truncated, got.size) == (content, truncated, 9)


def test_truncation_of_a_large_file_reads_only_what_was_asked(
    root_dir: fdwalk.RootDir, tree: AttackTree
) -> None:
    (tree.root / "big.txt").write_text("z" * 3_000_000)
    got = outcome(root_dir, tree, "big.txt", 10)
    assert isinstance(got, SandboxFsReadResult)
    assert (got.content, got.truncated, got.size) == ("z" * 10, True, 3_000_000)


def test_no_descriptor_is_left_open(root_dir: fdwalk.RootDir, tree: AttackTree) -> None:
    before = descriptors_in(tree.base)
    for _ in range(3):
        for path, _ in CASES:
            outcome(root_dir, tree, path)
    assert descriptors_in(tree.base) == before


def test_root_fd_is_closed_when_the_tool_closes(tree: AttackTree) -> None:
    before = descriptors_in(tree.base)
    with open_files(Settings(safe_data_dir=tree.root)) as toolset:
        assert toolset is not None
        assert {target for _, target in descriptors_in(tree.base) - before} == {str(tree.root)}
    assert descriptors_in(tree.base) == before


async def test_tool_call_reads_through_a_worker_thread(tree: AttackTree) -> None:
    with trio.fail_after(10), open_files(Settings(safe_data_dir=tree.root)) as toolset:
        assert toolset is not None
        spec = next(t for t in toolset.tools if t.name == "sandbox_fs_read")
        args = spec.args_model.model_validate({"relative_path": "in-file"}, strict=True)
        result = await spec.call(args)
        assert isinstance(result, SandboxFsReadResult)
        assert result.content == INNER
        with pytest.raises(ProblemError) as info:
            await spec.call(spec.args_model.model_validate({"relative_path": "fifo"}))
        assert info.value.slug == "access-denied"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("fifo", "is not a regular file"),
        ("unix.sock", "is not a regular file"),
        ("loop-a", "too many symbolic links"),
        ("self-loop/x", "too many symbolic links"),
        ("sub", "is a directory"),
        ("in-dir", "is a directory"),
        ("sub/..", "names the sandbox root"),
        ("out-abs-file", "resolves outside the sandbox root"),
        ("dev-zero", "resolves outside the sandbox root"),
        ("hard-canary", "more than one hard link"),
        ("/etc/passwd", "is absolute"),
        ("hello.txt\x00", "contains a NUL byte"),
        ("sub\\inner.txt", "contains a backslash"),
        ("hello.txt/", "ends in '/'"),
    ],
)
def test_each_refusal_says_why(root_dir: fdwalk.RootDir, tree: AttackTree, path: str, reason: str) -> None:
    got = outcome(root_dir, tree, path)
    assert isinstance(got, dict)
    assert reason in got["detail"]


@pytest.mark.parametrize("call", ["lstat", "open"])
def test_permission_denied_is_access_denied(
    root_dir: fdwalk.RootDir, tree: AttackTree, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    # Root bypasses permission bits, so the kernel's EACCES is simulated at the system call.
    real = getattr(os, call)

    def refuse(path: Any, *args: Any, **kwargs: Any) -> Any:
        if path == "inner.txt" or path == "sub/inner.txt":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, call, refuse)
    got = outcome(root_dir, tree, "sub/inner.txt")
    assert isinstance(got, dict)
    assert got["type"].endswith(":access-denied")
    assert "permission denied" in got["detail"]


def test_an_unexpected_os_error_propagates_for_an_incident(
    root_dir: fdwalk.RootDir, tree: AttackTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EIO is not the caller's doing: it becomes -32603 with an incident id at the dispatcher.
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "read", broken)
    args = SandboxFsReadArgs.model_construct(relative_path="hello.txt", max_bytes=10)
    before = descriptors_in(tree.base)
    with pytest.raises(OSError) as info:
        read_sync(root_dir, args, allow_hard_links=False)
    assert info.value.errno == errno.EIO
    assert descriptors_in(tree.base) == before


async def test_a_cancelled_call_propagates_and_leaves_no_descriptor(tree: AttackTree) -> None:
    with trio.fail_after(10), open_files(Settings(safe_data_dir=tree.root)) as toolset:
        assert toolset is not None
        spec = next(t for t in toolset.tools if t.name == "sandbox_fs_read")
        args = spec.args_model.model_validate({"relative_path": "hello.txt"})
        before = descriptors_in(tree.base)
        with trio.CancelScope() as scope:
            scope.cancel()
            await spec.call(args)
        assert scope.cancelled_caught
        async with trio.open_nursery() as nursery:
            # Cancelled while its worker thread runs: the thread finishes, then Cancelled arrives.
            for _ in range(20):
                nursery.start_soon(spec.call, args)
            await trio.lowlevel.checkpoint()
            nursery.cancel_scope.cancel()
        assert descriptors_in(tree.base) == before
