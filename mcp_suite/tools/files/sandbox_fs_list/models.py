"""The argument and result models of `sandbox_fs_list` (pydantic), loaded on first use."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field

from mcp_suite.tools.files.sandbox_fs_read.models import MAX_PATH_CHARS
from mcp_suite.tools.models import StrictModel, omitted_when_none

__all__ = [
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "FsEntry",
    "SandboxFsListArgs",
    "SandboxFsListResult",
]

MAX_ENTRIES: Final = 1_000
DEFAULT_MAX_ENTRIES: Final = 200
MAX_DEPTH: Final = 8
DEFAULT_DEPTH: Final = 3


class SandboxFsListArgs(StrictModel):
    """Which directory of the sandbox folder to list, and how much of it."""

    relative_path: Annotated[str, Field(max_length=MAX_PATH_CHARS)] = ""  # the default: the folder
    max_entries: Annotated[int, Field(ge=1, le=MAX_ENTRIES)] = DEFAULT_MAX_ENTRIES
    recursive: Annotated[bool, Field(description="breadth first, max_depth levels")] = False
    max_depth: Annotated[int, Field(ge=1, le=MAX_DEPTH)] = DEFAULT_DEPTH


class FsEntry(StrictModel):
    name: Annotated[str, Field(description="Path relative to the listed directory.")]
    kind: Literal["file", "directory", "symlink", "other"]
    size: Annotated[int | None, Field(ge=0, description="Bytes, for files.")]


class SandboxFsListResult(StrictModel):
    """The entries of one directory of the sandbox folder."""

    path: str = Field(description="relative_path as given.")
    entries: list[FsEntry]
    truncated: bool = Field(description="More entries existed than returned (hint: next step)")
    hint: Annotated[str | None, omitted_when_none()] = None  # only when truncated
    # Only when names hold characters a reader cannot see (`tool.list_sync`).
    invisible: Annotated[str | None, omitted_when_none()] = None
