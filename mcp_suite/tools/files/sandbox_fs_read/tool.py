"""`sandbox_fs_read`: thin async glue — args -> path policy -> fd walk in a worker thread -> text.

Declares the tool (`spec`) and its blocking call (`read_sync`); opened with `sandbox_fs_list` by the
family's opener (`tools/files/opener.py`, which holds the root fd), never importing it. Its models
are the family's (`tools/files/models.py`). Every file access goes through `fdwalk`; every refusal
becomes a problem from `policy.Refusal`, whose detail never holds an absolute host path
(docs/tools/sandbox_fs_read.md).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy
from mcp_suite.settings import INVISIBLE_SHOWN
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.files import MODELS, SCOPE, fdwalk
from mcp_suite.tools.files.policy import (
    RefusedError,
    decode_text,
    display_path,
    fit_sent_bytes,
    split_caller_path,
)
from mcp_suite.tools.text import counted, lines_holding, listed

if TYPE_CHECKING:
    from mcp_suite.settings import Settings
    from mcp_suite.tools.files.models import SandboxFsReadArgs, SandboxFsReadResult

__all__ = ["DESCRIPTION", "TOOL_NAME", "models", "read_sync", "spec"]

TOOL_NAME: Final = "sandbox_fs_read"

# What it reads and what a result carries; the order of use is the instructions' (`opener.GUIDANCE`), and
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
    return MODELS.get().read_result.model_validate(
        {
            "path": args.relative_path,
            "size": found.size,
            "content": content,
            "truncated": found.truncated or cut,
            "invisible": invisible,
        }
    )


def models(settings: Settings) -> tuple[type[SandboxFsReadArgs], type[SandboxFsReadResult]]:
    """The tool's (arguments, result) models, `max_bytes` bound by settings (the family's `MODELS`)."""
    loaded = MODELS.get()
    return loaded.read_args_for(settings), loaded.read_result


def spec(settings: Settings, run: Callable[[SandboxFsReadArgs], Awaitable[SandboxFsReadResult]]) -> ToolSpec:
    """The tool, `run` serving its calls (`read_sync` on the family's worker threads)."""
    return ToolSpec(
        name=TOOL_NAME,
        title="Read a file from the sandbox folder",
        description=DESCRIPTION,
        models=Lazy(functools.partial(models, settings)),
        # Cancellation: a read not yet started is dropped; a running one is waited for (it
        # is bounded: max_bytes, and no FIFO can block it), so nothing is left behind.
        call=run,
        scope=SCOPE,
        untrusted=True,  # file text
    )
