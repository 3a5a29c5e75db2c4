"""The SQL policy of `read_only_sql` (docs/tools/): caller SQL in, a vetted query or a problem out.

Owns: the pipeline and a bounded LRU of verdicts. Two parsers read every text: PostgreSQL's own grammar
(`postgres_walk`, pglast) first and last, on the caller's text and on the text that will run; sqlglot
(`sqlglot_walk`) for the tree the outer LIMIT is put on (`rewrite`) and as the second opinion. When
sqlglot cannot read a text that PostgreSQL's grammar accepts and whose tree passes the walk, the text
is rewritten and regenerated from PostgreSQL's tree instead; where the two parsers read a text
differently, the query is refused. Both walks apply the catalogue rule (`catalogue`) unless the
operator allows the whole catalogue. Every refusal is worded in `refusals`. Pure: no I/O, no trio, no
psycopg; it raises only `InvalidArgumentsError` and `QueryViolationError`. The policy is a filter, not
the boundary: the read-only transaction and the least-privilege role are (docs/tools/read_only_sql.md
and docs/operations/).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from pglast.stream import RawStream
from sqlglot.dialects.dialect import Dialect

from mcp_suite.problems import InvalidArgumentsError, ProblemError, QueryViolationError
from mcp_suite.settings import SQL_MAX_CHARS
from mcp_suite.tools.sql_engine.policy import refusals
from mcp_suite.tools.sql_engine.policy.postgres_walk import check_agreement, check_postgres
from mcp_suite.tools.sql_engine.policy.rewrite import (
    Deparser,
    apply_limit,
    check_postgres_limit,
    generate,
    regenerate_from_postgres,
)
from mcp_suite.tools.sql_engine.policy.sqlglot_walk import (
    DIALECT,
    check_sqlglot,
    merge_string_continuations,
    parse_sqlglot,
    without_comments,
)

__all__ = ["SQL_MAX_CHARS", "QueryPolicy", "VettedQuery", "vet_sql"]


@dataclass(frozen=True, slots=True)
class VettedQuery:
    """What the executor runs: SQL regenerated from the validated tree, with its outer LIMIT."""

    sql: str  # regenerated from the validated tree, comments dropped, outer LIMIT applied
    limit: int  # the outer LIMIT actually applied (<= max_rows + 1)
    # What the executed text calls by name, as PostgreSQL reads it (last name component, case-folded):
    # the executor refuses a call of a SECURITY DEFINER function, which the policy cannot see into.
    functions: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()


def vet_sql(
    sql: str,
    *,
    max_rows: int,
    allow_catalogue: bool = False,
    dialect: Dialect = DIALECT,
    deparser: Deparser = RawStream,
) -> VettedQuery:
    """The uncached policy (docs/tools/read_only_sql.md). See `QueryPolicy.vet`.

    `allow_catalogue`: skip the catalogue rule (MCP_SQL_ALLOW_CATALOGUE; a `QueryPolicy` gets it
    through its `vet`). `dialect` (sqlglot's postgres dialect) and `deparser` (pglast's): a test
    passes parts that fail.
    """
    if not isinstance(max_rows, int) or isinstance(max_rows, bool) or max_rows < 1:
        raise refusals.bad_max_rows()
    if not isinstance(sql, str):
        raise refusals.not_a_string()
    if not sql.strip():
        raise refusals.empty()
    if len(sql) > SQL_MAX_CHARS:  # the argument model checks it too; the policy is safe on its own
        raise refusals.too_long(len(sql), SQL_MAX_CHARS)
    if "\x00" in sql:
        raise refusals.nul()
    cap = max_rows + 1
    try:
        # PostgreSQL's grammar first: it is fast, cannot recurse in Python, and sees what sqlglot
        # misreads (U&"..." identifiers, LISTEN, DISCARD, trailing comments).
        original = check_postgres(sql, executed=False, allow_catalogue=allow_catalogue)
        try:
            tree = parse_sqlglot(merge_string_continuations(without_comments(sql)), dialect)
            check_sqlglot(tree, allow_catalogue=allow_catalogue)
            tree, limit = apply_limit(tree, cap)
            executed = generate(tree, dialect)
            # The second check, on exactly the text that will run: both parsers again, the LIMIT
            # proven on PostgreSQL's own reading, and nothing in it that the caller did not write.
            check_sqlglot(parse_sqlglot(executed, dialect), allow_catalogue=allow_catalogue)
            final = check_postgres(executed, executed=True, allow_catalogue=allow_catalogue)
        except refusals.UnreadableError:
            # PostgreSQL's grammar reads the caller's text and its tree passed the walk, but
            # sqlglot cannot read it, or cannot write back what it read. That alone is no reason
            # to refuse: PostgreSQL's own tree is rewritten and regenerated, and that text gets
            # the same second check (sqlglot's too, when it can read it).
            executed, limit = regenerate_from_postgres(sql, cap, deparser)
            with contextlib.suppress(refusals.UnreadableError):
                check_sqlglot(parse_sqlglot(executed, dialect), allow_catalogue=allow_catalogue)
            final = check_postgres(executed, executed=True, allow_catalogue=allow_catalogue)
        check_postgres_limit(final.root, limit, cap)
        check_agreement(original, final, limit)
    except RecursionError:
        raise refusals.too_deep() from None
    return VettedQuery(
        sql=executed,
        limit=limit,
        functions=frozenset(final.functions),
        operators=frozenset(final.operators),
    )


class Vet(Protocol):
    """The uncached policy's shape (`vet_sql`)."""

    def __call__(self, sql: str, *, max_rows: int) -> VettedQuery: ...


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A cached refusal; a fresh exception is raised on every hit (no traceback growth)."""

    kind: type[ProblemError]
    detail: str
    invalid_params: tuple[str, ...]
    metadata: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, problem: ProblemError) -> _Refusal:
        return cls(type(problem), problem.detail, problem.invalid_params, tuple(problem.metadata.items()))

    def problem(self) -> ProblemError:
        return self.kind(self.detail, invalid_params=self.invalid_params, metadata=dict(self.metadata))


class QueryPolicy:
    """Vets caller SQL; verdicts for identical `(sql, max_rows)` are kept in a bounded LRU.

    Thread-safe: the executor may call `vet` from several worker threads at once.
    Limits: at most `cache_size` verdicts (0 disables the cache); each holds at most one query text.
    `vet`: the uncached policy, `vet_sql` (a test passes one that counts its calls).
    """

    def __init__(self, *, cache_size: int = 1024, vet: Vet = vet_sql) -> None:
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[str, int], VettedQuery | _Refusal] = OrderedDict()
        self._lock = threading.Lock()
        self._vet = vet

    def vet(self, sql: str, *, max_rows: int) -> VettedQuery:
        """The query to run for `sql`, or a raised `InvalidArgumentsError` / `QueryViolationError`.

        Security: see the module docstring; the detail echoes at most `ECHO_MAX_CHARS` of `sql`.
        """
        key = (sql, max_rows)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
        if cached is None:
            try:
                cached = self._vet(sql, max_rows=max_rows)
            except (InvalidArgumentsError, QueryViolationError) as problem:
                cached = _Refusal.of(problem)
            if self._cache_size:
                with self._lock:
                    self._cache[key] = cached
                    self._cache.move_to_end(key)
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        if isinstance(cached, _Refusal):
            raise cached.problem()
        return cached
