"""The files family's opener: `open_files(settings)` holds the sandbox root's directory fd while the
family serves, and runs each tool's blocking call on worker threads of its own (`BatchedThreads`):
`sandbox_fs_list` (`list_sync`) and `sandbox_fs_read` (`read_sync`), both on that one root.

The only module that names the two tools; it imports their faces, which import no sibling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from mcp_suite.offload import BatchedThreads
from mcp_suite.settings import Settings
from mcp_suite.tools.base import StartupRefusedError, Toolset
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.sandbox_fs_list import tool as list_tool
from mcp_suite.tools.files.sandbox_fs_read import tool as read_tool

if TYPE_CHECKING:
    from mcp_suite.tools.files.models import (
        SandboxFsListArgs,
        SandboxFsListResult,
        SandboxFsReadArgs,
        SandboxFsReadResult,
    )

__all__ = ["GUIDANCE", "READ_BATCH", "READ_THREADS", "open_files"]

# Worker threads (two: a read that hangs holds up only its own batch) and reads per batch.
READ_THREADS: Final = 2
READ_BATCH: Final = 8

GUIDANCE: Final = (
    "Files below one sandbox folder: sandbox_fs_list shows what is there, then sandbox_fs_read "
    "reads one text file."
)


@contextlib.contextmanager
def open_files(settings: Settings) -> Iterator[Toolset | None]:
    """Serve the files tools when `MCP_SAFE_DATA_DIR` is set; hold the root fd meanwhile.

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
        allow_hard_links = settings.fs_allow_hard_links

        def read(args: SandboxFsReadArgs) -> SandboxFsReadResult:
            return read_tool.read_sync(root, args, allow_hard_links=allow_hard_links)

        # Batched worker threads, not `trio.to_thread` per read: a short read costs the event loop
        # far less so (bench_fs). Closed (after the reads under way) before the root fd.
        reader = stack.enter_context(
            BatchedThreads(read, threads=READ_THREADS, max_batch=READ_BATCH, name="fs-read")
        )

        def list_dir(args: SandboxFsListArgs) -> SandboxFsListResult:
            return list_tool.list_sync(
                root, args, allow_hard_links=allow_hard_links, max_bytes=settings.fs_list_max_bytes
            )

        # Listings have their own threads: a large directory does not hold up the reads.
        lister = stack.enter_context(
            BatchedThreads(list_dir, threads=READ_THREADS, max_batch=READ_BATCH, name="fs-list")
        )
        yield Toolset(
            guidance=GUIDANCE,
            # In the order of use: list, then read.
            tools=(list_tool.spec(lister.run), read_tool.spec(settings, reader.run)),
        )
