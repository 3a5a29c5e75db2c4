"""`sandbox_fs_read`: thin async glue — args -> path policy -> fd walk in a worker thread -> text.

Owns the root directory fd, held open while the tool serves, and serves `sandbox_fs_list` (the
folder's other tool, `tools/files/sandbox_fs_list/`) from it; the argument and result models live in
`models.py` and load on first use. Every file access goes through `fdwalk`; every refusal becomes a
problem from `policy.Refusal`, whose detail never holds an absolute host path (docs/tools/sandbox_fs_read.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

import mcp_suite.tools.files.sandbox_fs_list.tool as fs_list
from mcp_suite.lazy import Lazy
from mcp_suite.offload import BatchedThreads
from mcp_suite.protocol.invisible import counted, lines_holding, listed
from mcp_suite.settings import INVISIBLE_SHOWN, Settings
from mcp_suite.tools.base import StartupRefusedError, Toolset, ToolSpec
from mcp_suite.tools.files import SCOPE, fdwalk
from mcp_suite.tools.files.policy import (
    RefusedError,
    decode_text,
    display_path,
    fit_sent_bytes,
    split_caller_path,
)

if TYPE_CHECKING:
    from mcp_suite.tools.files.sandbox_fs_list.models import SandboxFsListArgs, SandboxFsListResult
    from mcp_suite.tools.files.sandbox_fs_read.models import SandboxFsReadArgs, SandboxFsReadResult

__all__ = ["TOOL_NAME", "open_sandbox_fs_read", "read_sync"]

TOOL_NAME: Final = "sandbox_fs_read"
# Worker threads (two: a read that hangs holds up only its own batch) and reads per batch.
READ_THREADS: Final = 2
READ_BATCH: Final = 8

GUIDANCE: Final = (
    "Files below one sandbox folder: sandbox_fs_list shows what is there, then sandbox_fs_read "
    "reads one text file."
)
# What it reads and what a result carries; the order of use is the instructions' (GUIDANCE), and
# how escaped characters count against max_bytes is docs/tools/sandbox_fs_read.md's.
DESCRIPTION: Final = (
    "Read a UTF-8 text file below the sandbox folder; links are followed while they stay inside. "
    "Returns path, size (on disk), content (at most max_bytes of JSON text) and truncated."
)


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
    # max_bytes counts the text as the reply carries it (escaped), which bounds the reply frame
    # by a fixed multiple of it whatever the file holds (docs/tools/sandbox_fs_read.md, "Reply size").
    content, cut = fit_sent_bytes(content, args.max_bytes)
    # The text is returned as the file holds it; what hides in it is counted.
    characters, lines, first = lines_holding(content, INVISIBLE_SHOWN)
    invisible = None
    if characters:
        where = f"{counted(lines, 'line')}: {listed(first, lines)}"
        invisible = f"{counted(characters, 'invisible character')} on {where}"
    return _RESULT_MODEL.get().model_validate(
        {
            "path": args.relative_path,
            "size": found.size,
            "content": content,
            "truncated": found.truncated or cut,
            "invisible": invisible,
        }
    )


def _import_result_model() -> type[SandboxFsReadResult]:
    from mcp_suite.tools.files.sandbox_fs_read.models import SandboxFsReadResult

    return SandboxFsReadResult


# Imported on first use (with pydantic), and not looked up again on every read.
_RESULT_MODEL: Final = Lazy(_import_result_model)


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
        allow_hard_links = settings.fs_allow_hard_links

        def read(args: SandboxFsReadArgs) -> SandboxFsReadResult:
            return read_sync(root, args, allow_hard_links=allow_hard_links)

        # Batched worker threads, not `trio.to_thread` per read: a short read costs the event loop
        # far less so (bench_fs). Closed (after the reads under way) before the root fd.
        reader = stack.enter_context(
            BatchedThreads(read, threads=READ_THREADS, max_batch=READ_BATCH, name="fs-read")
        )

        def list_dir(args: SandboxFsListArgs) -> SandboxFsListResult:
            return fs_list.list_sync(
                root, args, allow_hard_links=allow_hard_links, max_bytes=settings.fs_list_max_bytes
            )

        # Listings have their own threads: a large directory does not hold up the reads.
        lister = stack.enter_context(
            BatchedThreads(list_dir, threads=READ_THREADS, max_batch=READ_BATCH, name="fs-list")
        )
        yield _toolset(settings, reader, lister)


def _toolset(
    settings: Settings,
    reader: BatchedThreads[SandboxFsReadArgs, SandboxFsReadResult],
    lister: BatchedThreads[SandboxFsListArgs, SandboxFsListResult],
) -> Toolset:
    def models() -> tuple[type[SandboxFsReadArgs], type[SandboxFsReadResult]]:
        from mcp_suite.tools.files.sandbox_fs_read.models import args_model_for

        return args_model_for(settings), _RESULT_MODEL.get()

    return Toolset(
        guidance=GUIDANCE,
        tools=(  # in the order of use: list, then read
            ToolSpec(
                name=fs_list.TOOL_NAME,
                title=fs_list.TITLE,
                description=fs_list.DESCRIPTION,
                models=Lazy(fs_list.models),
                call=lister.run,  # the same bounds and cancellation as reads
                scope=SCOPE,
                untrusted=True,  # names someone wrote into the folder
            ),
            ToolSpec(
                name=TOOL_NAME,
                title="Read a file from the sandbox folder",
                description=DESCRIPTION,
                models=Lazy(models),
                # Cancellation: a read not yet started is dropped; a running one is waited for (it
                # is bounded: max_bytes, and no FIFO can block it), so nothing is left behind.
                call=reader.run,
                scope=SCOPE,
                untrusted=True,  # file text
            ),
        ),
    )
