"""A test-only entry point: the real server plus tools that misbehave on purpose.

    python -X dev -m tests.support.stray_server

Serves everything `mcp-suite` serves, plus the harness's test tools (`sleep`, `echo`, `deny`, `boom`)
and:
- `stray`: `print()`s junk, writes to fd 1 directly, and runs two child processes that write to
  their inherited fd 1. None of it may reach the client (docs/wire.md): it must land on stderr.
- `tasks`: how many trio tasks and threads the process has, for the leak test.
- `ask`: asks the user a yes/no question through the call's context (`elicitation/create`, the
  handshake eras); a client that cannot be asked gets the refusal (`client-cannot-ask`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

import trio
from pydantic import Field

from mcp_suite.cli import main as cli_main
from mcp_suite.lazy import Lazy
from mcp_suite.settings import Settings
from mcp_suite.talk import current as current_talk
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.models import StrictModel
from tests.support.harness import TEST_SCOPE, NoArgs, ToolLog, tool_opener

__all__ = ["STRAY_MARK", "main"]

STRAY_MARK = "STRAY-OUTPUT-7d1e"


class StrayResult(StrictModel):
    children_exit_codes: list[int] = Field(description="Exit status of each child process")


class TasksResult(StrictModel):
    tasks: int = Field(description="trio tasks alive, the root task included")
    threads: int = Field(description="Python threads alive")


async def _stray(args: NoArgs) -> StrayResult:
    print(f"{STRAY_MARK} print")  # noqa: T201  # the stray output this entry point exists to produce
    sys.stdout.flush()
    os.write(1, f"{STRAY_MARK} fd1\n".encode())
    codes = []
    for argv in (
        ["/bin/sh", "-c", f"echo {STRAY_MARK} sh-child"],
        [sys.executable, "-c", f"print('{STRAY_MARK} python-child')"],
    ):
        # stdout=None: the child inherits this process's fd 1, as a careless tool's child would.
        done = await trio.run_process(argv, stdin=b"", stdout=None, stderr=None, check=False)
        codes.append(done.returncode)
    return StrayResult(children_exit_codes=codes)


def _count_tasks() -> int:
    root = trio.lowlevel.current_root_task()
    assert root is not None
    count = 0
    stack = [root]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


async def _tasks(args: NoArgs) -> TasksResult:
    await trio.lowlevel.checkpoint()
    return TasksResult(tasks=_count_tasks(), threads=threading.active_count())


class AskArgs(StrictModel):
    question: str = Field(max_length=200, description="The yes/no question put to the user")


class AskResult(StrictModel):
    action: str = Field(description="accept, decline or cancel: what the user did")
    approve: bool | None = Field(description="The user's answer, when they accepted")


async def _ask(args: AskArgs) -> AskResult:
    schema = {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]}
    answer = await current_talk().ask(
        "elicitation/create", {"mode": "form", "message": args.question, "requestedSchema": schema}
    )
    content = answer.get("content")
    approve = content.get("approve") if isinstance(content, dict) else None
    return AskResult(action=str(answer.get("action")), approve=approve if isinstance(approve, bool) else None)


@contextlib.contextmanager
def open_stray_tools(settings: Settings) -> Iterator[Toolset | None]:
    yield Toolset(
        tools=(
            ToolSpec(
                name="stray",
                title="Stray output",
                description="Writes junk to fd 1 and runs children that do.",
                models=Lazy(lambda: (NoArgs, StrayResult)),
                call=_stray,
                scope=TEST_SCOPE,
            ),
            ToolSpec(
                name="tasks",
                title="Task count",
                description="Counts this process's trio tasks and threads.",
                models=Lazy(lambda: (NoArgs, TasksResult)),
                call=_tasks,
                scope=TEST_SCOPE,
            ),
            ToolSpec(
                name="ask",
                title="Ask the user",
                description="Asks the user a yes/no question.",
                models=Lazy(lambda: (AskArgs, AskResult)),
                call=_ask,
                scope=TEST_SCOPE,
            ),
        )
    )


def main() -> int:
    return cli_main(sys.argv[1:], extra_tools=[tool_opener(ToolLog()), open_stray_tools])


if __name__ == "__main__":
    sys.exit(main())
