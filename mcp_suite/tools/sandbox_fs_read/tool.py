"""`sandbox_fs_read`: thin async glue — args -> path policy -> fd walk in a worker thread -> text.

Owns the argument and result models (the `max_bytes` bound comes from settings, so the args model
is built per settings and the advertised schema shows it) and the root directory fd, held open while
the tool serves. Every file access goes through `fdwalk`; every refusal becomes a problem from
`policy.Refusal`, whose detail never holds an absolute host path (SPEC §6.2).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Final

import trio
from pydantic import Field, create_model

from mcp_suite.settings import Settings
from mcp_suite.tools.base import StartupRefusedError, StrictModel, Toolset, ToolSpec
from mcp_suite.tools.sandbox_fs_read import fdwalk
from mcp_suite.tools.sandbox_fs_read.policy import (
    RefusedError,
    decode_text,
    display_path,
    split_caller_path,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_PATH_CHARS",
    "TOOL_NAME",
    "SandboxFsReadArgs",
    "SandboxFsReadResult",
    "args_model_for",
    "open_sandbox_fs_read",
    "read_sync",
]

TOOL_NAME: Final = "sandbox_fs_read"
MAX_PATH_CHARS: Final = 4_096
DEFAULT_MAX_BYTES: Final = 65_536
# The largest MCP_FS_MAX_BYTES settings accept; the per-settings model narrows it.
_MAX_BYTES_CEILING: Final = 16_777_216

DESCRIPTION: Final = (
    "Read one UTF-8 text file below the server's sandbox folder. `relative_path` is relative to "
    "that folder, with '/' between components (for example 'README.md' or 'data/cities.csv'). "
    "Symbolic links are followed only while they stay inside the folder; anything that leads "
    "outside it, a directory, a FIFO, a socket or a device is refused. At most `max_bytes` bytes "
    "are returned (cut at a whole character); `truncated` says the file holds more."
)

_PATH_DESCRIPTION: Final = (
    "Path of a file relative to the sandbox folder, components separated by '/'. Absolute paths, "
    "backslashes and paths leading outside the folder are refused."
)
_MAX_BYTES_DESCRIPTION: Final = (
    "Return at most this many bytes of the file (the text is cut at a whole UTF-8 character)."
)


# Arguments of `sandbox_fs_read` (SPEC §6.2); the server validates with `args_model_for(settings)`.
# The docstrings of both models become the `description` of the advertised schemas.
class SandboxFsReadArgs(StrictModel):
    """Which file to read, relative to the sandbox folder, and at most how many bytes of it."""

    relative_path: Annotated[
        str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=_PATH_DESCRIPTION)
    ]
    max_bytes: Annotated[int, Field(ge=1, le=_MAX_BYTES_CEILING, description=_MAX_BYTES_DESCRIPTION)] = (
        DEFAULT_MAX_BYTES
    )


class SandboxFsReadResult(StrictModel):
    """The text of one file from the sandbox folder."""

    path: str = Field(description="The relative path as the caller gave it.")
    size: int = Field(ge=0, description="Size of the file on disk, in bytes.")
    content: str = Field(description="The file's text (UTF-8), at most max_bytes bytes of it.")
    truncated: bool = Field(description="True when the file holds more than max_bytes bytes.")


def args_model_for(settings: Settings) -> type[SandboxFsReadArgs]:
    """The args model whose `max_bytes` maximum (and default, if lower) is `MCP_FS_MAX_BYTES`."""
    limit = settings.fs_max_bytes
    model: type[SandboxFsReadArgs] = create_model(
        "SandboxFsReadArgs",
        __base__=SandboxFsReadArgs,
        __doc__=SandboxFsReadArgs.__doc__,
        max_bytes=(
            int,
            Field(
                default=min(DEFAULT_MAX_BYTES, limit),
                ge=1,
                le=limit,
                description=_MAX_BYTES_DESCRIPTION,
            ),
        ),
    )
    return model


def read_sync(
    root: fdwalk.RootDir, args: SandboxFsReadArgs, *, allow_hard_links: bool
) -> SandboxFsReadResult:
    """The whole call, blocking (run it in a worker thread). Raises a `ProblemError` on refusal."""
    try:
        parts = split_caller_path(args.relative_path)
        found = fdwalk.read_file(root, parts, args.max_bytes, allow_hard_links=allow_hard_links)
        content = decode_text(found.data, truncated=found.truncated)
    except RefusedError as exc:
        raise exc.refusal.problem(display_path(args.relative_path)) from None
    return SandboxFsReadResult(
        path=args.relative_path, size=found.size, content=content, truncated=found.truncated
    )


@contextlib.contextmanager
def open_sandbox_fs_read(settings: Settings) -> Iterator[Toolset | None]:
    """Serve `sandbox_fs_read` when `MCP_SAFE_DATA_DIR` is set; hold the root fd meanwhile.

    Raises `StartupRefusedError` when the root cannot be opened as a directory or is `/`.
    """
    if settings.safe_data_dir is None:
        yield None
        return
    with contextlib.ExitStack() as stack:
        try:
            root = stack.enter_context(fdwalk.open_root(settings.safe_data_dir))
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise StartupRefusedError(
                f"MCP_SAFE_DATA_DIR cannot serve as the sandbox root: {reason}. "
                "Point it at an existing directory other than '/'."
            ) from None
        yield _toolset(settings, root)


def _toolset(settings: Settings, root: fdwalk.RootDir) -> Toolset:
    allow_hard_links = settings.fs_allow_hard_links
    # Worker threads for file reads, apart from trio's shared default limiter; no more than the
    # calls that may run at once.
    limiter = trio.CapacityLimiter(settings.max_concurrency)

    async def call(args: SandboxFsReadArgs) -> SandboxFsReadResult:
        # Cancellation: not abandoned — the read is bounded (max_bytes, no FIFO can block it), so
        # the call waits for its thread and leaves no work or descriptor behind.
        return await trio.to_thread.run_sync(_read_in_thread, root, args, allow_hard_links, limiter=limiter)

    return Toolset(
        tools=(
            ToolSpec(
                name=TOOL_NAME,
                title="Read a file from the sandbox folder",
                description=DESCRIPTION,
                args_model=args_model_for(settings),
                result_model=SandboxFsReadResult,
                call=call,
            ),
        )
    )


def _read_in_thread(
    root: fdwalk.RootDir, args: SandboxFsReadArgs, allow_hard_links: bool
) -> SandboxFsReadResult:
    return read_sync(root, args, allow_hard_links=allow_hard_links)
