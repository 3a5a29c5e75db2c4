"""`sandbox_fs_list`: the entries of one directory below the sandbox root (name, kind, size).

Served by `sandbox_fs_read`'s toolset (the same root fd, its own worker threads): the directory is
opened by `sandbox_fs_read.fdwalk`, still the only code that opens a path a caller chose, and every
refusal is a `Refusal` of that tool's policy, so nothing about anything outside the root can show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy
from mcp_suite.tools.sandbox_fs_read import fdwalk
from mcp_suite.tools.sandbox_fs_read.policy import RefusedError, display_path, split_directory_path

if TYPE_CHECKING:
    from mcp_suite.tools.sandbox_fs_list.models import FsEntry, SandboxFsListArgs, SandboxFsListResult

__all__ = ["DESCRIPTION", "TITLE", "TOOL_NAME", "list_sync", "models"]

TOOL_NAME: Final = "sandbox_fs_list"
TITLE: Final = "List a folder of the sandbox"
DESCRIPTION: Final = (
    "List one directory below the sandbox folder: each entry's name, kind (file, directory, "
    "symlink, other) and size. Use it first to find the files to read with sandbox_fs_read. "
    "`recursive` goes down `max_depth` levels; `truncated` says more entries existed. Links are "
    "shown, not followed."
)


def list_sync(
    root: fdwalk.RootDir, args: SandboxFsListArgs, *, allow_hard_links: bool
) -> SandboxFsListResult:
    """The whole call, blocking (run it in a worker thread). Raises a `ProblemError` on refusal."""
    try:
        parts = split_directory_path(args.relative_path)
        listing = fdwalk.list_directory(
            root,
            parts,
            max_entries=args.max_entries,
            depth=args.max_depth if args.recursive else 1,
            allow_hard_links=allow_hard_links,
        )
    except RefusedError as exc:
        raise exc.refusal.problem(display_path(args.relative_path)) from None
    result, entry = _RESULT_MODELS.get()
    return result.model_construct(
        path=args.relative_path,
        entries=[entry.model_construct(name=e.name, kind=e.kind, size=e.size) for e in listing.entries],
        truncated=listing.truncated,
    )


def models() -> tuple[type[SandboxFsListArgs], type[SandboxFsListResult]]:
    from mcp_suite.tools.sandbox_fs_list.models import SandboxFsListArgs

    return SandboxFsListArgs, _RESULT_MODELS.get()[0]


def _import_result_models() -> tuple[type[SandboxFsListResult], type[FsEntry]]:
    from mcp_suite.tools.sandbox_fs_list.models import FsEntry, SandboxFsListResult

    return SandboxFsListResult, FsEntry


_RESULT_MODELS: Final = Lazy(_import_result_models)
