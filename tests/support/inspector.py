"""The MCP Inspector CLI, installed from npm by the tests themselves (a real third-party client).

The version is pinned, with every dependency, by `tests/support/inspector/package-lock.json`
(integrity hashes, no download addresses). `inspector_cli()` runs `npm ci` once per lock into
`.venv/npm/` (a cache `make clean` removes) and returns the CLI's path. It runs on the machine's
Node (20 or later); npm only warns that the package asks for a newer one. Without npm it fails with
a message saying what to install: these tests never skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from bench.common import npm_ci_once

__all__ = ["inspector_cli"]

_SOURCE: Final = Path(__file__).with_name("inspector")


def inspector_cli() -> Path:
    """The `mcp-inspector` executable of the pinned version, installed on first use."""
    return npm_ci_once(_SOURCE, "inspector") / "node_modules" / ".bin" / "mcp-inspector"
