"""PostgreSQL's own reading of a text (pglast, libpg_query): the first and the last opinion.

Owns: parsing with PostgreSQL's grammar, the iterative walk of its JSON tree against an allowlist of
node kinds, the function denylist and the size bound on the functions that build values, the facts
the walk notes (relations, the functions and operators called, the types named, the names written in
attribute notation, the newest grammar a construct needs), and the catalogue rule (`catalogue`) and
the allow-lists (`allowlist`) on them. Pure: no I/O.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Final

from pglast import parser as pg_parser

from mcp_suite.tools.sql.engine.denylist import denied_reason
from mcp_suite.tools.sql.engine.policy import allowlist, built, refusals
from mcp_suite.tools.sql.engine.policy.catalogue import check_catalogue, function_reason, type_reason

__all__ = ["MAX_LITERAL_LENGTH", "MAX_TREE_DEPTH", "PgFacts", "attribute_reason", "check_postgres", "walk"]

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

# SQL/JSON syntax, by the server_version_num of the release whose grammar first reads it. An older
# server reads the same words as calls of whatever `json_object`, `json_exists`, ... its search path
# finds (`JSON_EXISTS(a, b)` is `json_exists(a, b)` on PostgreSQL 15), which the walk never saw: the
# query is refused on such a server (`VettedQuery.needs_server`; the engine knows the server).
_NEWER_NODES: Final = {
    **dict.fromkeys(
        (
            "JsonAggConstructor",
            "JsonArrayAgg",
            "JsonArrayConstructor",
            "JsonArrayQueryConstructor",
            "JsonFormat",
            "JsonIsPredicate",
            "JsonKeyValue",
            "JsonObjectAgg",
            "JsonObjectConstructor",
            "JsonOutput",
            "JsonReturning",
            "JsonValueExpr",
        ),
        160000,
    ),
    **dict.fromkeys(
        (
            "JsonArgument",
            "JsonBehavior",
            "JsonFuncExpr",
            "JsonParseExpr",
            "JsonScalarExpr",
            "JsonSerializeExpr",
            "JsonTable",
            "JsonTableColumn",
            "JsonTablePathSpec",
        ),
        170000,
    ),
}
# XML syntax runs in libxml2, which PostgreSQL cannot interrupt (`allowlist.XML_FUNCTIONS`).
_XML_NODES: Final = frozenset({"XmlExpr", "XmlSerialize", "RangeTableFunc"})

_NOTED_NODES: Final = frozenset(
    {
        "FuncCall",
        "RangeTableSample",
        "RangeVar",
        "A_Expr",
        "SortBy",
        "SubLink",
        "ColumnRef",
        "A_Indirection",
        *_NEWER_NODES,
        *_XML_NODES,
    }
)
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
    # The last name of every qualified column reference (`t.f`, `s.t.f`) and field selection
    # (`(x).f`), as written: PostgreSQL reads each as the call `f(t)` (or the cast `t::f`) when `f`
    # is not a column there. Those PostgreSQL's own lists do not know go to the engine, case-folded.
    attributes: set[str] = field(default_factory=set)
    external_attributes: set[str] = field(default_factory=set)
    # The newest grammar a construct needs (server_version_num) and that construct's node kind.
    needs_server: int = 0
    needs_construct: str = ""
    xml: str = ""  # the first XML construct, function or type seen ("" when none)
    parses: bool = False  # JSON(...), IS JSON or an array type seen: they parse (`policy.built`)
    # Calls whose text search configuration or dictionary is not a string literal (`_IDENTIFIER_FIRST`).
    identifier_arguments: set[str] = field(default_factory=set)


def check_postgres(
    sql: str,
    *,
    executed: bool,
    allow_catalogue: bool = False,
    allow_xml: bool = False,
    allow_uninterruptible: bool = False,
) -> PgFacts:
    """PostgreSQL's grammar: one statement, a SelectStmt root, allowed nodes only, no denied function,
    (unless `allow_catalogue`, MCP_SQL_ALLOW_CATALOGUE) no catalogue read the catalogue rule refuses,
    (unless `allow_xml`, MCP_SQL_ALLOW_XML) no XML, (unless `allow_uninterruptible`,
    MCP_SQL_ALLOW_UNINTERRUPTIBLE) no containment or parsing of a value the query builds
    (`policy.built`; judged on the caller's text, not `executed`), only functions and types on the allow-lists
    (`allowlist`), and no name in attribute notation that PostgreSQL could read as a call they refuse;
    names outside PostgreSQL's own schemas are noted for the engine (`PgFacts.external_functions`,
    `external_types`, `external_attributes`), and so is the grammar the query needs (`needs_server`).

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
    if facts.xml and not allow_xml:
        raise refusals.uninterruptible(facts.xml)
    if not (executed or allow_uninterruptible) and _may_stop_late(facts):
        late = built.first_built(facts.root)
        if late is not None:
            raise refusals.built_operand(late)
    if facts.identifier_arguments and not allow_catalogue:
        raise refusals.identifier_by_value(min(facts.identifier_arguments))
    _check_allowlists(facts, allow_catalogue=allow_catalogue)
    _check_attributes(facts, allow_catalogue=allow_catalogue, allow_xml=allow_xml)
    return facts


_SPECIAL_TYPES: Final = allowlist.INTERNAL_TYPES | allowlist.IDENTIFIER_TYPES
_LATE_FUNCTIONS: Final = built.CONTAINMENT_FUNCTIONS | built.PARSING_FUNCTIONS


def _may_stop_late(facts: PgFacts) -> bool:
    """Whether the statement names an operation `policy.built` judges (most do not: it is skipped)."""
    return bool(
        facts.parses
        or not facts.operators.isdisjoint(built.CONTAINMENT_OPERATORS)
        or not facts.functions.isdisjoint(_LATE_FUNCTIONS)
        or not facts.types.isdisjoint(built.PARSING_TYPES)
    )


@functools.lru_cache(maxsize=4096)  # pure; column names repeat across calls (bench_policy)
def attribute_reason(name: str, *, allow_catalogue: bool, allow_xml: bool) -> str | allowlist.External | None:
    """Why `x.name` / `(x).name` is refused when PostgreSQL reads it as the call `name(x)` or the cast
    `x::name` (a verb phrase about `name`), None when either reading is allowed, `EXTERNAL` when only
    the role's catalogue can tell (no function or type of PostgreSQL's own has that name)."""
    key = name.casefold()
    if key in _ARGUMENT_RULED:
        return _ARGUMENT_RULED[key]
    if key in allowlist.XML_FUNCTIONS and not allow_xml:
        return f"runs in libxml2, {refusals.UNINTERRUPTIBLE}"
    entry = allowlist.classified(name) or allowlist.classified(key)
    if entry is not None:
        verdict, why = entry
        if verdict != "allow" and not (allow_catalogue and why in allowlist.LIFTED_BY_CATALOGUE):
            if why == "denied":
                return (denied_reason(key) or "is denied").removeprefix("it ")
            if why == "catalogue":
                return function_reason(key) or "reads the catalogue"
            return allowlist.REASONS.get(why, allowlist.REASONS["unclassified"])
    as_type = None if allow_catalogue else type_reason(key)
    if (
        as_type is None
        and key in _SPECIAL_TYPES
        and not (allow_catalogue and key in allowlist.IDENTIFIER_TYPES)
    ):
        as_type = allowlist.REASONS["identifier" if key in allowlist.IDENTIFIER_TYPES else "internal"]
    if as_type is not None:
        return f"is a type whose cast {as_type.removeprefix('is ')}"
    if entry is not None or key in allowlist.BUILTIN_TYPES:
        return None
    return allowlist.EXTERNAL


def _check_attributes(facts: PgFacts, *, allow_catalogue: bool, allow_xml: bool) -> None:
    """Each name in attribute notation, judged as every object PostgreSQL could resolve it to."""
    for name in sorted(facts.attributes):
        reason = attribute_reason(name, allow_catalogue=allow_catalogue, allow_xml=allow_xml)
        if reason is allowlist.EXTERNAL:
            facts.external_attributes.add(name.casefold())
        elif reason is not None:
            raise refusals.attribute_call(name, reason)


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


# Reviewed functions with an overload whose first argument names a text search configuration or
# dictionary (`regconfig`, `regdictionary`), by the argument counts of that overload. PostgreSQL looks
# a name up under the role's privileges, but takes a number as it is, in any schema: an integer
# there (a column, a series) picks any configuration or dictionary. So that argument must be a
# string literal unless the catalogue is allowed. `ts_headline` with 3 arguments is
# (regconfig, text, tsquery) or (text, tsquery, text): its first argument may also be the document
# when the second is evidently a tsquery.
_IDENTIFIER_FIRST: Final = {
    **dict.fromkeys(
        ("to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery"), (2,)
    ),
    **dict.fromkeys(("json_to_tsvector", "jsonb_to_tsvector"), (3,)),
    "ts_headline": (3, 4),
    "unaccent": (2,),  # the unaccent extension's (regdictionary, text)
}
_TSQUERY_SOURCES: Final = frozenset(
    {"to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery", "tsquery"}
)


def _identifier_by_value(name: str, args: list[dict[str, Any]]) -> bool:
    """Whether the call `name(args)` may pick a text search configuration or dictionary by number."""
    counts = _IDENTIFIER_FIRST.get(name)
    if counts is None or len(args) not in counts:
        return False
    if "sval" in args[0].get("A_Const", {}):
        return False
    if name == "ts_headline" and len(args) == 3:
        second = args[1]
        call = second.get("FuncCall")
        cast = second.get("TypeCast")
        return not (
            (call is not None and _last_name(call["funcname"]) in _TSQUERY_SOURCES)
            or (cast is not None and _last_name(cast["typeName"]["names"]) == "tsquery")
        )
    return True


# Functions whose argument the policy must see as written: as `(x).name` their argument is computed.
_ARGUMENT_RULED: Final = {
    "current_setting": "reads a setting whose name the policy cannot see (write current_setting('name'))",
}


def _note(kind: str, value: dict[str, Any], facts: PgFacts) -> None:
    if kind == "ColumnRef":
        fields = value["fields"]
        if len(fields) > 1 and "String" in fields[-1]:
            facts.attributes.add(fields[-1]["String"]["sval"])
    elif kind == "A_Indirection":
        for item in value["indirection"]:
            if "String" in item:
                facts.attributes.add(item["String"]["sval"])
    elif kind in _NEWER_NODES:
        facts.parses = facts.parses or kind in built.PARSING_NODES
        if _NEWER_NODES[kind] > facts.needs_server:
            facts.needs_server, facts.needs_construct = _NEWER_NODES[kind], kind
    elif kind in _XML_NODES:
        facts.xml = facts.xml or kind
    elif kind == "FuncCall":
        _check_function(value)
        name = _last_name(value["funcname"])
        facts.functions.add(name)
        facts.calls.add(tuple(part["String"]["sval"] for part in value["funcname"]))
        if name in allowlist.XML_FUNCTIONS:
            facts.xml = facts.xml or f"{name}()"
        if name == "current_setting":
            facts.settings.add(_setting_name(value.get("args")))
        if _identifier_by_value(name, value.get("args", [])):
            facts.identifier_arguments.add(name)
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
    name = _last_name(type_name["names"])
    facts.types.add(name)
    facts.parses = facts.parses or bool(type_name.get("arrayBounds"))  # array input parses its text
    if name in allowlist.XML_TYPES:
        facts.xml = facts.xml or f"the type {name}"
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
