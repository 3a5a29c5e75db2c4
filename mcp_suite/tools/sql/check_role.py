"""`mcp-suite check-role` and `mcp-suite role-guide`: the role audit's faces for operators.

Owns what the commands print and their exit status: with a configuration file, each source's role
under a heading of its name and a summary line per source (the worst status of them); else
MCP_SQL_DSN's role; for each role an identity map names, one verdict line; then the findings (or the
warnings and the closing verdict). The audit itself is the engine's (`engine.role_audit`). A failure
to audit is a refusal, not output: `check_role` raises `CheckRoleRefusedError`, and `check_roles`
hands it to the CLI's `refuse` (one JSON line on stderr), so this module imports nothing of the
runtime. `print_role_guide` prints the least-privilege role guide the audit's findings point to.
Loaded by the CLI only for these commands; psycopg and the audit load when a role is audited.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from mcp_suite.settings import SettingsError

if TYPE_CHECKING:
    from mcp_suite.settings import Settings

__all__ = ["CheckRoleRefusedError", "Refuse", "check_role", "check_roles", "print_role_guide"]

# The CLI's refusal: says `message` with `status` (one JSON line on stderr) and returns `status`.
Refuse = Callable[[str, int], int]

# check-role's exit status of one source, as its summary line says it.
_VERDICTS: Final = {os.EX_OK: "passes", os.EX_UNAVAILABLE: "unavailable", os.EX_CONFIG: "refused"}


class CheckRoleRefusedError(Exception):
    """The role could not be audited, or the audit refused to start; `args[0]` is the message,
    `status` the command's exit status (EX_CONFIG or EX_UNAVAILABLE)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def check_roles(settings: Settings, *, refuse: Refuse, out: TextIO | None = None) -> int:
    """The command: every source's role with a configuration file, else MCP_SQL_DSN's, printed on
    `out` (stdout); each refusal is handed to `refuse`. Returns the exit status."""
    if settings.config_file is not None:
        return _check_sources(settings, refuse=refuse, out=out)
    if settings.sql_dsn is None:
        return refuse("check-role needs MCP_SQL_DSN or a configuration file (MCP_CONFIG)", os.EX_CONFIG)
    try:
        return check_role(settings, out=out)
    except CheckRoleRefusedError as exc:
        return refuse(str(exc), exc.status)


def _check_sources(settings: Settings, *, refuse: Refuse, out: TextIO | None = None) -> int:
    """`check-role` with a configuration file: each source's role, under a heading of its name;
    the worst exit status of them (EX_CONFIG over EX_UNAVAILABLE over EX_OK)."""
    from mcp_suite.tools.sql.sources import load_sources

    try:
        sources = load_sources(settings)
    except SettingsError as exc:
        return refuse(f"invalid configuration: {exc}", os.EX_CONFIG)
    stream = out or sys.stdout
    statuses = []
    for source in sources:
        stream.write(f"== source {source.name}\n")
        stream.flush()
        roles = source.identity.roles if source.identity is not None else ()
        try:
            statuses.append(check_role(source.settings, out=stream, roles=roles))
        except CheckRoleRefusedError as exc:
            statuses.append(refuse(str(exc), exc.status))
    # One line per source at the end, as the server's readiness probe names them: a scraper or an
    # operator reads each source's verdict without reading the findings above.
    stream.write("== summary\n")
    stream.writelines(
        f"source {source.name}: {_VERDICTS.get(status, 'refused')}\n"
        for source, status in zip(sources, statuses, strict=True)
    )
    stream.flush()
    for status in (os.EX_CONFIG, os.EX_UNAVAILABLE):
        if status in statuses:
            return status
    return os.EX_OK


def check_role(settings: Settings, *, out: TextIO | None = None, roles: Sequence[str] = ()) -> int:
    """Audit the role of `settings`' DSN and print the findings on `out`; with an identity map's
    `roles`, the login role and then each mapped role, one verdict line each.

    Returns EX_OK when the role is fit to serve, EX_CONFIG when it is not. Raises
    `CheckRoleRefusedError` when there is no DSN, the server's TLS certificate is refused or
    MCP_SQL_POOLER=none but a pooler answers (EX_CONFIG), or the database cannot be reached
    (EX_UNAVAILABLE). The findings are the command's output; a refusal is the caller's to say.
    """
    # The role audit (and psycopg) is imported only when a role is audited.
    import psycopg

    from mcp_suite.tools.sql.engine.role_audit.connect import (
        PoolerInFrontError,
        TlsRefusedError,
        audit_role,
        connection_failure,
    )
    from mcp_suite.tools.sql.engine.role_audit.finding import format_findings, format_warning, refusals

    stream = out or sys.stdout
    if settings.sql_dsn is None:
        raise CheckRoleRefusedError("check-role needs MCP_SQL_DSN", os.EX_CONFIG)
    try:
        findings = audit_role(settings.sql_dsn.get_secret_value(), settings, roles)
    except (TlsRefusedError, PoolerInFrontError) as exc:  # as the server itself refuses to start
        raise CheckRoleRefusedError(f"check-role: {exc}", os.EX_CONFIG) from None
    except psycopg.Error as exc:
        raise CheckRoleRefusedError(
            f"check-role: could not audit the role: {connection_failure(exc)}", os.EX_UNAVAILABLE
        ) from None
    refused = refusals(findings)
    for role in roles:  # a mapped role's findings stop its own calls only: say which passed
        verdict = "refused" if any(f.role == role for f in refused) else "can only read"
        stream.write(f"check-role: mapped role {role}: {verdict}\n")
    if refused:
        stream.write(format_findings(findings) + "\n")
        return os.EX_CONFIG
    stream.writelines(format_warning(f) + "\n" for f in findings)
    stream.write("check-role: the role can only read; read_only_sql will serve.\n")
    return os.EX_OK


def print_role_guide(*, refuse: Refuse, out: TextIO | None = None) -> int:
    """`mcp-suite role-guide`: the guide's SQL (a file the package carries) on `out` (stdout)."""
    from mcp_suite.tools.sql.engine.role_audit.guide import role_guide

    try:
        text = role_guide()
    except OSError as exc:
        return refuse(f"role-guide: {exc}", os.EX_SOFTWARE)
    stream = out or sys.stdout
    stream.write(text)
    stream.flush()
    return os.EX_OK
