"""The process entry point: catch SIGINT/SIGTERM from the first instant, then load the server.

This module imports nothing heavy: it installs the early signal handlers of
`runtime.early_signals` before `mcp_suite.cli` (trio, pydantic, the tools) is imported, so a signal
during start-up is the same clean drain as one later, not a kill.
"""

from __future__ import annotations

import sys

from mcp_suite.runtime.early_signals import install as install_early_signal_handlers

__all__ = ["install_early_signal_handlers", "main"]


def main() -> int:
    install_early_signal_handlers()
    from mcp_suite.cli import main as cli_main  # the heavy imports, now safe from signals

    return cli_main(sys.argv[1:])
