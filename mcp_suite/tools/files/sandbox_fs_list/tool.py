"""`sandbox_fs_list`: the entries of one directory below the sandbox root (name, kind, size).

Declares the tool (`spec`) and its blocking call (`list_sync`); opened with `sandbox_fs_read` by the
family's opener (`tools/files/opener.py`: the same root fd, its own worker threads), never importing
it. The directory is opened by the family's `fdwalk`, still the only code that opens a path a caller
chose, and every refusal is a `Refusal` of the family's policy, so nothing outside the root can show.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final

from mcp_suite.lazy import Lazy
from mcp_suite.problems import ResultTooLargeError
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.settings import INVISIBLE_SHOWN
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.files import MODELS, SCOPE, fdwalk
from mcp_suite.tools.files.policy import RefusedError, display_path, split_directory_path
from mcp_suite.tools.text import count_invisible, counted, listed

if TYPE_CHECKING:
    from mcp_suite.tools.files.models import SandboxFsListArgs, SandboxFsListResult

__all__ = [
    "DESCRIPTION",
    "HINT_BYTES",
    "TITLE",
    "TOOL_NAME",
    "fit_entries",
    "list_sync",
    "listing_hint",
    "models",
    "report_bytes",
    "spec",
]

# The answer's own members around the entries and the path:
# {"path":...,"entries":[],"truncated":false}, with room to spare.
_ENVELOPE_BYTES: Final = 64
# Room the cap keeps for a truncated listing's hint (`listing_hint` as JSON, at most this long:
# tests/unit/tools/files/test_fs_list_size.py).
HINT_BYTES: Final = 220

TOOL_NAME: Final = "sandbox_fs_list"
TITLE: Final = "List a folder of the sandbox"
# What it lists and what a result carries; the order of use is the instructions' (`opener.GUIDANCE`).
DESCRIPTION: Final = (
    "List a directory below the sandbox folder. Returns path, entries [{name, kind, size}] and "
    "truncated; a truncated listing's hint says how to list the rest. Links are shown, not followed."
)


def list_sync(
    root: fdwalk.RootDir, args: SandboxFsListArgs, *, allow_hard_links: bool, max_bytes: int
) -> SandboxFsListResult:
    """The whole call, blocking (run it in a worker thread). Raises a `ProblemError` on refusal.

    Limits: the entries returned are those whose JSON, with the rest of the answer, fits in
    `max_bytes` (`MCP_FS_LIST_MAX_BYTES`), counted as the wire writes it; the listing itself reads
    at most `max_entries + 1` names, so nothing larger than that is ever built.
    """
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
    more = listing.truncated
    entries, cut = fit_entries(listing.entries, args.relative_path, max_bytes=max_bytes, more=more)
    loaded = MODELS.get()
    result, entry = loaded.list_result, loaded.list_entry
    truncated = more or cut
    hint = ""
    if truncated:
        hint = listing_hint(cut_at_bytes=cut, max_bytes=max_bytes, max_entries_limit=loaded.max_entries)
    # Names are shown as the folder holds them; what hides in them is counted.
    hiding = [(index, found) for index, e in enumerate(entries) if (found := count_invisible(e.name))]
    invisible = None
    if hiding:
        characters = counted(sum(found for _, found in hiding), "invisible character")
        first = [index for index, _ in hiding[:INVISIBLE_SHOWN]]
        invisible = f"{characters} in {counted(len(hiding), 'name')}: entries {listed(first, len(hiding))}"
    return result.model_construct(
        path=args.relative_path,
        entries=[entry.model_construct(name=e.name, kind=e.kind, size=e.size) for e in entries],
        truncated=truncated,
        hint=hint or None,
        invisible=invisible,
    )


def listing_hint(*, cut_at_bytes: bool, max_bytes: int, max_entries_limit: int) -> str:
    """The next step for a truncated listing (ASCII, no quotes: at most `HINT_BYTES` as JSON)."""
    rest = "list a subdirectory (relative_path) or fewer levels (max_depth) for the rest"
    if cut_at_bytes:
        return (
            f"The next entry did not fit in the reply's {max_bytes} bytes. Entries come breadth"
            f" first: {rest}."
        )
    return f"More entries exist. Raise max_entries (at most {max_entries_limit}), or {rest}."


def fit_entries(
    entries: Sequence[fdwalk.DirEntry], path: str, *, max_bytes: int, more: bool
) -> tuple[Sequence[fdwalk.DirEntry], bool]:
    """The first `entries` whose JSON fits in `max_bytes` with the rest of the answer (`path`, the
    envelope and, when entries are left out, the hint), and whether the cap left some out.

    Raises `ResultTooLargeError` when the answer cannot hold even the first entry (or, for an empty
    directory, the path alone).
    """
    budget = max_bytes - len(compact_json(path)) - _ENVELOPE_BYTES
    if any(count_invisible(entry.name) for entry in entries):  # the answer will count them
        budget -= report_bytes(len(entries), max_bytes)
    used = 0
    count = 0
    for entry in entries:
        size = len(compact_json({"name": entry.name, "kind": entry.kind, "size": entry.size})) + 1
        if used + size > budget:
            break
        used += size
        count += 1
    cut = count < len(entries)
    if cut or more:
        while count and used > budget - HINT_BYTES:  # a truncated answer carries its hint
            count -= 1
            entry = entries[count]
            used -= len(compact_json({"name": entry.name, "kind": entry.kind, "size": entry.size})) + 1
            cut = True
    if budget < 0 or (count == 0 and (cut or more)):
        raise ResultTooLargeError(
            f"An entry (or the path) is larger than the reply's {max_bytes} bytes of JSON. List a"
            " directory further down, or ask the operator to raise MCP_FS_LIST_MAX_BYTES.",
            metadata={"max_result_bytes": max_bytes},
        )
    return entries[:count], cut


def report_bytes(entries: int, max_bytes: int) -> int:
    """The most the invisible-characters report of a listing of `entries` entries can take (each
    number as long as the larger of the two written out: none is ever larger)."""
    digits = max(len(str(entries)), len(str(max_bytes)))
    words = len(',"invisible":" invisible characters in  names: entries , ..."')
    return words + (2 + INVISIBLE_SHOWN) * (digits + 2)


def models() -> tuple[type[SandboxFsListArgs], type[SandboxFsListResult]]:
    """The tool's (arguments, result) models (the family's `MODELS`)."""
    loaded = MODELS.get()
    return loaded.list_args, loaded.list_result


def spec(run: Callable[[SandboxFsListArgs], Awaitable[SandboxFsListResult]]) -> ToolSpec:
    """The tool, `run` serving its calls (`list_sync` on the family's worker threads)."""
    return ToolSpec(
        name=TOOL_NAME,
        title=TITLE,
        description=DESCRIPTION,
        models=Lazy(models),
        call=run,  # the same bounds and cancellation as reads
        scope=SCOPE,
        untrusted=True,  # names someone wrote into the folder
    )
