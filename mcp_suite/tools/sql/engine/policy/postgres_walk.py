"""PostgreSQL's own reading of a text (pglast, libpg_query): the first and the last opinion.

Owns: parsing with PostgreSQL's grammar, the iterative walk of its JSON tree against an allowlist of
node kinds, the function denylist and the size bound on the functions that build values, the facts
the walk notes (relations, the functions and operators called, the types named), and the catalogue
rule (`catalogue`) and the allow-lists (`allowlist`) on them. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from pglast import parser as pg_parser

from mcp_suite.tools.sql.engine.denylist import denied_reason
from mcp_suite.tools.sql.engine.policy import allowlist, refusals
from mcp_suite.tools.sql.engine.policy.catalogue import check_catalogue

__all__ = ["MAX_LITERAL_LENGTH", "MAX_TREE_DEPTH", "PgFacts", "check_postgres", "walk"]

MAX_TREE_DEPTH: Final = 320  # depth of PostgreSQL's parse tree (JSON levels)
# A literal length above this for repeat()/lpad()/rpad() is refused (a computed one is bounded only by
# the statement timeout and the result-size cap: see the residual risks in the docs).
MAX_LITERAL_LENGTH: Final = 1_000_000

# Node kinds allowed anywhere in a query tree (deny by default: a kind not listed is refused).
_ALLOWED_NODES: Final = frozenset(
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

_NOTED_NODES: Final = frozenset({"FuncCall", "RangeTableSample", "RangeVar", "A_Expr", "SortBy", "SubLink"})
# Where an operator's name sits in the nodes that name one (`OPERATOR(s.op)` gives two parts).
_OPERATOR_FIELDS: Final = {"A_Expr": "name", "SortBy": "useOp", "SubLink": "operName"}
# Typed (unwrapped) fields that carry a refused construct.
_REFUSED_FIELDS: Final = {"intoClause": "IntoClause", "lockingClause": "LockingClause"}
# Functions whose second argument is the length of the value they build.
_SIZED_FUNCTIONS: Final = frozenset({"repeat", "lpad", "rpad"})
# TABLESAMPLE's built-in methods: they name a tsm_handler, which only TABLESAMPLE may call.
_SAMPLING_METHODS: Final = frozenset({"bernoulli", "system"})


@dataclass(slots=True)
class PgFacts:
    """What PostgreSQL's reading of a text refers to: the root SELECT and the names it holds."""

    root: dict[str, Any]
    relations: set[tuple[str, str]] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    operators: set[str] = field(default_factory=set)
    types: set[str] = field(default_factory=set)  # last name component, case-folded
    settings: set[str | None] = field(default_factory=set)  # current_setting()'s name; None: computed
    calls: set[tuple[str, ...]] = field(default_factory=set)  # each function name as written
    named_types: set[tuple[str, ...]] = field(default_factory=set)  # each type name as written
    # Names outside PostgreSQL's own schemas, (schema or "", name) case-folded: the engine judges
    # them on the role's catalogue (`allowlist.EXTERNAL`).
    external_functions: set[tuple[str, str]] = field(default_factory=set)
    external_types: set[tuple[str, str]] = field(default_factory=set)


def check_postgres(sql: str, *, executed: bool, allow_catalogue: bool = False) -> PgFacts:
    """PostgreSQL's grammar: one statement, a SelectStmt root, allowed nodes only, no denied function,
    (unless `allow_catalogue`, MCP_SQL_ALLOW_CATALOGUE) no catalogue read the catalogue rule refuses,
    and only functions and types on the allow-lists (`allowlist`); names outside PostgreSQL's own
    schemas are noted for the engine (`PgFacts.external_functions`, `external_types`).

    `executed`: `sql` is the regenerated text; a parse failure there is the validator's limit, not a
    syntax error of the caller's.
    """
    try:
        document = json.loads(pg_parser.parse_sql_json(sql))
    except pg_parser.ParseError as error:
        message = str(error.args[0]) if error.args else "syntax error"
        if "memory exhausted" in message or "stack depth" in message:
            raise refusals.too_deep() from None
        if executed:
            raise refusals.UnreadableError(refusals.unsupported()) from None
        raise refusals.syntax_error(message) from None
    statements = document.get("stmts", [])
    if not statements:
        raise refusals.no_statement()
    if len(statements) > 1:
        raise refusals.multiple_statements(len(statements))
    root_node = statements[0]["stmt"]
    (root_kind,) = root_node
    if root_kind != "SelectStmt":
        if root_kind in refusals.DATA_MODIFYING:
            raise refusals.refused_node(root_kind)
        raise refusals.not_a_query(root_kind)
    facts = PgFacts(root=root_node["SelectStmt"])
    walk(root_node, facts)
    if not allow_catalogue:
        check_catalogue(
            relations=facts.relations, functions=facts.functions, types=facts.types, settings=facts.settings
        )
    _check_allowlists(facts, allow_catalogue=allow_catalogue)
    return facts


def _check_allowlists(facts: PgFacts, *, allow_catalogue: bool) -> None:
    """Every function and type named is allowed, or noted as external; in a fixed order (sorted)."""
    for parts in sorted(facts.calls):
        schema = parts[-2].casefold() if len(parts) > 1 else ""
        name = parts[-1].casefold()
        verdict = allowlist.function_verdict(schema, name, allow_catalogue=allow_catalogue)
        if verdict is allowlist.EXTERNAL:
            facts.external_functions.add((schema, name))
        elif verdict is not None and verdict[0] not in ("denied", "catalogue"):
            # The denylist and the catalogue rule word their own refusals (above, and in the walk).
            raise refusals.unlisted_function(".".join(parts), verdict[1])
    for parts in sorted(facts.named_types):
        schema = parts[-2].casefold() if len(parts) > 1 else ""
        name = parts[-1].casefold()
        type_verdict = allowlist.type_verdict(schema, name, allow_catalogue=allow_catalogue)
        if type_verdict is allowlist.EXTERNAL:
            facts.external_types.add((schema, name))
        elif type_verdict is not None:
            raise refusals.unlisted_type(".".join(parts), type_verdict)


def walk(root: dict[str, Any], facts: PgFacts) -> None:
    """Iterative walk over the whole JSON parse tree, one level at a time (no recursion; the depth is
    bounded explicitly). In pglast's JSON a key starting with a capital letter is a node kind; every
    other key is a field."""
    level: list[Any] = [root]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_TREE_DEPTH:
            raise refusals.too_deep()
        below: list[Any] = []
        more = below.append
        for node in level:
            if type(node) is list:
                below.extend(item for item in node if type(item) is dict or type(item) is list)
                continue
            for key, value in node.items():
                if key[0].isupper():
                    if key not in _ALLOWED_NODES:
                        raise refusals.refused_node(key)
                    if key in _NOTED_NODES:
                        _note(key, value, facts)
                elif key in _REFUSED_FIELDS:
                    raise refusals.refused_node(_REFUSED_FIELDS[key])
                elif key == "typeName":
                    # A type is named in a field, not as a node (casts, column definition lists,
                    # RETURNING): its input and output functions run on the query's values.
                    _note_type(value, facts)
                if type(value) is dict or type(value) is list:
                    more(value)
        level = below


def _note(kind: str, value: dict[str, Any], facts: PgFacts) -> None:
    if kind == "FuncCall":
        _check_function(value)
        name = _last_name(value["funcname"])
        facts.functions.add(name)
        facts.calls.add(tuple(part["String"]["sval"] for part in value["funcname"]))
        if name == "current_setting":
            facts.settings.add(_setting_name(value.get("args")))
    elif kind == "RangeTableSample":
        # TABLESAMPLE <method> names a function too (a tsm_handler): the same denylist applies.
        _check_function({"funcname": value["method"]})
        method = _last_name(value["method"])
        facts.functions.add(method)
        if method not in _SAMPLING_METHODS:
            facts.calls.add(tuple(part["String"]["sval"] for part in value["method"]))
    elif kind in _OPERATOR_FIELDS:
        names = value.get(_OPERATOR_FIELDS[kind])
        if names:
            facts.operators.add(_last_name(names))
    else:  # RangeVar
        facts.relations.add((value.get("schemaname", ""), value["relname"]))


def _note_type(type_name: dict[str, Any], facts: PgFacts) -> None:
    # PostgreSQL's grammar names every type a query writes (casts, column definitions, RETURNING).
    facts.types.add(_last_name(type_name["names"]))
    facts.named_types.add(tuple(part["String"]["sval"] for part in type_name["names"]))


def _setting_name(args: list[dict[str, Any]] | None) -> str | None:
    """current_setting()'s first argument when it is a string literal, else None (computed, or no
    argument at all: refused either way)."""
    const = args[0].get("A_Const", {}) if args else {}
    name: str | None = const.get("sval", {}).get("sval")
    return name


def _last_name(parts: list[dict[str, Any]]) -> str:
    """The case-folded last component of a qualified name list (`[{"String": {"sval": ...}}, ...]`)."""
    return str(parts[-1]["String"]["sval"]).casefold()


def _check_function(call: dict[str, Any]) -> None:
    parts = [part["String"]["sval"] for part in call["funcname"]]
    name = parts[-1]
    reason = denied_reason(name)
    if reason is not None:
        raise refusals.denied_function(".".join(parts), reason)
    if name.casefold() in _SIZED_FUNCTIONS:
        args = call.get("args", [])
        size = args[1].get("A_Const", {}).get("ival") if len(args) > 1 else None
        if isinstance(size, dict) and size.get("ival", 0) > MAX_LITERAL_LENGTH:
            raise refusals.oversized_value(name, size["ival"], MAX_LITERAL_LENGTH)
