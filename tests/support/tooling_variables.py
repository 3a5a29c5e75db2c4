"""The `MCP_*` names of the project's own tooling, read from where the tooling lives.

The container scripts, the Makefile, the demo database (`mcp_suite/demo`) and the test harness's
servers (`tests/support/devdb`) read variables of their own that are not settings; the server does
not list them (`mcp_suite.settings`). The tests take them from those files, and the documented list
from docs/configuration.md, never from settings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from mcp_suite.settings import ENV_VARIABLES

__all__ = ["DOCUMENTED_TOOLING_NAMES", "TOOLING_NAMES"]

_REPO: Final = Path(__file__).resolve().parents[2]
# A whole name, not a family written as `MCP_SQL_*`.
_NAME: Final = re.compile(r"\bMCP_[A-Z0-9_]*[A-Z0-9]\b(?![*_])")


def _tooling_files() -> list[Path]:
    files = [path for path in (_REPO / "containers").rglob("*") if path.is_file()]
    files += sorted((_REPO / "mcp_suite" / "demo").glob("*.py"))
    files += sorted((_REPO / "tests" / "support" / "devdb").glob("*.py"))
    return [*files, _REPO / "Makefile"]


def _names_in(text: str) -> frozenset[str]:
    return frozenset(_NAME.findall(text)) - frozenset(ENV_VARIABLES)


# Every `MCP_*` name the tooling mentions that is not a setting (shell arrays such as `MCP_PROFILE`
# included: a name more is harmless here).
TOOLING_NAMES: Final = frozenset().union(
    *(_names_in(path.read_text(errors="replace")) for path in _tooling_files())
)


def _documented() -> frozenset[str]:
    doc = (_REPO / "docs" / "configuration.md").read_text()
    start = doc.index("The project's own tooling (")
    return _names_in(doc[start : doc.index("\n\n", start)])


# The paragraph of docs/configuration.md that lists the tooling's variables.
DOCUMENTED_TOOLING_NAMES: Final = _documented()
