"""The SQL policy of `read_only_sql` (docs/tools/): caller SQL in, a vetted query or a problem out.

Owns: parsing with two parsers (sqlglot, postgres dialect, for the tree that is rewritten and
regenerated; pglast — libpg_query, PostgreSQL's own grammar — as the second opinion on both the caller's
text and the text that will run), the iterative whole-tree walks, the function denylist, the
deterministic outer LIMIT, and a bounded LRU of verdicts. When sqlglot cannot read a text that
PostgreSQL's grammar accepts and whose tree passes the walk, the text is rewritten and regenerated
from PostgreSQL's tree instead (pglast's deparser); where the two parsers read a text differently,
the query is refused. Pure: no I/O, no trio, no psycopg; it raises
only `InvalidArgumentsError` and `QueryViolationError`. The policy is a filter, not the boundary: the
read-only transaction and the least-privilege role are (docs/tools/read_only_sql.md and docs/operations/).
"""

from __future__ import annotations

import contextlib
import enum
import json
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from pglast import ast as pg_ast
from pglast import parse_sql as pg_parse_sql
from pglast import parser as pg_parser
from pglast.enums.nodes import LimitOption
from pglast.stream import RawStream
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.tokenizer_core import TokenType

from mcp_suite.problems import InvalidArgumentsError, ProblemError, QueryViolationError, echo
from mcp_suite.tools.read_only_sql.denylist import denied_reason

__all__ = ["SQL_MAX_CHARS", "QueryPolicy", "VettedQuery", "vet_sql"]

# docs/tools/: `sql` is 1–10,000 characters (the argument model enforces it; the policy re-checks so that
# it is safe on its own).
SQL_MAX_CHARS: Final = 10_000
# Nesting bounds, far above honest SQL and far below what either parser or the generator can take.
# sqlglot recurses per parenthesis/bracket (RecursionError past about 50 in pure sqlglot, a few
# hundred with sqlglotc) and backtracks on nested brackets (exponential time), so its own token
# stream is bounded before it parses.
MAX_BRACKET_DEPTH: Final = 48  # ( [ { nesting in sqlglot's tokens
MAX_SQUARE_DEPTH: Final = 4  # [ ] nesting (ARRAY[ARRAY[...]]): sqlglot backtracks exponentially
MAX_SUBSCRIPT_CHAIN: Final = 6  # a[1][2]...: sqlglot's time grows with the square of the chain
MAX_SUBSCRIPTS: Final = 64  # [ not after ARRAY: sqlglot spends about 0.5 ms on each subscript
MAX_TREE_DEPTH: Final = 320  # depth of PostgreSQL's parse tree (JSON levels)
# A literal length above this for repeat()/lpad()/rpad() is refused (a computed one is bounded only by
# the statement timeout and the result-size cap: see the residual risks in the docs).
MAX_LITERAL_LENGTH: Final = 1_000_000
SUBQUERY_ALIAS: Final = "q"

_DIALECT: Final = Dialect.get_or_raise("postgres")

_FIX_ONE_SELECT = "Send one SELECT (or VALUES / UNION / INTERSECT / EXCEPT) statement"


@dataclass(frozen=True, slots=True)
class VettedQuery:
    """What the executor runs: SQL regenerated from the validated tree, with its outer LIMIT."""

    sql: str  # regenerated from the validated tree, comments dropped, outer LIMIT applied
    limit: int  # the outer LIMIT actually applied (<= max_rows + 1)
    # What the executed text calls by name, as PostgreSQL reads it (last name component, case-folded):
    # the executor refuses a call of a SECURITY DEFINER function, which the policy cannot see into.
    functions: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()


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
    """

    def __init__(self, *, cache_size: int = 1024) -> None:
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[str, int], VettedQuery | _Refusal] = OrderedDict()
        self._lock = threading.Lock()

    def vet(self, sql: str, *, max_rows: int) -> VettedQuery:
        """The query to run for `sql`, or a raised `InvalidArgumentsError` / `QueryViolationError`.

        Security: see the module docstring; the detail echoes at most 256 characters of `sql`.
        """
        key = (sql, max_rows)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
        if cached is None:
            try:
                cached = vet_sql(sql, max_rows=max_rows)
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


# --- problems ---------------------------------------------------------------------------------------


def _invalid(detail: str, rule: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(detail, invalid_params=("sql",), metadata={"rule": rule})


def _violation(detail: str, rule: str, **extra: str) -> QueryViolationError:
    return QueryViolationError(detail, invalid_params=("sql",), metadata={"rule": rule, **extra})


def _too_deep() -> InvalidArgumentsError:
    return _invalid(
        "The query is nested too deeply to be checked; flatten it (fewer nested parentheses, "
        "brackets, NOTs, CASEs or casts, at most 64 array subscripts), for example with a CTE "
        "(WITH ...).",
        "too-deep",
    )


def _denied_function(name: str, reason: str) -> QueryViolationError:
    return _violation(
        f"The function {echo(name, 64)}() is not allowed: {reason}. Remove it from the query.",
        "denied-function",
        function=echo(name, 64),
    )


# --- the pipeline -----------------------------------------------------------------------------------


def vet_sql(sql: str, *, max_rows: int) -> VettedQuery:
    """The uncached policy (docs/tools/read_only_sql.md). See `QueryPolicy.vet`."""
    if not isinstance(max_rows, int) or isinstance(max_rows, bool) or max_rows < 1:
        raise InvalidArgumentsError("max_rows must be a positive integer.", invalid_params=("max_rows",))
    if not isinstance(sql, str):
        raise _invalid("sql must be a string holding one SELECT statement.", "type")
    if not sql.strip():
        raise _invalid(f"The query is empty. {_FIX_ONE_SELECT}.", "empty")
    if len(sql) > SQL_MAX_CHARS:
        raise _invalid(
            f"The query has {len(sql):,} characters; at most {SQL_MAX_CHARS:,} are allowed.",
            "too-long",
        )
    if "\x00" in sql:
        raise _invalid("The query contains a NUL character; remove it.", "nul")
    cap = max_rows + 1
    try:
        # PostgreSQL's grammar first: it is fast, cannot recurse in Python, and sees what sqlglot
        # misreads (U&"..." identifiers, LISTEN, DISCARD, trailing comments).
        original = _check_postgres(sql, executed=False)
        try:
            tree = _parse_sqlglot(_merge_string_continuations(_without_comments(sql)))
            _check_sqlglot(tree)
            tree, limit = _apply_limit(tree, cap)
            executed = _generate(tree)
            # The second check, on exactly the text that will run: both parsers again, the LIMIT
            # proven on PostgreSQL's own reading, and nothing in it that the caller did not write.
            _check_sqlglot(_parse_sqlglot(executed))
            final = _check_postgres(executed, executed=True)
        except _UnreadableError:
            # PostgreSQL's grammar reads the caller's text and its tree passed the walk, but
            # sqlglot cannot read it, or cannot write back what it read. That alone is no reason
            # to refuse: PostgreSQL's own tree is rewritten and regenerated, and that text gets
            # the same second check (sqlglot's too, when it can read it).
            executed, limit = _regenerate_from_postgres(sql, cap)
            with contextlib.suppress(_UnreadableError):
                _check_sqlglot(_parse_sqlglot(executed))
            final = _check_postgres(executed, executed=True)
        _check_postgres_limit(final.root, limit, cap)
        _check_agreement(original, final, limit)
    except RecursionError:
        raise _too_deep() from None
    return VettedQuery(
        sql=executed,
        limit=limit,
        functions=frozenset(final.functions),
        operators=frozenset(final.operators),
    )


# --- PostgreSQL's own grammar (pglast) -----------------------------------------------------------------

# Node kinds allowed anywhere in a query tree (deny by default: a kind not listed is refused).
_PG_ALLOWED_NODES: Final = frozenset(
    {
        "A_ArrayExpr",
        "A_Const",
        "A_Expr",
        "A_Indices",
        "A_Indirection",
        "A_Star",
        "Alias",
        "BitString",
        "BoolExpr",
        "Boolean",
        "BooleanTest",
        "CaseExpr",
        "CaseWhen",
        "CoalesceExpr",
        "CollateClause",
        "ColumnDef",
        "ColumnRef",
        "CommonTableExpr",
        "CTECycleClause",
        "CTESearchClause",
        "Float",
        "FuncCall",
        "GroupingFunc",
        "GroupingSet",
        "Integer",
        "JoinExpr",
        "JsonAggConstructor",
        "JsonArgument",
        "JsonArrayAgg",
        "JsonArrayConstructor",
        "JsonArrayQueryConstructor",
        "JsonBehavior",
        "JsonFormat",
        "JsonFuncExpr",
        "JsonIsPredicate",
        "JsonKeyValue",
        "JsonObjectAgg",
        "JsonObjectConstructor",
        "JsonOutput",
        "JsonParseExpr",
        "JsonReturning",
        "JsonScalarExpr",
        "JsonSerializeExpr",
        "JsonTable",
        "JsonTableColumn",
        "JsonTablePathSpec",
        "JsonValueExpr",
        "List",
        "MinMaxExpr",
        "NamedArgExpr",
        "NullTest",
        "RangeFunction",
        "RangeSubselect",
        "RangeTableFunc",
        "RangeTableFuncCol",
        "RangeTableSample",
        "RangeVar",
        "ResTarget",
        "RowExpr",
        "SelectStmt",
        "SortBy",
        "SQLValueFunction",
        "String",
        "SubLink",
        "TypeCast",
        "TypeName",
        "WindowDef",
        "WithClause",
        "XmlExpr",
        "XmlSerialize",
    }
)

# Why a refused PostgreSQL node kind is refused, for the detail (the rest get a generic reason).
_PG_NODE_REASONS: Final = {
    "InsertStmt": "data-modifying statements (INSERT) are not allowed, also not inside a CTE",
    "UpdateStmt": "data-modifying statements (UPDATE) are not allowed, also not inside a CTE",
    "DeleteStmt": "data-modifying statements (DELETE) are not allowed, also not inside a CTE",
    "MergeStmt": "data-modifying statements (MERGE) are not allowed, also not inside a CTE",
    "ParamRef": "bind parameters ($1) are not supported; write the values inline as literals",
    "IntoClause": "SELECT ... INTO creates a table; remove the INTO clause",
    "LockingClause": "row locks (FOR UPDATE / FOR SHARE) are not allowed; remove them",
}

_PG_STATEMENT_FIX: Final = {
    "ExplainStmt": "EXPLAIN is not run as a query; send the SELECT itself to explain_sql",
    "TransactionStmt": "transaction control is not needed (every call is one read-only "
    "transaction); send only the SELECT",
    "VariableSetStmt": "SET / RESET are not allowed; settings are fixed by the server",
    "VariableShowStmt": "SHOW is not available; use current_setting('name') in a SELECT",
    "CopyStmt": "COPY is not allowed; use a SELECT",
    "DoStmt": "DO blocks are not allowed; use a SELECT",
    "CallStmt": "CALL is not allowed; use a SELECT",
    "DeclareCursorStmt": "cursors are not allowed; use a SELECT",
}


def _pg_refuse_node(kind: str) -> QueryViolationError:
    reason = _PG_NODE_REASONS.get(kind)
    if reason is None:
        return _violation(
            f"The query contains a construct that is not allowed ({kind}). "
            f"{_FIX_ONE_SELECT} that only reads.",
            "forbidden-node",
            node=kind,
        )
    rule = {"ParamRef": "bind-parameter", "IntoClause": "select-into", "LockingClause": "row-lock"}
    return _violation(f"The query is not allowed: {reason}.", rule.get(kind, "data-modifying"), node=kind)


@dataclass(slots=True)
class _PgFacts:
    """What PostgreSQL's reading of a text refers to: the root SELECT, names and constants."""

    root: dict[str, Any]
    columns: set[tuple[str, ...]] = field(default_factory=set)
    relations: set[tuple[str, str]] = field(default_factory=set)
    constants: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    functions: set[str] = field(default_factory=set)
    operators: set[str] = field(default_factory=set)


def _check_postgres(sql: str, *, executed: bool) -> _PgFacts:
    """PostgreSQL's grammar: one statement, a SelectStmt root, allowed nodes only, no denied function.

    `executed`: `sql` is the regenerated text; a parse failure there is the validator's limit, not a
    syntax error of the caller's.
    """
    try:
        document = json.loads(pg_parser.parse_sql_json(sql))
    except pg_parser.ParseError as error:
        message = str(error.args[0]) if error.args else "syntax error"
        if "memory exhausted" in message or "stack depth" in message:
            raise _too_deep() from None
        if executed:
            raise _UnreadableError(_unsupported("")) from None
        raise _invalid(
            f"PostgreSQL cannot parse the query: {echo(message, 160)}. Fix the syntax; "
            f"{_FIX_ONE_SELECT[0].lower()}{_FIX_ONE_SELECT[1:]}.",
            "syntax",
        ) from None
    statements = document.get("stmts", [])
    if not statements:
        raise _invalid(
            f"The query holds no statement, only comments or semicolons. {_FIX_ONE_SELECT}.", "empty"
        )
    if len(statements) > 1:
        raise _violation(
            f"The query holds {len(statements)} statements; only one is allowed. "
            "Remove the extra statements (and the semicolons between them).",
            "multiple-statements",
        )
    root_node = statements[0]["stmt"]
    (root_kind,) = root_node
    if root_kind != "SelectStmt":
        fix = _PG_STATEMENT_FIX.get(root_kind)
        if fix is None and root_kind in _PG_NODE_REASONS:
            raise _pg_refuse_node(root_kind)
        raise _violation(
            f"Only SELECT, VALUES and set operations are allowed, not "
            f"{root_kind.removesuffix('Stmt')} statements. {fix or _FIX_ONE_SELECT}.",
            "root-not-select",
            node=root_kind,
        )
    facts = _PgFacts(root=root_node["SelectStmt"])
    _walk_postgres(root_node, facts)
    return facts


def _walk_postgres(root: dict[str, Any], facts: _PgFacts) -> None:
    """Iterative walk over the whole JSON parse tree, one level at a time (no recursion; the depth is
    bounded explicitly). In pglast's JSON a key starting with a capital letter is a node kind; every
    other key is a field."""
    level: list[Any] = [root]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_TREE_DEPTH:
            raise _too_deep()
        below: list[Any] = []
        more = below.append
        for node in level:
            if type(node) is list:
                below.extend(item for item in node if type(item) is dict or type(item) is list)
                continue
            for key, value in node.items():
                if key[0].isupper():
                    if key not in _PG_ALLOWED_NODES:
                        raise _pg_refuse_node(key)
                    if key in _PG_NOTED_NODES:
                        _note_pg_node(key, value, facts)
                elif key in _PG_REFUSED_FIELDS:
                    raise _pg_refuse_node(_PG_REFUSED_FIELDS[key])
                if type(value) is dict or type(value) is list:
                    more(value)
        level = below


_PG_NOTED_NODES: Final = frozenset(
    {"FuncCall", "RangeTableSample", "ColumnRef", "RangeVar", "A_Const", "A_Expr", "SortBy", "SubLink"}
)
# Where an operator's name sits in the nodes that name one (`OPERATOR(s.op)` gives two parts).
_PG_OPERATOR_FIELDS: Final = {"A_Expr": "name", "SortBy": "useOp", "SubLink": "operName"}
# Typed (unwrapped) fields that carry a refused construct.
_PG_REFUSED_FIELDS: Final = {"intoClause": "IntoClause", "lockingClause": "LockingClause"}


def _note_pg_node(kind: str, value: dict[str, Any], facts: _PgFacts) -> None:
    if kind == "FuncCall":
        _check_pg_function(value)
        facts.functions.add(_last_name(value["funcname"]))
    elif kind == "RangeTableSample":
        # TABLESAMPLE <method> names a function too (a tsm_handler): the same denylist applies.
        _check_pg_function({"funcname": value["method"]})
        facts.functions.add(_last_name(value["method"]))
    elif kind in _PG_OPERATOR_FIELDS:
        names = value.get(_PG_OPERATOR_FIELDS[kind])
        if names:
            facts.operators.add(_last_name(names))
    elif kind == "ColumnRef":
        # A bare `*` names nothing (the wrapper of a VALUES root adds one).
        names = tuple(part["String"]["sval"] for part in value["fields"] if "String" in part)
        if names:
            facts.columns.add(names)
    elif kind == "RangeVar":
        facts.relations.add((value.get("schemaname", ""), value["relname"]))
    else:  # A_Const
        facts.constants[_constant(value)] += 1


def _last_name(parts: list[dict[str, Any]]) -> str:
    """The case-folded last component of a qualified name list (`[{"String": {"sval": ...}}, ...]`)."""
    return str(parts[-1]["String"]["sval"]).casefold()


def _constant(const: dict[str, Any]) -> tuple[Any, ...]:
    """A comparable value for a constant: numbers by value, strings case-folded (sqlglot upper-cases
    some keywords it reads as strings, such as interval units)."""
    if "ival" in const:
        return ("number", Decimal(const["ival"].get("ival", 0)))
    if "fval" in const:
        return ("number", Decimal(const["fval"]["fval"]))
    if "sval" in const:
        return ("string", const["sval"].get("sval", "").casefold())
    if "bsval" in const:
        return ("bits", const["bsval"]["bsval"].casefold())
    if "boolval" in const:
        return ("bool", bool(const["boolval"].get("boolval", False)))
    return ("null",)


def _check_agreement(original: _PgFacts, final: _PgFacts, limit: int) -> None:
    """The executed text names exactly the columns and relations the caller wrote, and no constant
    the caller did not write (parser differentials: sqlglot reads `U&"..."` identifiers, `0x1F`,
    `1_000` or adjacent strings differently from PostgreSQL, and a clause it silently dropped would
    change the result). Only the caller's outer LIMIT may go: it is replaced by ours."""
    added = final.constants.copy()
    added[("number", Decimal(limit))] -= 1  # the outer LIMIT is ours
    added -= original.constants
    replaced = _PgFacts(root={})
    if "limitCount" in original.root:
        _walk_postgres(original.root["limitCount"], replaced)
    if (
        added
        or not final.columns <= original.columns
        or not final.relations <= original.relations
        or not original.columns <= final.columns | replaced.columns
        or not original.relations <= final.relations | replaced.relations
    ):
        raise _invalid(
            "The validator reads part of this query differently from PostgreSQL. Write it in "
            'plainer syntax: no Unicode-escaped identifiers (U&"..."), no 0x/0o/0b or '
            "underscored number literals, one string literal instead of adjacent ones, "
            "INTERVAL '1 day' instead of INTERVAL '1' DAY.",
            "parser-disagreement",
        )


def _check_pg_function(call: dict[str, Any]) -> None:
    parts = [part["String"]["sval"] for part in call["funcname"]]
    name = parts[-1]
    reason = denied_reason(name)
    if reason is not None:
        raise _denied_function(".".join(parts), reason)
    if name.casefold() in _SIZED_FUNCTIONS:
        args = call.get("args", [])
        size = args[1].get("A_Const", {}).get("ival") if len(args) > 1 else None
        if isinstance(size, dict) and size.get("ival", 0) > MAX_LITERAL_LENGTH:
            raise _violation(
                f"{name}() with a length of {size['ival']:,} would build a huge value in the "
                f"server's memory; use a length of at most {MAX_LITERAL_LENGTH:,}.",
                "oversized-value",
                function=echo(name, 64),
            )


# Functions whose second argument is the length of the value they build.
_SIZED_FUNCTIONS: Final = frozenset({"repeat", "lpad", "rpad"})


def _check_postgres_limit(select: dict[str, Any], limit: int, cap: int) -> None:
    """The executed text's root must carry `LIMIT <limit>`; anything else means the rewrite failed."""
    count = select.get("limitCount", {}).get("A_Const", {})
    value = count.get("ival", {}).get("ival", 0) if "ival" in count else None
    if select.get("limitOption") != "LIMIT_OPTION_COUNT" or value != limit or limit > cap:
        raise _invalid(
            "The query's row limit could not be applied safely; put the LIMIT on the outermost "
            "SELECT, or wrap the query: SELECT * FROM (<query>) AS q.",
            "limit-rewrite",
        )


def _without_comments(sql: str) -> str:
    """`sql` with every comment blanked out exactly where PostgreSQL's own lexer finds one.

    sqlglot then reads PostgreSQL's token stream: no comment can split a keyword pair for it
    (`ORDER /* x */ BY`) or end where PostgreSQL's nested comments do not. Newlines are kept, so
    line and column numbers in sqlglot's errors still point into the caller's text.
    """
    if "--" not in sql and "/*" not in sql:
        return sql
    pieces: list[str] = []
    done = 0
    for token in pg_parser.scan(sql):
        if token.name in ("SQL_COMMENT", "C_COMMENT"):
            pieces.append(sql[done : token.start])
            comment = sql[token.start : token.end + 1]
            pieces.append("".join(char if char == "\n" else " " for char in comment))
            done = token.end + 1
    pieces.append(sql[done:])
    return "".join(pieces)


# --- sqlglot -------------------------------------------------------------------------------------


def _parse_sqlglot(sql: str) -> exp.Expr:
    """sqlglot's single statement, or a problem. Anything sqlglot cannot read fails closed."""
    try:
        tokens = _DIALECT.tokenize(sql)
    except Exception:  # noqa: BLE001  # any tokenizer failure on caller text refuses (fail closed)
        raise _unsupported("") from None
    _check_token_depth(tokens)
    try:
        statements = _DIALECT.parser().parse(tokens, sql)
    except ParseError as error:
        raise _UnreadableError(_unsupported(_parse_error_place(error))) from None
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001  # a parser bug on caller text refuses (fail closed)
        raise _unsupported("") from None
    real = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(real) != 1:
        # PostgreSQL counted exactly one statement; a disagreement refuses (fail closed).
        raise _violation(
            f"The query holds {len(real)} statements as read by the validator; only one is "
            "allowed. Remove semicolons and any text after the statement.",
            "multiple-statements",
        )
    return real[0]


class _UnreadableError(InvalidArgumentsError):
    """sqlglot's parser cannot read the text (an `unsupported-syntax` refusal, unless PostgreSQL's
    own tree can stand in for sqlglot's)."""

    def __init__(self, problem: InvalidArgumentsError) -> None:
        super().__init__(problem.detail, invalid_params=problem.invalid_params, metadata=problem.metadata)


def _unsupported(place: str) -> InvalidArgumentsError:
    return _invalid(
        f"The query uses syntax the validator does not support{place}. Rewrite that part in "
        "plain PostgreSQL syntax: a function call instead of special syntax, or VALUES with "
        "ORDER BY / LIMIT wrapped in a subquery (FROM (VALUES ...) AS v(x)).",
        "unsupported-syntax",
    )


def _parse_error_place(error: ParseError) -> str:
    """' (near line L, column C: "text")' from sqlglot's structured error, without its escapes."""
    first = error.errors[0] if error.errors else {}
    line, col, near = first.get("line"), first.get("col"), first.get("highlight")
    if not isinstance(line, int) or not isinstance(col, int):
        return ""
    shown = f': "{echo(near, 40)}"' if isinstance(near, str) and near.isprintable() else ""
    return f" (near line {line}, column {col}{shown})"


_OPEN: Final = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE})
_CLOSE: Final = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE})


def _check_token_depth(tokens: list[Any]) -> None:
    """Bound what makes sqlglot recurse or backtrack, before it parses (docs/tools/read_only_sql.md: no deep
    nesting may reach Python's recursion limit; and no text may buy exponential parse time)."""
    depth = square = chain = subscripts = 0
    previous = None
    for token in tokens:
        kind = token.token_type
        if kind in _OPEN:
            depth += 1
            if kind is TokenType.L_BRACKET:
                square += 1
                chain = chain + 1 if previous is TokenType.R_BRACKET else 1
                subscripts += previous is not TokenType.ARRAY
                if square > MAX_SQUARE_DEPTH or chain > MAX_SUBSCRIPT_CHAIN or subscripts > MAX_SUBSCRIPTS:
                    raise _too_deep()
            if depth > MAX_BRACKET_DEPTH:
                raise _too_deep()
        elif kind in _CLOSE:
            depth -= 1
            if kind is TokenType.R_BRACKET:
                square -= 1
        previous = kind


# sqlglot expression classes refused anywhere (fail closed on what sqlglot models as statements).
_SQLGLOT_REFUSED: Final[tuple[type[exp.Expr], ...]] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Copy,
    exp.Command,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Grant,
    exp.Revoke,
    exp.Set,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Into,
    exp.Lock,
    exp.Placeholder,
    exp.Parameter,
    exp.SessionParameter,
    exp.Declare,
    exp.Execute,
    exp.Use,
    exp.Analyze,
    exp.Describe,
    exp.Kill,
    exp.Pragma,
    exp.Cache,
    exp.Uncache,
    exp.Refresh,
    exp.LoadData,
    exp.Comment,
    exp.Show,
    exp.NextValueFor,
)


def _refuse_sqlglot(node: exp.Expr) -> QueryViolationError:
    if isinstance(node, exp.Insert | exp.Update | exp.Delete | exp.Merge):
        kind = type(node).__name__.upper()
        return _violation(
            f"The query is not allowed: data-modifying statements ({kind}) are not allowed, "
            "also not inside a CTE.",
            "data-modifying",
        )
    if isinstance(node, exp.Into):
        return _violation(
            "The query is not allowed: SELECT ... INTO creates a table; remove the INTO clause.",
            "select-into",
        )
    if isinstance(node, exp.Lock):
        return _violation(
            "The query is not allowed: row locks (FOR UPDATE / FOR SHARE) are not allowed; remove them.",
            "row-lock",
        )
    if isinstance(node, exp.Placeholder | exp.Parameter | exp.SessionParameter):
        return _violation(
            "The query is not allowed: bind parameters ($1, %s, :name, ?) are not supported; "
            "write the values inline as literals.",
            "bind-parameter",
        )
    if isinstance(node, exp.Command):
        return _violation(
            f"The query is not allowed: {echo(str(node.this).upper(), 32)} is a command the "
            f"validator cannot inspect. {_FIX_ONE_SELECT}.",
            "opaque-command",
        )
    return _violation(
        f"The query is not allowed: it contains a {type(node).__name__.upper()} construct. "
        f"{_FIX_ONE_SELECT} that only reads.",
        "forbidden-node",
    )


def _iter_tree(root: exp.Expr) -> Iterator[exp.Expr]:
    """Every node of the tree, iteratively (no recursion, whatever the depth)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.iter_expressions())


def _check_sqlglot(tree: exp.Expr) -> None:
    if not isinstance(tree, exp.Select | exp.SetOperation | exp.Values | exp.Subquery):
        raise _violation(
            f"Only SELECT, VALUES and set operations are allowed. {_FIX_ONE_SELECT}.",
            "root-not-select",
        )
    for node in _iter_tree(tree):
        kind = type(node)
        verdict = _SQLGLOT_VERDICTS.get(kind)
        if verdict is None:
            verdict = _sqlglot_verdict(kind)
        if verdict is _Verdict.FINE:
            continue
        if verdict is _Verdict.REFUSED:
            raise _refuse_sqlglot(node)
        name = node.name if verdict is _Verdict.NAMED_CALL else _SQLGLOT_FUNCTION_NAMES[kind]
        reason = denied_reason(name) if name else None
        if reason is not None:
            raise _denied_function(name, reason)


class _Verdict(enum.Enum):
    FINE = enum.auto()
    REFUSED = enum.auto()
    NAMED_CALL = enum.auto()  # Anonymous: the caller's function name is on the node
    KNOWN_CALL = enum.auto()  # a function sqlglot knows: its name is fixed by the class


# Memo of the verdict per sqlglot class (deterministic; filled on first sight, thread-safe enough:
# two threads computing the same entry store the same value).
_SQLGLOT_VERDICTS: dict[type[exp.Expr], _Verdict] = {}
_SQLGLOT_FUNCTION_NAMES: dict[type[exp.Expr], str] = {}


def _sqlglot_verdict(kind: type[exp.Expr]) -> _Verdict:
    if issubclass(kind, _SQLGLOT_REFUSED):
        verdict = _Verdict.REFUSED
    elif issubclass(kind, exp.Anonymous | exp.AnonymousAggFunc):
        verdict = _Verdict.NAMED_CALL
    elif issubclass(kind, exp.Func):
        denied = [name for name in kind.sql_names() if denied_reason(name) is not None]
        _SQLGLOT_FUNCTION_NAMES[kind] = denied[0] if denied else ""
        verdict = _Verdict.KNOWN_CALL
    else:
        verdict = _Verdict.FINE
    _SQLGLOT_VERDICTS[kind] = verdict
    return verdict


# --- the deterministic LIMIT (docs/tools/read_only_sql.md) --------------------------------------


def _literal_limit(clause: exp.Expr | None) -> int | None:
    """The caller's outer limit when it is a plain non-negative integer literal, else None.

    None (then `max_rows + 1` applies) for: no limit, LIMIT ALL / NULL, expressions, strings,
    PERCENT, WITH TIES.
    """
    if isinstance(clause, exp.Limit):
        value = clause.expression
        extra = {k for k, v in clause.args.items() if v is not None and k != "expression"}
    elif isinstance(clause, exp.Fetch):
        value = clause.args.get("count")
        options = clause.args.get("limit_options")
        if options is not None and (options.args.get("percent") or options.args.get("with_ties")):
            return None
        if value is None:
            return 1  # FETCH FIRST ROW ONLY: the count defaults to one (SQL standard, PostgreSQL)
        extra = set()
    else:
        return None
    if extra or not isinstance(value, exp.Literal) or value.is_string:
        return None
    text = value.this
    if not (isinstance(text, str) and text.isascii() and text.isdigit()):
        return None
    return int(text)


def _apply_limit(tree: exp.Expr, cap: int) -> tuple[exp.Expr, int]:
    """Put `LIMIT min(literal, cap)` on the whole result. Subquery and CTE limits never count."""
    if isinstance(tree, exp.Select | exp.SetOperation):
        literal = _literal_limit(tree.args.get("limit"))
        limit = cap if literal is None else min(literal, cap)
        tree.set("limit", exp.Limit(expression=exp.Literal.number(limit)))
        return tree, limit
    # VALUES or a parenthesised query at the root: wrap it, keeping its own limit inside.
    literal = _literal_limit(tree.args.get("limit"))
    limit = cap if literal is None else min(literal, cap)
    wrapped = (
        exp.select("*")
        .from_(exp.Subquery(this=tree, alias=exp.TableAlias(this=exp.to_identifier(SUBQUERY_ALIAS))))
        .limit(limit)
    )
    return wrapped, limit


def _regenerate_from_postgres(sql: str, cap: int) -> tuple[str, int]:
    """The caller's text as PostgreSQL parses it, with `LIMIT min(literal, cap)` on the root
    SelectStmt (a SELECT, a set operation or VALUES: PostgreSQL puts the outer LIMIT there for
    all three), regenerated by pglast's deparser (comments dropped). `_check_postgres` has
    already accepted `sql`; the text returned is checked again like any other.
    """
    (raw,) = pg_parse_sql(sql)
    root: Any = raw.stmt  # a SelectStmt: `_check_postgres` has seen the root
    literal = _pg_literal_limit(root)
    limit = cap if literal is None else min(literal, cap)
    root.limitCount = pg_ast.A_Const(isnull=False, val=pg_ast.Integer(ival=limit))
    root.limitOption = LimitOption.LIMIT_OPTION_COUNT
    try:
        text: str = RawStream()(raw)
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001  # a deparser gap on caller text refuses (fail closed)
        raise _unsupported("") from None
    return text, limit


def _pg_literal_limit(select: Any) -> int | None:
    """The caller's outer LIMIT in PostgreSQL's tree when it is a plain non-negative integer, else
    None (no limit, LIMIT ALL / NULL, an expression, a string, WITH TIES)."""
    count = select.limitCount
    if select.limitOption != LimitOption.LIMIT_OPTION_COUNT or not isinstance(count, pg_ast.A_Const):
        return None
    value = count.val
    number = value.ival if isinstance(value, pg_ast.Integer) and not count.isnull else None
    if not isinstance(number, int) or number < 0:
        return None
    return number


# One plain string literal in PostgreSQL's syntax (standard_conforming_strings is on: `''` is the
# only escape).
_PLAIN_STRING: Final = re.compile(r"'(?:[^']|'')*'")


def _merge_string_continuations(sql: str) -> str:
    """`'foo'<newline>'bar'` as the one literal `'foobar'` that PostgreSQL reads it as.

    PostgreSQL's lexer joins string literals separated only by whitespace that holds a newline;
    sqlglot would read the second as an alias of the first. Only plain literals are joined here
    (sqlglot cannot read an E'', U&'' or B'' continuation at all, so PostgreSQL's tree stands in for
    those). Newlines are kept after the literal, so sqlglot's error positions keep their lines.
    """
    if "\n" not in sql or "'" not in sql:
        return sql
    pieces: list[str] = []
    done = 0
    for token in pg_parser.scan(sql):
        text = sql[token.start : token.end + 1]
        if token.name != "SCONST" or not text.startswith("'") or "\n" not in text:
            continue
        chunks = _PLAIN_STRING.findall(text)
        pieces.append(sql[done : token.start])
        pieces.append("'" + "".join(chunk[1:-1] for chunk in chunks) + "'" + "\n" * text.count("\n"))
        done = token.end + 1
    pieces.append(sql[done:])
    return "".join(pieces)


def _generate(tree: exp.Expr) -> str:
    try:
        # copy=False: the tree is ours and never used again (the copy costs a third of the time).
        return _DIALECT.generate(tree, copy=False, comments=False, normalize_functions=False)
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001  # a generator failure on caller text refuses (fail closed)
        problem = _invalid(
            f"The query uses syntax the validator cannot reproduce safely. {_FIX_ONE_SELECT} "
            "in plain PostgreSQL syntax.",
            "unsupported-syntax",
        )
        raise _UnreadableError(problem) from None
