"""One audit finding, the split into refusals and warnings, and how findings are written for the
operator (the refusal message, a warning, a list of names). Pure; shared by the audit's checks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ACCEPT_SETTING",
    "GUIDE_HINT",
    "MAX_LISTED",
    "Finding",
    "format_findings",
    "format_warning",
    "listed",
    "refusals",
    "warnings",
]

ACCEPT_SETTING: Final = "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS"
# Where the operator finds the guide: the command prints it from the package, clone or not.
GUIDE_HINT: Final = "`mcp-suite role-guide` prints its SQL"
MAX_LISTED: Final = 10  # objects named per finding (or findings per kind); the rest are counted


@dataclass(frozen=True, slots=True)
class Finding:
    """One capability the role should not have: `problem` says what, `fix` says the SQL to run.

    `warning`: logged and printed, but the server serves (docs/tools/read_only_sql.md).
    `role`: the mapped role it is about (the problem names it), or "" for the DSN's own role."""

    capability: str
    problem: str
    fix: str
    warning: bool = False
    # A mapped role's finding (issue 42): it stops that role's calls only; "" for the login role's
    # (the DSN's), which stops every call.
    role: str = ""


def refusals(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that stop the server from serving."""
    return [f for f in findings if not f.warning]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that are logged only."""
    return [f for f in findings if f.warning]


def listed(names: list[str]) -> str:
    """The first `MAX_LISTED` names, then how many more."""
    shown = ", ".join(names[:MAX_LISTED])
    more = len(names) - MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def format_findings(findings: list[Finding]) -> str:
    """The refusal message: each problem with its fix, then the warnings (no secrets)."""
    refused = refusals(findings)
    lines = [
        "read_only_sql: refusing to serve: the database role could do more than read "
        f"({len(refused)} problem(s)). Fix them, or use a least-privilege role "
        f"({GUIDE_HINT}):"
    ]
    lines.extend(f"  - {f.problem}\n    fix: {f.fix}" for f in refused)
    lines.extend(format_warning(f) for f in warnings(findings))
    return "\n".join(lines)


def format_warning(finding: Finding) -> str:
    """One warning with its fix (the server serves regardless)."""
    return f"read_only_sql: warning: {finding.problem}\n    fix: {finding.fix}"
