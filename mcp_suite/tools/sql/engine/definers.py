"""The run-time check on SECURITY DEFINER functions: a statement may not call one it cannot see into.

A SECURITY DEFINER function runs with its owner's privileges, so a harmless-looking
`SELECT docs.page_export()` can do whatever its owner may (run a program, read server files, write
through another connection). The policy sees only the outer name; this module asks the catalogue
which names (of functions, and of operators whose function is one) belong to a SECURITY DEFINER
function, caches the answer, and refuses a vetted statement that names one, unless the operator
accepted it (`MCP_SQL_ACCEPT_DEFINER_FUNCTIONS`). Any overload of a name counts, in any schema: the
check cannot know which one PostgreSQL will pick. It is the second layer: the role audit, run again
while serving (`role_audit/reaudit.py`), is the guarantee, and refreshes this cache on each pass (`refresh`).
The cache is negative too: a name it does not hold passes, and no statement can make it read the
catalogue again; only its age (`MCP_SQL_FUNCTION_CACHE_S`) or a refresh does. Sync psycopg only;
runs in the call's (or the re-audit's) worker thread, no trio.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from mcp_suite.problems import QueryViolationError, echo

__all__ = ["CATALOGUE_SQL", "DefinerGuard", "DefinerGuardStatistics"]

# One round trip: the SECURITY DEFINER functions behind a function or operator name, with the
# schema.name the operator's acceptance refers to. Read outside a call's transaction, so under the
# role's own search path: every function and operator in it is written schema-qualified.
CATALOGUE_SQL: Final = (
    "SELECT 'definer', p.proname::text, pg_catalog.concat(n.nspname, '.', p.proname),"
    " pg_catalog.pg_get_function_identity_arguments(p.oid)"
    " FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n"
    " ON n.oid OPERATOR(pg_catalog.=) p.pronamespace"
    " WHERE p.prosecdef"
    " UNION ALL SELECT 'definer-operator', o.oprname::text, pg_catalog.concat(n.nspname, '.', p.proname),"
    " pg_catalog.pg_get_function_identity_arguments(p.oid)"
    " FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) o.oprcode"
    " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace WHERE p.prosecdef"
)


@dataclass(frozen=True, slots=True)
class _Catalogue:
    """What one catalogue read said, and until when it is trusted (monotonic seconds)."""

    definers: dict[str, str]  # case-folded function name -> one refused "schema.name(args)"
    definer_operators: dict[str, str]  # operator name -> one refused "schema.name(args)"
    expires: float


@dataclass(frozen=True, slots=True)
class DefinerGuardStatistics:
    """Counters, the trio way (`statistics()`): catalogue reads, and statements refused."""

    catalogue_reads: int
    refused: int


class DefinerGuard:
    """Refuses vetted statements that name a SECURITY DEFINER function. Thread-safe: the cached
    catalogue is one immutable object swapped whole; two threads may both refresh it, harmlessly.
    """

    def __init__(
        self,
        *,
        accepted: Iterable[str] = (),
        cache_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._accepted = frozenset(accepted)
        self._cache_s = cache_s
        self._clock = clock
        self._catalogue: _Catalogue | None = None
        self._reads = 0
        self._refused = 0

    def statistics(self) -> DefinerGuardStatistics:
        return DefinerGuardStatistics(catalogue_reads=self._reads, refused=self._refused)

    def check(
        self, conn: psycopg.Connection[Any], functions: frozenset[str], operators: frozenset[str]
    ) -> None:
        """Raise `QueryViolationError` when a name in `functions` (case-folded) or `operators` is
        that of a SECURITY DEFINER function not accepted by the operator. Blocking: reads the
        catalogue on `conn` (autocommit, outside the call's transaction) only when the cache is
        missing or stale; the names asked about never cause a read (bench_definers)."""
        catalogue = self._catalogue
        if catalogue is None or self._clock() >= catalogue.expires:
            catalogue = self._read(conn)
        if not (catalogue.definers or catalogue.definer_operators):
            return
        for name in sorted(functions):
            if name in catalogue.definers:
                self._refused += 1
                raise _refusal(f"{name}()", catalogue.definers[name])
        for name in sorted(operators):
            if name in catalogue.definer_operators:
                self._refused += 1
                raise _refusal(f"the operator {name}", catalogue.definer_operators[name])

    def refresh(self, conn: psycopg.Connection[Any]) -> None:
        """Read the catalogue now (blocking; the re-audit calls it on its own connection), so that
        calls meanwhile find the cache fresh."""
        self._read(conn)

    def _read(self, conn: psycopg.Connection[Any]) -> _Catalogue:
        rows = conn.execute(CATALOGUE_SQL).fetchall()
        definers: dict[str, str] = {}
        definer_operators: dict[str, str] = {}
        for kind, name, qualified, arguments in rows:
            if qualified not in self._accepted:
                target = definers if kind == "definer" else definer_operators
                target.setdefault(name.casefold() if kind == "definer" else name, f"{qualified}({arguments})")
        self._reads += 1
        catalogue = _Catalogue(
            definers=definers,
            definer_operators=definer_operators,
            expires=self._clock() + self._cache_s,
        )
        self._catalogue = catalogue
        return catalogue


def _refusal(called: str, definer: str) -> QueryViolationError:
    return QueryViolationError(
        f"The query calls {echo(called, 80)}, and {echo(definer, 120)} is a SECURITY DEFINER "
        "function: it runs with its owner's privileges, so what it does cannot be checked. "
        "Remove it from the query.",
        invalid_params=("sql",),
        metadata={"rule": "definer-function", "function": echo(definer, 120)},
    )
