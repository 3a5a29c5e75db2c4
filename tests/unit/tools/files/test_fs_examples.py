"""The examples folder `make run` serves: every file in it is readable through the tool."""

from __future__ import annotations

from pathlib import Path

from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import SandboxFsReadArgs
from mcp_suite.tools.files.sandbox_fs_read.tool import read_sync

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "safe_data"


def test_every_example_file_reads_as_text() -> None:
    names = sorted(str(path.relative_to(EXAMPLES)) for path in EXAMPLES.rglob("*") if not path.is_dir())
    assert {"README.md", "data/cities.csv", "latest-notes.md"} <= set(names)
    with fdwalk.open_root(EXAMPLES) as root:
        for name in names:
            args = SandboxFsReadArgs.model_construct(relative_path=name, max_bytes=65_536)
            result = read_sync(root, args, allow_hard_links=False)
            assert result.content == (EXAMPLES / name).read_text(encoding="utf-8")
            assert result.truncated is False


def test_the_example_link_stays_inside() -> None:
    link = EXAMPLES / "latest-notes.md"
    assert link.is_symlink()
    assert link.resolve().is_relative_to(EXAMPLES)
