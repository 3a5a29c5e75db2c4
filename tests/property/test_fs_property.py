"""Hypothesis: over generated trees of files, directories and links, and generated relative paths,
every `sandbox_fs_read` answer is the text of a regular file inside the root, or a problem — never
the canary — and agrees with `os.path.realpath` as an independent oracle:

- a success is a regular file that realpath also places inside the root, with the same text;
- a path that realpath places outside the root is access-denied (never a read, never not-found);
- not-found only when realpath's answer does not exist;
- no problem holds an absolute host path.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from mcp_suite.problems import ProblemError, render_problem
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import SandboxFsReadArgs
from mcp_suite.tools.files.sandbox_fs_read.tool import read_sync
from tests.support.properties import security_property

CANARY = "CANARY-" + uuid.uuid4().hex
NAMES = ("a", "b", "c")
_ABSOLUTE = re.compile(r"(?:^|[\s'\"(\[=:])/[\w.~-]")

# A relative spelling built from these tokens; link targets and caller paths use the same ones.
tokens = st.sampled_from([*NAMES, "..", ".", "", "canary.txt", "outside", "root", "rootx"])
relative = st.lists(tokens, min_size=1, max_size=6).map("/".join)

# Where a link may point: relative spellings, or absolute ones into the outside or the root.
link_targets = st.one_of(
    relative,
    st.tuples(st.sampled_from(["{base}", "{base}/outside", "{root}", "/", "/proc/self"]), relative).map(
        lambda pair: pair[0] + "/" + pair[1]
    ),
)

entry = st.tuples(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(tuple),
    st.sampled_from(["file", "dir", "link", "bad-utf8", "fifo"]),
    link_targets,
)


def build(base: Path, entries: list[tuple[tuple[str, ...], str, str]]) -> Path:
    root = base / "root"
    root.mkdir()
    (base / "canary.txt").write_text(CANARY)
    outside = base / "outside"
    outside.mkdir()
    sibling = base / "rootx"  # its name has the root's as a prefix
    sibling.mkdir()
    for name in NAMES:
        (outside / name).write_text(CANARY)
        (sibling / name).write_text(CANARY)
    for parts, kind, target in entries:
        path = root.joinpath(*parts)
        parent = path.parent
        try:
            if os.path.lexists(path) or not (parent.is_dir() and not parent.is_symlink()):
                continue
            if not str(parent.resolve()).startswith(str(root)):
                continue
        except PermissionError:  # through a link into a directory this user may not search (/root)
            continue
        if kind == "file":
            path.write_text("file " + "/".join(parts) + " ü\n")
        elif kind == "dir":
            path.mkdir()
        elif kind == "bad-utf8":
            path.write_bytes(b"\xff\xfe not text")
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to(target.format(base=base, root=root) or ".")
    return root


def _is_inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + "/")


@security_property
@given(st.lists(entry, max_size=14), st.lists(relative, min_size=1, max_size=8))
# A link to /root, then an entry below it: a user (not root) may not even look there.
@example(entries=[(("b",), "link", "//root"), (("b", "a", "a"), "file", "a")], paths=["b/a/a", "b"])
def test_answers_are_inside_files_or_problems_never_the_canary(
    entries: list[tuple[tuple[str, ...], str, str]], paths: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch).resolve()
        root = build(base, entries)
        with fdwalk.open_root(root) as root_dir:
            for raw in paths:
                check_one(root_dir, base, root, raw)


def check_one(root_dir: fdwalk.RootDir, base: Path, root: Path, raw: str) -> None:
    oracle = os.path.realpath(os.path.join(root, raw))
    args = SandboxFsReadArgs.model_construct(relative_path=raw, max_bytes=4_096)
    try:
        result = read_sync(root_dir, args, allow_hard_links=False)
    except ProblemError as exc:
        document = render_problem(exc)
        text = json.dumps(document)
        assert CANARY not in text
        assert str(base) not in text
        assert not _ABSOLUTE.search(document["detail"]), document
        if not _is_inside(oracle, root):
            assert exc.slug == "access-denied", (raw, document)
        if exc.slug == "not-found":
            assert not os.path.lexists(oracle), (raw, oracle)
        return
    assert CANARY not in result.content
    assert _is_inside(oracle, root), (raw, oracle)
    assert os.path.isfile(oracle)
    assert not os.path.islink(oracle)
    assert Path(oracle).read_text() == result.content
