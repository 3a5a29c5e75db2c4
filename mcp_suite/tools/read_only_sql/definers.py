"""The run-time check on SECURITY DEFINER functions: a statement may not call one it cannot see into.

A SECURITY DEFINER function runs with its owner's privileges, so a harmless-looking
`SELECT docs.page_export()` can do whatever its owner may (run a program, read server files, write
through another connection). The policy sees only the outer name; this module asks the catalogue
which names (of functions, and of operators whose function is one) belong to a SECURITY DEFINER
function, caches the answer, and refuses a vetted statement that names one, unless the operator
accepted it (`MCP_SQL_ACCEPT_DEFINER_FUNCTIONS`). Any overload of a name counts, in any schema: the
check cannot know which one PostgreSQL will pick. The cache is asked again after
`MCP_SQL_FUNCTION_CACHE_S`, and at once when a statement names a function or operator it has never
seen (a function created since). Sync psycopg only; runs in the call's worker thread, no trio.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from mcp_suite.problems import QueryViolationError, echo

__all__ = ["CATALOGUE_SQL", "DefinerGuard", "DefinerGuardStatistics"]

# One round trip: every function name and operator name (to notice new ones), and the SECURITY
# DEFINER functions behind a name, with the schema.name the operator's acceptance refers to.
CATALOGUE_SQL: Final = (
    "SELECT 'function', proname::text, NULL, NULL"
    " FROM (SELECT DISTINCT proname FROM pg_catalog.pg_proc) f"
    " UNION ALL SELECT DISTINCT 'operator', oprname::text, NULL, NULL FROM pg_catalog.pg_operator"
    " UNION ALL SELECT 'definer', p.proname::text, n.nspname || '.' || p.proname,"
    " pg_catalog.pg_get_function_identity_arguments(p.oid)"
    " FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
    " WHERE p.prosecdef"
    " UNION ALL SELECT 'definer-operator', o.oprname::text, n.nspname || '.' || p.proname,"
    " pg_catalog.pg_get_function_identity_arguments(p.oid)"
    " FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode"
    " JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE p.prosecdef"
)


@dataclass(frozen=True, slots=True)
class _Catalogue:
    """What one catalogue read said, and until when it is trusted (monotonic seconds)."""

    functions: frozenset[str]  # every function name, case-folded
    operators: frozenset[str]  # every operator name
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
        catalogue on `conn` (autocommit, outside the call's transaction) when the cache is stale or
        a name is new to it."""
        catalogue = self._catalogue
        if (
            catalogue is None
            or self._clock() >= catalogue.expires
            or not functions <= catalogue.functions
            or not operators <= catalogue.operators
        ):
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

    def _read(self, conn: psycopg.Connection[Any]) -> _Catalogue:
        rows = conn.execute(CATALOGUE_SQL).fetchall()
        functions: set[str] = set()
        operators: set[str] = set()
        definers: dict[str, str] = {}
        definer_operators: dict[str, str] = {}
        for kind, name, qualified, arguments in rows:
            if kind == "function":
                functions.add(name.casefold())
            elif kind == "operator":
                operators.add(name)
            elif qualified not in self._accepted:
                target = definers if kind == "definer" else definer_operators
                target.setdefault(name.casefold() if kind == "definer" else name, f"{qualified}({arguments})")
        self._reads += 1
        catalogue = _Catalogue(
            functions=frozenset(functions),
            operators=frozenset(operators),
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
