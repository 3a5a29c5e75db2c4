"""The server entry of mcp-suite's MCP bundle (`make mcpb`; docs/operations/bundle.md).

The host (Claude Desktop) runs `python3 <bundle>/server/main.py --demo=<true|false>` with the
settings the user filled in as environment variables (manifest.json, `mcp_config`). A field left
empty reaches us as an empty string, or as its unreplaced `${user_config.…}` placeholder (what the
official MCPB library leaves for an optional field with no value and no default): either counts
as not set. Then:

- `MCP_SQL_DSN` set: the server with that database (and the data folder, when one was chosen);
- else `--demo=true`: `mcp-suite demo`, a throwaway PostgreSQL on this computer and the example folder;
- else: the server without the SQL tools.

The packages the bundle carries in `server/lib` were built for one Python version
(`server/python-version`): another version is refused with the fix, not with an import error.
Standard library only until the version is checked; stdout is the protocol's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

_FIELDS = ("MCP_SQL_DSN", "MCP_SAFE_DATA_DIR")
_EX_CONFIG = 78


def _unset_empty_fields(environ: MutableMapping[str, str]) -> None:
    for name in _FIELDS:
        value = environ.get(name)
        if value is not None and (not value.strip() or value.startswith("${user_config.")):
            del environ[name]


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    built_for = (here / "python-version").read_text(encoding="utf-8").strip()
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if running != built_for:
        sys.stderr.write(
            f"mcp-suite bundle: built for Python {built_for}, started by Python {running}: install "
            f"Python {built_for} as python3, or rebuild the bundle with `make mcpb PYTHON=python{running}`\n"
        )
        return _EX_CONFIG
    if argv not in ([], ["--demo=true"], ["--demo=false"]):
        sys.stderr.write(f"mcp-suite bundle: unexpected arguments {argv!r} (expected --demo=true|false)\n")
        return _EX_CONFIG
    lib = str(here / "lib")
    if lib not in sys.path:
        sys.path.insert(0, lib)
    # The demo starts the server as a child process (`python -m mcp_suite`): it finds the packages too.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (lib, os.environ.get("PYTHONPATH", "")) if p)
    _unset_empty_fields(os.environ)
    demo = argv == ["--demo=true"] and "MCP_SQL_DSN" not in os.environ

    from mcp_suite.cli import main as serve

    return serve(["demo"] if demo else [])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
