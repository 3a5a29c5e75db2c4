"""The hostile tree the `sandbox_fs_read` and `sandbox_fs_list` tests read from, and its attack table.

Next to the sandbox root sit a canary file, a directory and a sibling whose name has the root's as a
prefix, all holding the canary text; no response may ever contain it. `checked_problem` checks a
problem for the canary and for absolute host paths. Shared by the unit and end-to-end tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_suite.problems import ProblemError, render_problem
from mcp_suite.tools.files import fdwalk

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
    # No device node: only root may make one (mknod). The device tests take /dev as their root.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(root / "unix.sock"))
    listener.listen(1)
    # Hard links: one to the canary outside, one to a public file outside.
    os.link(canary, root / "hard-canary")
    os.link(base / "public.txt", root / "hard-public")
    return AttackTree(base=base, root=root, canary=canary, sockets=(listener,))


def descriptors_in(base: Path, pid: int | str = "self") -> set[tuple[str, str]]:
    """The open descriptors of process `pid` that name a file or directory in `base` (the attack
    tree), as (number, target). What the walk opens is there; a count of every descriptor would
    also count the sockets, pipes and pollers other threads open and close meanwhile (a loaded
    machine shifts when), and tell a leak from them by luck."""
    found: set[tuple[str, str]] = set()
    folder = f"/proc/{pid}/fd"
    for name in os.listdir(folder):
        try:
            target = os.readlink(f"{folder}/{name}")
        except OSError:  # closed since the listing
            continue
        if target == str(base) or target.startswith(str(base) + "/"):
            found.add((name, target))
    return found


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
