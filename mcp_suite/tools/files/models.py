"""The files family's argument and result models (pydantic): `sandbox_fs_read`'s, whose `max_bytes`
bound comes from settings (`args_model_for`: it enforces the bound; the advertised schema shows the
default it sets), and `sandbox_fs_list`'s, with the path bound both share (`MAX_PATH_CHARS`).

Loaded only through the family's one deferred import (`tools.files.MODELS`), after the handshake or
by the first call: a tool face imports it for types only. Imports no tool; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import Field, create_model

from mcp_suite.settings import highest_of
from mcp_suite.tools.models import StrictModel, omitted_when_none

if TYPE_CHECKING:
    from mcp_suite.settings import Settings

__all__ = [
    "DEFAULT_MAX_BYTES",
    "LOADED",
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "MAX_PATH_CHARS",
    "FilesModels",
    "FsEntry",
    "SandboxFsListArgs",
    "SandboxFsListResult",
    "SandboxFsReadArgs",
    "SandboxFsReadResult",
    "args_model_for",
]

MAX_PATH_CHARS: Final = 4_096
# The default answer fits the clients' limits: 3 x 20,000 bytes at most, about 20,000 tokens
# (docs/configuration.md, "Answers and tokens").
DEFAULT_MAX_BYTES: Final = 20_000
# The largest MCP_FS_MAX_BYTES settings accept; the per-settings model narrows it.
_MAX_BYTES_CEILING: Final[int] = highest_of("fs_max_bytes")

# What a model needs to write a path; what it may not be (absolute, backslashes, outside the
# folder) is told by the refusal that meets it.
_PATH_DESCRIPTION: Final = "'/' between parts, e.g. data/cities.csv"


# Arguments of `sandbox_fs_read` (docs/tools/); the server validates with `args_model_for(settings)`.
# The result model's docstring is its outputSchema's `description`; the arguments' is left out of
# the inputSchema (`AdvertisedJsonSchema`: the tool's description says what they are for).
class SandboxFsReadArgs(StrictModel):
    """Which file to read, relative to the sandbox folder, and at most how many bytes of it."""

    relative_path: Annotated[
        str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=_PATH_DESCRIPTION)
    ]
    # Counted as the reply carries the text, escapes included (docs/tools/sandbox_fs_read.md).
    max_bytes: Annotated[int, Field(ge=1, le=_MAX_BYTES_CEILING)] = DEFAULT_MAX_BYTES


class SandboxFsReadResult(StrictModel):
    """The text of one file from the sandbox folder."""

    path: str = Field(description="relative_path as given.")
    size: int = Field(ge=0, description="Bytes on disk.")
    content: str = Field(description="The text, at most max_bytes bytes as sent in JSON.")
    truncated: bool = Field(description="The file holds more than content.")
    # Only when content holds characters a reader cannot see (`invisible.lines_holding`).
    invisible: Annotated[str | None, omitted_when_none("Hidden characters: how many, which lines")] = None


def args_model_for(settings: Settings) -> type[SandboxFsReadArgs]:
    """The args model whose `max_bytes` maximum (and default, if lower) is `MCP_FS_MAX_BYTES`."""
    limit = settings.fs_max_bytes
    model: type[SandboxFsReadArgs] = create_model(
        "SandboxFsReadArgs",
        __base__=SandboxFsReadArgs,
        __doc__=SandboxFsReadArgs.__doc__,
        max_bytes=(
            int,
            Field(default=min(DEFAULT_MAX_BYTES, limit), ge=1, le=limit),
        ),
    )
    return model


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
    # Only when names hold characters a reader cannot see (`sandbox_fs_list.tool.list_sync`).
    invisible: Annotated[str | None, omitted_when_none()] = None


@dataclass(frozen=True, slots=True)
class FilesModels:
    """What the tool faces take from this module (through `tools.files.MODELS`)."""

    read_args_for: Callable[[Settings], type[SandboxFsReadArgs]]
    read_result: type[SandboxFsReadResult]
    list_args: type[SandboxFsListArgs]
    list_result: type[SandboxFsListResult]
    list_entry: type[FsEntry]
    max_entries: int


LOADED: Final = FilesModels(
    read_args_for=args_model_for,
    read_result=SandboxFsReadResult,
    list_args=SandboxFsListArgs,
    list_result=SandboxFsListResult,
    list_entry=FsEntry,
    max_entries=MAX_ENTRIES,
)
