"""The attack suite for `sandbox_fs_read`, table-driven, over a real temporary tree (docs/tools/).

Next to the root sit a canary file, a directory and a sibling whose name has the root's as a prefix,
all holding the canary text; no response may ever contain it. Every problem is also checked for
absolute host paths. Tests run as root in CI, so nothing here relies on permission bits.
`build_attack_tree` is shared with the end-to-end tests.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import stat
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_suite.problems import ProblemError, render_problem
from mcp_suite.settings import Settings
from mcp_suite.tools.sandbox_fs_read import fdwalk
from mcp_suite.tools.sandbox_fs_read.models import SandboxFsReadArgs, SandboxFsReadResult, args_model_for
from mcp_suite.tools.sandbox_fs_read.tool import open_sandbox_fs_read, read_sync

CANARY = "CANARY-" + uuid.uuid4().hex
HELLO = "hello from inside the sandbox\n"
INNER = "inner file\n"
PUBLIC = "a public file outside the root\n"


@dataclass(frozen=True)
class AttackTree:
    base: Path  # holds everything below
    root: Path  # the sandbox root
    canary: Path  # outside the root
    sockets: tuple[socket.socket, ...]


def build_attack_tree(base: Path) -> AttackTree:
    """Create the sandbox root and its hostile neighbourhood below `base`."""
    root = base / "sandbox"
    outside = base / "outside"
    sibling = base / "sandboxx"  # shares the root's name as a prefix: "…/sandbox" vs "…/sandboxx"
    for directory in (root, outside, sibling, root / "sub" / "deeper"):
        directory.mkdir(parents=True)
    canary = base / "canary.txt"
    canary.write_text(CANARY)
    (outside / "secret.txt").write_text(CANARY)
    (sibling / "secret.txt").write_text(CANARY)
    (base / "public.txt").write_text(PUBLIC)

    (root / "hello.txt").write_text(HELLO)
    (root / "sub" / "inner.txt").write_text(INNER)
    (root / "sub" / "deeper" / "x.txt").write_text("x\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    (root / "ends-mid-char.txt").write_bytes("ab€".encode()[:-1])
    (root / "euros.txt").write_text("€€€")
    (root / "%2e%2e").mkdir()
    (root / "%2e%2e" / "literal.txt").write_text("percent taken literally\n")
    (root / "a\\b.txt").write_text("a file whose name holds a backslash\n")

    links = {
        "out-abs-file": str(canary),
        "out-rel-file": "../canary.txt",
        "out-abs-dir": str(outside),
        "out-rel-dir": "../outside",
        "out-sibling-abs": str(sibling),
        "out-sibling-rel": "../sandboxx",
        "chain-1": "chain-2",
        "chain-2": "sub/chain-3",
        "in-file": "sub/inner.txt",
        "in-dir": "sub",
        "in-abs-file": str(root / "sub" / "inner.txt"),
        "in-abs-dir": str(root / "sub"),
        "in-up-and-back": "sub/../hello.txt",
        "loop-a": "loop-b",
        "loop-b": "loop-a",
        "self-loop": "self-loop",
        "dev-zero": "/dev/zero",
        "proc-root": "/proc/self/root",
        "proc-cwd": "/proc/self/cwd",
        "dangling-in": "no-such-file.txt",
        "dangling-out": "../no-such-file.txt",
        "to-root": ".",
        "to-slash": "/",
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    (root / "sub" / "chain-3").symlink_to("../../canary.txt")
    (root / "sub" / "up").symlink_to("..")  # back to the root: allowed
    (root / "sub" / "upup").symlink_to("../..")  # the root's parent: outside

    os.mkfifo(root / "fifo")
    os.mknod(root / "zero-device", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(root / "unix.sock"))
    listener.listen(1)
    # Hard links: one to the canary outside, one to a public file outside.
    os.link(canary, root / "hard-canary")
    os.link(base / "public.txt", root / "hard-public")
    return AttackTree(base=base, root=root, canary=canary, sockets=(listener,))


@contextlib.contextmanager
def attack_tree(base: Path) -> Iterator[AttackTree]:
    tree = build_attack_tree(base)
    try:
        yield tree
    finally:
        for sock in tree.sockets:
            sock.close()


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[AttackTree]:
    with attack_tree(tmp_path) as built:
        yield built


@pytest.fixture
def root_dir(tree: AttackTree) -> Iterator[fdwalk.RootDir]:
    with fdwalk.open_root(tree.root) as root:
        yield root


# A token starting with "/" (after the start, a blank, a quote, a bracket, "=" or ":") is an absolute
# path; relative paths the caller gave ("sub/inner.txt") may be echoed.
_ABSOLUTE = re.compile(r"(?:^|[\s'\"(\[=:])/[\w.~-]")


def assert_no_host_path(document: dict[str, Any], tree: AttackTree) -> None:
    text = json.dumps(document, ensure_ascii=False)
    assert str(tree.base) not in text
    assert str(tree.root) not in text
    assert "/tmp" not in text
    for value in (document["detail"], document["title"], *document["metadata"].values()):
        assert not _ABSOLUTE.search(str(value)), value


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


def checked_problem(exc: ProblemError, tree: AttackTree) -> dict[str, Any]:
    """The rendered problem, checked: no host path, no canary."""
    document = render_problem(exc)
    assert_no_host_path(document, tree)
    assert CANARY not in json.dumps(document)
    return document


DENIED = "access-denied"
MISSING = "not-found"
UNSUPPORTED = "unsupported-content"

# (caller path, expected): expected is the content read, or the problem slug.
CASES: list[tuple[str, str]] = [
    # plain reads inside the root
    ("hello.txt", HELLO),
    ("sub/inner.txt", INNER),
    # ".." in every position
    ("..", DENIED),
    ("../canary.txt", DENIED),
    ("../sandbox/hello.txt", DENIED),  # climbing above the root is refused even to come back
    ("../sandboxx/secret.txt", DENIED),
    ("sub/..", DENIED),  # the root itself
    ("sub/../hello.txt", HELLO),
    ("sub/../../canary.txt", DENIED),
    ("sub/deeper/../../hello.txt", HELLO),
    ("sub/deeper/../../../canary.txt", DENIED),
    ("sub/deeper/../../../../../../../../etc/passwd", DENIED),
    ("hello.txt/..", DENIED),  # lexically the root: a directory
    ("hello.txt/../sub/inner.txt", INNER),  # `..` pops lexically, as realpath does
    ("hello.txt/x/..", HELLO),  # the same: back to the file
    ("no-such/../hello.txt", HELLO),
    ("no-such/../../canary.txt", DENIED),
    ("./../canary.txt", DENIED),
    ("sub/./../hello.txt", HELLO),
    ("in-dir/../hello.txt", HELLO),  # physical "..": in-dir -> sub, sub/.. -> root
    ("in-dir/../../canary.txt", DENIED),
    # absolute paths, even ones that name a file inside the root
    ("/etc/passwd", DENIED),
    ("/", DENIED),
    ("//etc/passwd", DENIED),
    ("/proc/self/root" + "/etc/passwd", DENIED),  # procfs's view of "/" (written in two parts)
    # doubled, trailing and dot components
    ("sub//inner.txt", INNER),
    ("sub///deeper//x.txt", "x\n"),
    ("hello.txt/", DENIED),
    ("sub/", DENIED),
    (".", DENIED),
    ("./", DENIED),
    ("./hello.txt", HELLO),
    ("sub/./inner.txt", INNER),
    ("././././hello.txt", HELLO),
    # backslashes are not separators, and are refused
    ("..\\canary.txt", DENIED),
    ("sub\\inner.txt", DENIED),
    ("a\\b.txt", DENIED),
    ("C:\\Windows\\win.ini", DENIED),
    # percent-encodings are taken literally
    ("%2e%2e/canary.txt", MISSING),
    ("%2e%2e%2fcanary.txt", MISSING),
    ("%2e%2e/literal.txt", "percent taken literally\n"),
    ("..%2fcanary.txt", MISSING),
    ("%2F..%2F..%2Fcanary.txt", MISSING),
    # NUL bytes
    ("hello.txt\x00", DENIED),
    ("hello.txt\x00.png", DENIED),
    ("\x00../canary.txt", DENIED),
    # symlinks to outside: absolute and relative, files and directories, chained
    ("out-abs-file", DENIED),
    ("out-rel-file", DENIED),
    ("out-abs-dir/secret.txt", DENIED),
    ("out-rel-dir/secret.txt", DENIED),
    ("out-rel-dir/no-such.txt", DENIED),
    ("out-rel-dir/../sandbox/hello.txt", DENIED),  # passing outside, even to come back
    ("out-sibling-abs/secret.txt", DENIED),
    ("out-sibling-rel/secret.txt", DENIED),
    ("chain-1", DENIED),
    ("sub/chain-3", DENIED),
    ("sub/upup/canary.txt", DENIED),
    ("sub/upup/sandbox/hello.txt", DENIED),
    ("dangling-out", DENIED),
    # symlinks that stay inside are followed
    ("in-file", INNER),
    ("in-dir/inner.txt", INNER),
    ("in-abs-file", INNER),
    ("in-abs-dir/inner.txt", INNER),
    ("in-up-and-back", HELLO),
    ("sub/up/hello.txt", HELLO),
    ("sub/up/sub/up/sub/inner.txt", INNER),
    ("to-root/hello.txt", HELLO),
    ("to-root", DENIED),  # the root: a directory
    ("to-slash", DENIED),
    ("to-slash/etc/passwd", DENIED),
    ("dangling-in", MISSING),
    # symlink loops
    ("loop-a", DENIED),
    ("self-loop", DENIED),
    ("self-loop/x", DENIED),
    # special files, also reached through links
    ("fifo", DENIED),
    ("unix.sock", DENIED),
    ("zero-device", DENIED),
    ("dev-zero", DENIED),
    ("proc-root/etc/passwd", DENIED),
    ("proc-root", DENIED),
    ("proc-cwd/canary.txt", DENIED),
    # directories as the leaf
    ("sub", DENIED),
    ("in-dir", DENIED),
    ("in-abs-dir", DENIED),
    # hard links are refused unless the operator allows them (see the docs)
    ("hard-canary", DENIED),
    ("hard-public", DENIED),
    # content
    ("latin1.txt", UNSUPPORTED),
    ("ends-mid-char.txt", UNSUPPORTED),
    ("empty.txt", ""),
    ("euros.txt", "€€€"),
    # missing inside the root, a file used as a directory
    ("no-such.txt", MISSING),
    ("sub/no-such.txt", MISSING),
    ("no-such/deeper/x.txt", MISSING),
    ("hello.txt/x", MISSING),
    ("x" * 300, MISSING),  # longer than NAME_MAX: cannot exist
    # missing outside the root: denied, like existing ones
    ("../no-such.txt", DENIED),
    ("../outside/no-such.txt", DENIED),
    ("/etc/no-such-file", DENIED),
]


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

    monkeypatch.setattr(os, "open", spy)
    got = outcome(root_dir, tree, "zero-device")
    assert isinstance(got, dict)
    assert "zero-device" not in opened


@pytest.mark.parametrize(
    ("max_bytes", "content", "truncated"),
    [(1, "", True), (2, "", True), (3, "€", True), (4, "€", True), (6, "€€", True), (9, "€€€", False)],
)
def test_truncation_cuts_at_a_whole_character(
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
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        for path, _ in CASES:
            outcome(root_dir, tree, path)
    assert len(os.listdir("/proc/self/fd")) == before


def test_root_fd_is_closed_when_the_tool_closes(tree: AttackTree) -> None:
    before = len(os.listdir("/proc/self/fd"))
    with open_sandbox_fs_read(Settings(safe_data_dir=tree.root)) as toolset:
        assert toolset is not None
        assert len(os.listdir("/proc/self/fd")) == before + 1
    assert len(os.listdir("/proc/self/fd")) == before


async def test_tool_call_reads_through_a_worker_thread(tree: AttackTree) -> None:
    with trio.fail_after(10), open_sandbox_fs_read(Settings(safe_data_dir=tree.root)) as toolset:
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
        ("zero-device", "is not a regular file"),
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
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError) as info:
        read_sync(root_dir, args, allow_hard_links=False)
    assert info.value.errno == errno.EIO
    assert len(os.listdir("/proc/self/fd")) == before


async def test_a_cancelled_call_propagates_and_leaves_no_descriptor(tree: AttackTree) -> None:
    with trio.fail_after(10), open_sandbox_fs_read(Settings(safe_data_dir=tree.root)) as toolset:
        assert toolset is not None
        spec = next(t for t in toolset.tools if t.name == "sandbox_fs_read")
        args = spec.args_model.model_validate({"relative_path": "hello.txt"})
        before = len(os.listdir("/proc/self/fd"))
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
        assert len(os.listdir("/proc/self/fd")) == before
