"""A test-only entry point: the real server plus a tool that asks the person at the client.

    python -X dev -m tests.support.asking_server [serve-http]

Serves everything `mcp-suite` serves, plus `confirm_echo` (`text`): it asks the user "Echo <text>?"
with `mcp_suite.asking.confirm` and echoes the text only when they approve; a no is the
`not-approved` refusal, and a client that cannot ask gets `client-cannot-ask`. Nothing in the
product asks yet: this tool is how the tests reach the asking path through both transports.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Final

from pydantic import Field

from mcp_suite.asking import confirm
from mcp_suite.cli import main as cli_main
from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.models import StrictModel
from tests.support.harness import TEST_SCOPE, built_models

__all__ = ["CONFIRM_TOOL", "main", "open_asking_tools"]

CONFIRM_TOOL: Final = "confirm_echo"


class ConfirmArgs(StrictModel):
    text: str = Field(max_length=100, description="The text to echo once the user approves")


class ConfirmResult(StrictModel):
    text: str = Field(description="The text, echoed")


async def _confirm_echo(args: ConfirmArgs) -> ConfirmResult:
    await confirm(f"Echo {args.text!r}?")
    return ConfirmResult(text=args.text)


@contextlib.contextmanager
def open_asking_tools(settings: Settings) -> Iterator[Toolset | None]:
    yield Toolset(
        tools=(
            ToolSpec(
                name=CONFIRM_TOOL,
                title="Confirm and echo",
                description="Asks the user whether to echo `text`, then echoes it.",
                models=built_models(ConfirmArgs, ConfirmResult),
                call=_confirm_echo,
                scope=TEST_SCOPE,
            ),
        )
    )


def main() -> int:
    return cli_main(sys.argv[1:], extra_tools=[open_asking_tools])


if __name__ == "__main__":
    sys.exit(main())
