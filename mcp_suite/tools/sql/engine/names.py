"""The run-time half of the allow-lists: functions and types outside PostgreSQL's own schemas.

The policy judges PostgreSQL's own names alone (`policy.allowlist`) and notes the others: a function
of the database's own schemas or of an extension, a table's row type, an enum. This module asks the
catalogue, as the role, which of them a query may name, caches the answer, and refuses a vetted
statement that names any other:
- a function: one the role may execute in a schema it may use, not an extension's, or an extension's
  on the reviewed list (`allowlist.REVIEWED_EXTENSIONS`) or allowed by the operator
  (`MCP_SQL_ALLOW_EXTENSIONS`);
- a type: the row type of a table or view the role may read in full (every column), the type of a
  column of one, or a type of such an extension.
An unqualified name passes only when every object of that name outside PostgreSQL's schemas does
(the search path decides which one runs; the check cannot). A name in attribute notation (`t.f`,
`(x).f`), which PostgreSQL reads as the call `f(t)` or the cast `t::f` where `f` is not a column,
passes unless a function or type of that name exists that the role may not name. A statement whose
SQL/JSON syntax the server's own grammar reads as function calls (a server older than the syntax)
is refused. Like the definer guard, it reads the
catalogue only when its cache is missing or stale (`MCP_SQL_FUNCTION_CACHE_S`), never because of
the names a query holds, and the re-audit refreshes it. With an identity map (issue 42) each
mapped role has its own cached catalogue, read under that role (`SET LOCAL ROLE` in a transaction
rolled back). Sync psycopg only, no trio.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import psycopg
from psycopg import sql

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.policy import allowlist, refusals

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.policy import VettedQuery

__all__ = ["CATALOGUE_SQL", "NameGuard", "NameGuardStatistics"]

# One round trip, read outside a call's transaction (so every name in it is schema-qualified):
# every function and every type (bar automatic array types) outside PostgreSQL's own schemas, with
# its extension, and whether the role may use it.
CATALOGUE_SQL: Final = """
WITH owned AS (
  SELECT d.classid, d.objid, e.extname::text AS extname FROM pg_catalog.pg_depend d
  JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
  WHERE d.deptype OPERATOR(pg_catalog.=) 'e'
), user_schemas AS (
  SELECT oid, nspname::text AS nspname FROM pg_catalog.pg_namespace
  WHERE nspname OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog', 'information_schema'])
    AND NOT pg_catalog.starts_with(nspname::text, 'pg_')
), readable AS (
  SELECT c.oid, c.reltype FROM pg_catalog.pg_class c
  JOIN user_schemas s ON s.oid OPERATOR(pg_catalog.=) c.relnamespace
  WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'v', 'm', 'f', 'p']::"char"[])
    AND pg_catalog.has_schema_privilege(c.relnamespace, 'USAGE')
    AND (pg_catalog.has_table_privilege(c.oid, 'SELECT')
         OR (pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
             AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                             WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid
                               AND a.attnum OPERATOR(pg_catalog.>) 0
                               AND NOT a.attisdropped
                               AND NOT pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT'))))
), column_types AS (
  SELECT a.atttypid AS typ FROM pg_catalog.pg_attribute a
  JOIN readable r ON r.oid OPERATOR(pg_catalog.=) a.attrelid
  WHERE a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
)
SELECT 'function', s.nspname, p.proname::text, COALESCE(o.extname, ''),
  pg_catalog.has_schema_privilege(s.oid, 'USAGE') AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
FROM pg_catalog.pg_proc p JOIN user_schemas s ON s.oid OPERATOR(pg_catalog.=) p.pronamespace
LEFT JOIN owned o ON o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
  AND o.objid OPERATOR(pg_catalog.=) p.oid
UNION ALL
SELECT 'type', s.nspname, t.typname::text, COALESCE(o.extname, ''),
  pg_catalog.has_schema_privilege(s.oid, 'USAGE') AND pg_catalog.has_type_privilege(t.oid, 'USAGE')
  AND (o.extname IS NOT NULL
       OR t.oid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT reltype FROM readable))
       OR t.oid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT typ FROM column_types))
       OR t.typarray OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT typ FROM column_types)))
FROM pg_catalog.pg_type t JOIN user_schemas s ON s.oid OPERATOR(pg_catalog.=) t.typnamespace
LEFT JOIN owned o ON o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
  AND o.objid OPERATOR(pg_catalog.=) t.oid
WHERE NOT (t.typcategory OPERATOR(pg_catalog.=) 'A' AND t.typelem OPERATOR(pg_catalog.<>) 0
           AND pg_catalog.starts_with(t.typname::text, '_'))
"""

# name -> [(schema, usable)] for every object of that name outside PostgreSQL's own schemas.
_Index = dict[str, list[tuple[str, bool]]]


@dataclass(frozen=True, slots=True)
class _Catalogue:
    functions: _Index
    types: _Index
    expires: float  # monotonic seconds


@dataclass(frozen=True, slots=True)
class NameGuardStatistics:
    """Counters, the trio way (`statistics()`): catalogue reads, and statements refused."""

    catalogue_reads: int
    refused: int


class NameGuard:
    """Refuses vetted statements that name a function or type the role's catalogue does not allow.
    Thread-safe: the cached catalogue is one immutable object swapped whole."""

    def __init__(
        self,
        *,
        allowed_extensions: Iterable[str] = (),
        cache_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._extensions = frozenset(allowed_extensions)
        self._cache_s = cache_s
        self._clock = clock
        # The login role's (None) and each mapped role's: one immutable mapping swapped whole.
        self._catalogues: dict[str | None, _Catalogue] = {}
        self._reads = 0
        self._refused = 0

    def statistics(self) -> NameGuardStatistics:
        return NameGuardStatistics(catalogue_reads=self._reads, refused=self._refused)

    def check_vetted(
        self, conn: psycopg.Connection[Any], query: VettedQuery, *, role: str | None = None
    ) -> None:
        """Refuse (`QueryViolationError`) a vetted statement the server would read otherwise than
        the policy did (`query.needs_server`), or that names, also in attribute notation, a function
        or type outside PostgreSQL's own schemas the role's catalogue does not allow. Blocking: as
        `check`."""
        server = conn.info.server_version
        if server < query.needs_server:
            self._refused += 1
            raise refusals.newer_syntax(query.needs_construct, query.needs_server, server)
        if query.external_attributes:
            catalogue = self._catalogue(conn, role)
            for name in sorted(query.external_attributes):
                if not _may_resolve(catalogue.functions.get(name, ())):
                    self._refused += 1
                    raise refusals.attribute_call(name, _ATTRIBUTE_FUNCTION)
                if not _may_resolve(catalogue.types.get(name, ())):
                    self._refused += 1
                    raise refusals.attribute_call(name, _ATTRIBUTE_TYPE)
        self.check(conn, query.external_functions, query.external_types, role=role)

    def check(
        self,
        conn: psycopg.Connection[Any],
        functions: frozenset[tuple[str, str]],
        types: frozenset[tuple[str, str]],
        *,
        role: str | None = None,
    ) -> None:
        """Raise `QueryViolationError` for the first (sorted) function or type in `functions` /
        `types` ((schema or "", name), case-folded) that the catalogue does not allow. Blocking:
        reads the catalogue on `conn` (autocommit, outside the call's transaction) only when the
        cache is missing or stale. `role`: judge by that mapped role's catalogue (None: the
        connection's own role)."""
        if not functions and not types:
            return
        catalogue = self._catalogue(conn, role)
        for schema, name in sorted(functions):
            if not _allowed(catalogue.functions.get(name, ()), schema):
                self._refused += 1
                raise _function_refusal(schema, name)
        for schema, name in sorted(types):
            if not _allowed(catalogue.types.get(name, ()), schema):
                self._refused += 1
                raise refusals.unlisted_type(_qualified(schema, name), _TYPE_REASON)

    def _catalogue(self, conn: psycopg.Connection[Any], role: str | None) -> _Catalogue:
        catalogue = self._catalogues.get(role)
        if catalogue is None or self._clock() >= catalogue.expires:
            catalogue = self._read(conn, role)
        return catalogue

    def refresh(self, conn: psycopg.Connection[Any], role: str | None = None) -> None:
        """Read the catalogue now, as `role` when given (blocking; the re-audit calls it on its own
        connection)."""
        self._read(conn, role)

    def _read(self, conn: psycopg.Connection[Any], role: str | None) -> _Catalogue:
        if role is None:
            rows = conn.execute(CATALOGUE_SQL).fetchall()
        else:
            with conn.transaction(force_rollback=True):
                conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
                rows = conn.execute(CATALOGUE_SQL).fetchall()
        functions: _Index = defaultdict(list)
        types: _Index = defaultdict(list)
        for kind, schema, name, extension, usable in rows:
            if kind == "function":
                allowed = usable and (
                    not extension
                    or extension in self._extensions
                    or allowlist.extension_function_allowed(extension, name)
                )
                functions[name.casefold()].append((schema.casefold(), bool(allowed)))
            else:
                allowed = usable and (
                    not extension
                    or extension in self._extensions
                    or extension in allowlist.REVIEWED_EXTENSIONS
                )
                types[name.casefold()].append((schema.casefold(), bool(allowed)))
        self._reads += 1
        catalogue = _Catalogue(dict(functions), dict(types), self._clock() + self._cache_s)
        self._catalogues = {**self._catalogues, role: catalogue}
        return catalogue


_TYPE_REASON: Final = (
    "is neither a built-in type on the reviewed list nor the type of a table or column the role may "
    "read in full"
)


def _allowed(entries: Iterable[tuple[str, bool]], schema: str) -> bool:
    """Every object of the name (in `schema`, when the query wrote one) is allowed, and one exists."""
    matches = [allowed for where, allowed in entries if not schema or where == schema]
    return bool(matches) and all(matches)


def _may_resolve(entries: Iterable[tuple[str, bool]]) -> bool:
    """No object of the name is one the role may not name (none existing is fine: a column)."""
    return all(allowed for _where, allowed in entries)


_ATTRIBUTE_FUNCTION: Final = (
    "is a function outside PostgreSQL's own schemas that the role may not run, or an extension's that "
    "is not on the reviewed list"
)
_ATTRIBUTE_TYPE: Final = (
    "is a type that is neither on the reviewed list nor the type of a table or column the role may "
    "read in full"
)


def _qualified(schema: str, name: str) -> str:
    return f"{schema}.{name}" if schema else name


def _function_refusal(schema: str, name: str) -> QueryViolationError:
    return refusals.unlisted_function(
        _qualified(schema, name),
        "is not a function of the database's own schemas that the role may run, nor one of an "
        "extension on the reviewed list",
    )
