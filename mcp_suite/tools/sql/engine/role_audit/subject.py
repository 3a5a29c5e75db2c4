"""Who is audited: the role as its checks name it, and the risks the operator accepted.

Every check is a `Check`: it reads the catalogue on the audit's connection (inside the audit's
read-only transaction) and returns its findings about `Subject`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import psycopg
from psycopg import sql

from mcp_suite.tools.sql.engine.role_audit.finding import Finding

__all__ = ["Check", "Subject", "ident"]


@dataclass(frozen=True, slots=True)
class Subject:
    """`role` and `db`: quoted identifiers, ready for a fix's SQL. `accepted`: SECURITY DEFINER
    functions (`schema.name`) accepted as known risks; `accepted_creators`: roles whose new functions
    may be executable by PUBLIC; `mapped`: the roles an identity map switches to (issue 42), which
    the login role is a member of on purpose (each is audited in its own right)."""

    role: str
    db: str
    accepted: frozenset[str]
    accepted_creators: frozenset[str]
    mapped: frozenset[str] = frozenset()


Check: TypeAlias = Callable[[psycopg.Connection[Any], Subject], list[Finding]]


def ident(conn: psycopg.Connection[Any], *names: str) -> str:
    """`names` joined as one (schema-)qualified, quoted identifier."""
    return ".".join(sql.Identifier(name).as_string(conn) for name in names)
