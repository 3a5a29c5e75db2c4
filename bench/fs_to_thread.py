"""The server with `sandbox_fs_read` handed to `trio.to_thread.run_sync`: bench_fs's comparison.

The same fd walk, models and session as the real tool; only the hand-off to a worker thread differs
(`trio.to_thread.run_sync` with a limiter of as many threads as the tool's own, instead of
`BatchedThreads`). Served with `python -m bench.fs_to_thread` and `BENCH_FS_ROOT` naming the root,
`MCP_SAFE_DATA_DIR` unset (the built-in tool stays off), through `cli.main`'s `extra_tools`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import trio

from mcp_suite import cli
from mcp_suite.lazy import Lazy
from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.files import SCOPE as FILES_SCOPE
from mcp_suite.tools.files import fdwalk
from mcp_suite.tools.files.models import (
    SandboxFsReadArgs,
    SandboxFsReadResult,
    args_model_for,
)
from mcp_suite.tools.files.opener import READ_THREADS
from mcp_suite.tools.files.sandbox_fs_read.tool import DESCRIPTION, TOOL_NAME, read_sync


@contextlib.contextmanager
def open_to_thread_fs_read(settings: Settings) -> Iterator[Toolset]:
    limiter = trio.CapacityLimiter(READ_THREADS)
    with fdwalk.open_root(Path(os.environ["BENCH_FS_ROOT"])) as root:

        def read(args: SandboxFsReadArgs) -> SandboxFsReadResult:
            return read_sync(root, args, allow_hard_links=settings.fs_allow_hard_links)

        async def call(args: SandboxFsReadArgs) -> SandboxFsReadResult:
            return await trio.to_thread.run_sync(read, args, limiter=limiter)

        yield Toolset(
            guidance="",
            tools=(
                ToolSpec(
                    name=TOOL_NAME,
                    title="Read a file (trio.to_thread)",
                    description=DESCRIPTION,
                    models=Lazy(lambda: (args_model_for(settings), SandboxFsReadResult)),
                    call=call,
                    scope=FILES_SCOPE,
                ),
            ),
        )


if __name__ == "__main__":
    raise SystemExit(cli.main([], extra_tools=[open_to_thread_fs_read]))
