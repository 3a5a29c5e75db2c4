"""One audit finding and the split into refusals and warnings (pure; shared by the audit modules)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["ACCEPT_SETTING", "MAX_LISTED", "Finding", "refusals", "warnings"]

ACCEPT_SETTING: Final = "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS"
MAX_LISTED: Final = 10  # objects named per finding (or findings per kind); the rest are counted


@dataclass(frozen=True, slots=True)
class Finding:
    """One capability the role should not have: `problem` says what, `fix` says the SQL to run.

    `warning`: logged and printed, but the server serves (docs/tools/read_only_sql.md)."""

    capability: str
    problem: str
    fix: str
    warning: bool = False


def refusals(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that stop the server from serving."""
    return [f for f in findings if not f.warning]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that are logged only."""
    return [f for f in findings if f.warning]
