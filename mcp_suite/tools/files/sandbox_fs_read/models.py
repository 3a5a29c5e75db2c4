"""The argument and result models of `sandbox_fs_read` (pydantic), loaded on first use.

The `max_bytes` bound comes from settings, so the args model is built per settings
(`args_model_for`): it enforces the bound; the advertised schema shows the default it sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Final

from pydantic import Field, create_model

from mcp_suite.tools.models import StrictModel, omitted_when_none

if TYPE_CHECKING:
    from mcp_suite.settings import Settings

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_PATH_CHARS",
    "SandboxFsReadArgs",
    "SandboxFsReadResult",
    "args_model_for",
]

MAX_PATH_CHARS: Final = 4_096
# The default answer fits the clients' limits: 3 x 20,000 bytes at most, about 20,000 tokens
# (docs/configuration.md, "Answers and tokens").
DEFAULT_MAX_BYTES: Final = 20_000
# The largest MCP_FS_MAX_BYTES settings accept; the per-settings model narrows it.
_MAX_BYTES_CEILING: Final = 16_777_216

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
