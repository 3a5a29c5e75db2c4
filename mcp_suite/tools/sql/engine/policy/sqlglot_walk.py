"""sqlglot's reading of a text (postgres dialect): the tree the LIMIT is put on, and a second opinion.

Owns: the text sqlglot is given (comments blanked and string continuations joined where PostgreSQL's
own lexer finds them), bounds on sqlglot's token stream before it parses (it recurses per bracket and
backtracks on nested ones), parsing to one statement, and the iterative whole-tree walk: statement
classes refused anywhere, the function denylist on every call, and the catalogue rule (`catalogue`) on
the relations, functions and types sqlglot reads (current_setting()'s argument is checked on
PostgreSQL's reading only). Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from typing import Any, Final

from pglast import parser as pg_parser
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.tokenizer_core import TokenType

from mcp_suite.problems import QueryViolationError
from mcp_suite.tools.sql.engine.denylist import denied_reason
from mcp_suite.tools.sql.engine.policy import refusals
from mcp_suite.tools.sql.engine.policy.catalogue import check_catalogue

__all__ = [
    "DIALECT",
    "check_sqlglot",
    "forget_verdicts",
    "merge_string_continuations",
    "parse_sqlglot",
    "without_comments",
]

DIALECT: Final = Dialect.get_or_raise("postgres")

# Nesting bounds, far above honest SQL and far below what sqlglot or its generator can take. sqlglot
# recurses per parenthesis/bracket (RecursionError past about 50 in pure sqlglot, a few hundred with
# sqlglotc) and backtracks on nested brackets (exponential time), so its own token stream is bounded
# before it parses.
MAX_BRACKET_DEPTH: Final = 48  # ( [ { nesting in sqlglot's tokens
MAX_SQUARE_DEPTH: Final = 4  # [ ] nesting (ARRAY[ARRAY[...]]): sqlglot backtracks exponentially
MAX_SUBSCRIPT_CHAIN: Final = 6  # a[1][2]...: sqlglot's time grows with the square of the chain
MAX_SUBSCRIPTS: Final = 64  # [ not after ARRAY: each subscript adds to sqlglot's parse time (docs/tools/)

_OPEN: Final = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE})
_CLOSE: Final = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE})
# One plain string literal in PostgreSQL's syntax (standard_conforming_strings is on: `''` is the
# only escape).
_PLAIN_STRING: Final = re.compile(r"'(?:[^']|'')*'")


# --- the text sqlglot reads -------------------------------------------------------------------------


def without_comments(sql: str) -> str:
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


def merge_string_continuations(sql: str) -> str:
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


# --- parsing ----------------------------------------------------------------------------------------


def parse_sqlglot(sql: str, dialect: Dialect = DIALECT) -> exp.Expr:
    """sqlglot's single statement, or a problem: `UnreadableError` where sqlglot cannot tokenize or
    parse the text (PostgreSQL's reading then stands alone), another refusal for anything else.

    `dialect`: the postgres dialect; a test passes one whose parts fail.
    """
    try:
        tokens = dialect.tokenize(sql)
    except Exception:  # noqa: BLE001  # sqlglot cannot read it (pgvector's <#>, say): as a ParseError
        raise refusals.UnreadableError(refusals.unsupported()) from None
    _check_token_depth(tokens)
    try:
        statements = dialect.parser().parse(tokens, sql)
    except ParseError:
        # PostgreSQL's reading then stands alone (vet_sql): these words never reach a caller.
        raise refusals.UnreadableError(refusals.unsupported()) from None
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001  # a sqlglot bug (a TypeError on pgvector's <#>): as a ParseError
        raise refusals.UnreadableError(refusals.unsupported()) from None
    real = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(real) != 1:
        # PostgreSQL counted exactly one statement; a disagreement refuses (fail closed).
        raise refusals.multiple_statements_as_read(len(real))
    return real[0]


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
                    raise refusals.too_deep()
            if depth > MAX_BRACKET_DEPTH:
                raise refusals.too_deep()
        elif kind in _CLOSE:
            depth -= 1
            if kind is TokenType.R_BRACKET:
                square -= 1
        previous = kind


# --- the walk ---------------------------------------------------------------------------------------

# sqlglot expression classes refused anywhere (fail closed on what sqlglot models as statements).
_REFUSED: Final[tuple[type[exp.Expr], ...]] = (
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


def check_sqlglot(tree: exp.Expr, *, allow_catalogue: bool = False) -> None:
    """A query root, no refused class anywhere in the tree, no denied function called, and (unless
    `allow_catalogue`, MCP_SQL_ALLOW_CATALOGUE) no catalogue read the catalogue rule refuses."""
    if not isinstance(tree, exp.Select | exp.SetOperation | exp.Values | exp.Subquery):
        raise refusals.not_a_query()
    relations: set[tuple[str, str]] = set()
    functions: set[str] = set()
    types: set[str] = set()
    for node in _iter_tree(tree):
        if not allow_catalogue:
            _note_catalogue(node, relations, functions, types)
        kind = type(node)
        verdict = _VERDICTS.get(kind)
        if verdict is None:
            verdict = _verdict(kind)
        if verdict is _Verdict.FINE:
            continue
        if verdict is _Verdict.REFUSED:
            raise _refuse(node)
        name = node.name if verdict is _Verdict.NAMED_CALL else _FUNCTION_NAMES[kind]
        reason = denied_reason(name) if name else None
        if reason is not None:
            raise refusals.denied_function(name, reason)
    if not allow_catalogue:
        check_catalogue(relations=relations, functions=functions, types=types)


def _note_catalogue(
    node: exp.Expr, relations: set[tuple[str, str]], functions: set[str], types: set[str]
) -> None:
    """What the catalogue rule reads in sqlglot's tree: a named table (not a table function), every
    name a function goes by (the caller's for an unknown one, sqlglot's for one it knows), a type."""
    if isinstance(node, exp.Table):
        if isinstance(node.this, exp.Identifier):
            relations.add((node.db, node.name))
    elif isinstance(node, exp.Anonymous | exp.AnonymousAggFunc):
        functions.add(node.name)
    elif isinstance(node, exp.Func):
        functions.update(type(node).sql_names())
    elif isinstance(node, exp.DataType):
        # `REGCLASS`, `"pg_catalog"."regrole"`: the last name component, unquoted (an array type
        # `ACLITEM[]` holds its element type as a node of its own).
        types.add(node.sql(DIALECT).split(".")[-1].strip('"'))


def _refuse(node: exp.Expr) -> QueryViolationError:
    if isinstance(node, exp.Insert | exp.Update | exp.Delete | exp.Merge):
        return refusals.data_modifying(type(node).__name__.upper())
    if isinstance(node, exp.Into):
        return refusals.select_into()
    if isinstance(node, exp.Lock):
        return refusals.row_lock()
    if isinstance(node, exp.Placeholder | exp.Parameter | exp.SessionParameter):
        return refusals.bind_parameter("$1, %s, :name, ?")
    if isinstance(node, exp.Command):
        return refusals.opaque_command(str(node.this))
    return refusals.forbidden_construct(type(node).__name__)


def _iter_tree(root: exp.Expr) -> Iterator[exp.Expr]:
    """Every node of the tree, iteratively (no recursion, whatever the depth)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.iter_expressions())


class _Verdict(enum.Enum):
    FINE = enum.auto()
    REFUSED = enum.auto()
    NAMED_CALL = enum.auto()  # Anonymous: the caller's function name is on the node
    KNOWN_CALL = enum.auto()  # a function sqlglot knows: its name is fixed by the class


# Memo of the verdict per sqlglot class (deterministic; filled on first sight, thread-safe enough:
# two threads computing the same entry store the same value).
_VERDICTS: dict[type[exp.Expr], _Verdict] = {}
_FUNCTION_NAMES: dict[type[exp.Expr], str] = {}


def forget_verdicts() -> None:
    """Empty the memo: each class is judged afresh on its next sight (the first-sight path), for
    instance after the denylist changed."""
    _VERDICTS.clear()
    _FUNCTION_NAMES.clear()


def _verdict(kind: type[exp.Expr]) -> _Verdict:
    if issubclass(kind, _REFUSED):
        verdict = _Verdict.REFUSED
    elif issubclass(kind, exp.Anonymous | exp.AnonymousAggFunc):
        verdict = _Verdict.NAMED_CALL
    elif issubclass(kind, exp.Func):
        denied = [name for name in kind.sql_names() if denied_reason(name) is not None]
        _FUNCTION_NAMES[kind] = denied[0] if denied else ""
        verdict = _Verdict.KNOWN_CALL
    else:
        verdict = _Verdict.FINE
    _VERDICTS[kind] = verdict
    return verdict
