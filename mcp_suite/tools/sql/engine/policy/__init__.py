"""The SQL policy of `read_only_sql` (docs/tools/): caller SQL in, a vetted query or a problem out.

Owns: the pipeline and a bounded LRU of verdicts. Two parsers read every text: PostgreSQL's own grammar
(`postgres_walk`, pglast) first and last, on the caller's text and on the text that will run; sqlglot
(`sqlglot_walk`) as the second opinion on the caller's text (where sqlglot cannot read a text that
PostgreSQL's grammar accepts, PostgreSQL's reading stands alone). The text that runs is the caller's
own statement inside the outer LIMIT (`rewrite`): no parser regenerates it. Both walks apply the
catalogue rule (`catalogue`) unless the operator allows the whole catalogue; PostgreSQL's applies the
function and type allow-lists (`allowlist`). Every refusal is worded in `refusals`. Pure: no I/O, no
trio, no psycopg; it raises only `InvalidArgumentsError` and `QueryViolationError`. The policy is a
filter, not the boundary: the read-only transaction and the least-privilege role are
(docs/tools/read_only_sql.md and docs/operations/).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from sqlglot.dialects.dialect import Dialect

from mcp_suite.problems import InvalidArgumentsError, ProblemError, QueryViolationError
from mcp_suite.settings import SQL_MAX_CHARS
from mcp_suite.tools.sql.engine.policy import refusals
from mcp_suite.tools.sql.engine.policy.postgres_walk import check_postgres
from mcp_suite.tools.sql.engine.policy.rewrite import check_wrapped, literal_limit, wrap
from mcp_suite.tools.sql.engine.policy.sqlglot_walk import (
    DIALECT,
    check_sqlglot,
    merge_string_continuations,
    parse_sqlglot,
    without_comments,
)

__all__ = ["SQL_MAX_CHARS", "QueryPolicy", "VettedQuery", "vet_sql"]


@dataclass(frozen=True, slots=True)
class VettedQuery:
    """What the executor runs: the caller's statement inside the outer LIMIT, and what it names."""

    sql: str  # SELECT * FROM (<the caller's statement>) AS q LIMIT <max_rows + 1>
    limit: int  # the answer's bound: the caller's literal LIMIT when smaller, else max_rows + 1
    # What the executed text calls by name, as PostgreSQL reads it (last name component, case-folded),
    # names in attribute notation included (`t.f` is `f(t)` where `f` is not a column): the executor
    # refuses a call of a SECURITY DEFINER function, which the policy cannot see into.
    functions: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()
    # Functions and types outside PostgreSQL's own schemas, (schema or "", name) case-folded: the
    # engine allows them only as the role's catalogue says (`names.NameGuard`).
    external_functions: frozenset[tuple[str, str]] = frozenset()
    external_types: frozenset[tuple[str, str]] = frozenset()
    # Names written in attribute notation (`t.f`, `(x).f`) that PostgreSQL's own lists do not know,
    # case-folded: the engine refuses one that is a function or type the role's catalogue does not
    # allow, since PostgreSQL reads `t.f` as `f(t)` where `f` is not a column.
    external_attributes: frozenset[str] = frozenset()
    # The oldest server (server_version_num) whose grammar reads the statement as the policy did, and
    # the construct that needs it (SQL/JSON syntax); 0 and "" when any supported server does.
    needs_server: int = 0
    needs_construct: str = ""


def vet_sql(
    sql: str,
    *,
    max_rows: int,
    allow_catalogue: bool = False,
    allow_xml: bool = False,
    allow_uninterruptible: bool = False,
    dialect: Dialect = DIALECT,
) -> VettedQuery:
    """The uncached policy (docs/tools/read_only_sql.md). See `QueryPolicy.vet`.

    `allow_catalogue`: skip the catalogue rule (MCP_SQL_ALLOW_CATALOGUE); `allow_xml`: allow XML,
    which PostgreSQL cannot interrupt (MCP_SQL_ALLOW_XML); `allow_uninterruptible`: allow
    containment and parsing of values the query builds (MCP_SQL_ALLOW_UNINTERRUPTIBLE,
    `policy.built`); a `QueryPolicy` gets them through its `vet`.
    `dialect` (sqlglot's postgres dialect): a test passes parts that fail.
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
        original = check_postgres(
            sql,
            executed=False,
            allow_catalogue=allow_catalogue,
            allow_xml=allow_xml,
            allow_uninterruptible=allow_uninterruptible,
        )
        try:
            tree = parse_sqlglot(merge_string_continuations(without_comments(sql)), dialect)
        except refusals.UnreadableError:
            pass  # sqlglot cannot read what PostgreSQL's grammar accepts: PostgreSQL's reading stands
        else:
            check_sqlglot(tree, allow_catalogue=allow_catalogue)
        executed, shift = wrap(sql, cap)
        # The second check, on exactly the text that will run: PostgreSQL's grammar again, and the
        # proof that it is the caller's statement, unchanged, inside the outer LIMIT.
        final = check_postgres(executed, executed=True, allow_catalogue=allow_catalogue, allow_xml=allow_xml)
        check_wrapped(final.root, original.root, cap, shift)
    except RecursionError:
        raise refusals.too_deep() from None
    literal = literal_limit(original.root)
    return VettedQuery(
        sql=executed,
        limit=cap if literal is None else min(literal, cap),
        functions=frozenset(final.functions | {name.casefold() for name in final.attributes}),
        operators=frozenset(final.operators),
        external_functions=frozenset(final.external_functions),
        external_types=frozenset(final.external_types),
        external_attributes=frozenset(final.external_attributes),
        needs_server=final.needs_server,
        needs_construct=final.needs_construct,
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
