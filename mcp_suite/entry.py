"""The process entry point: catch SIGINT/SIGTERM from the first instant, then load the server.

Importing the server takes a noticeable time (trio, pydantic, the tools). A signal that arrives
meanwhile must start the same orderly shutdown as one that arrives later, not kill the process with
the default action. So this module, which imports nothing heavy, records such signals first; the
session's signal watcher takes them over when it starts (`take_early_signals`).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

__all__ = ["install_early_signal_handlers", "main", "take_early_signals"]

_early: list[int] = []


def _record(signum: int, frame: FrameType | None) -> None:
    _early.append(signum)


def install_early_signal_handlers() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _record)


def take_early_signals() -> list[int]:
    """The signals received before the event loop watched for them (and forget them)."""
    taken = list(_early)
    _early.clear()
    return taken


def main() -> int:
    install_early_signal_handlers()
    from mcp_suite.cli import main as cli_main  # the heavy imports, now safe from signals

    return cli_main(sys.argv[1:])
