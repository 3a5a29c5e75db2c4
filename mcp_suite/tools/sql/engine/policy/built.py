"""Work PostgreSQL cannot interrupt, over a value the query builds (issue 51).

PostgreSQL checks for a cancellation between rows and inside its long loops, but not inside some
functions that run over one value: the containment of two arrays or two jsonb documents (`@>`,
`<@`, array `&&`, quadratic in their elements), and the parsing of text into a text search
document, JSON, or a path or polygon (linear, but slow per byte). Over one value of hundreds of MB,
or two arrays of a few hundred thousand elements, such a call runs seconds to minutes past the
statement timeout (tests/pg/test_sql_interruptible.py measures each).

A stored value is the database's own size; a literal is bounded by the text's 10,000 characters.
What a query can make unbounded is a value it builds: an aggregate that collects rows into one
value (`array_agg`, `string_agg`, `jsonb_agg`, ...), `ARRAY(SELECT ...)`, a column of a subquery,
WITH query or set-returning function with such a thing in it (of a WITH RECURSIVE query always),
or a function that sizes its result by an argument (`repeat`, `lpad`, `rpad`, `array_fill`,
`format` with a width) past a million characters. So such
work is refused, unless the operator allows it for the source (MCP_SQL_ALLOW_UNINTERRUPTIBLE),
when any of its operands is *built*. Containment, quadratic, also counts a concatenation as built
(`||`, `array_cat`, `concat`: a stored array concatenated a hundred times is a large array), and a
sized function whatever its size (an array of a million elements is minutes of containment) and
a function of the database's own (what it returns is not known here);
parsing, linear, counts neither (`to_tsvector(title || ' ' || body)` is everyday full text search,
and a million characters parse in milliseconds).

Pure, over pglast's JSON parse tree of the caller's statement (not the wrapped one, whose outer
subquery is the server's); it runs only when the walk saw one of these operations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from mcp_suite.tools.sql.engine.policy import allowlist

__all__ = [
    "CONTAINMENT_FUNCTIONS",
    "CONTAINMENT_OPERATORS",
    "PARSING_FUNCTIONS",
    "PARSING_NODES",
    "PARSING_TYPES",
    "first_built",
]

# Quadratic in the elements of their operands, with no check for a cancellation inside.
CONTAINMENT_OPERATORS: Final = frozenset({"@>", "<@", "&&"})
CONTAINMENT_FUNCTIONS: Final = frozenset(
    {"arraycontains", "arraycontained", "arrayoverlap", "jsonb_contains", "jsonb_contained"}
)
# Parse their text argument in one call: a text search document or query, or a type's input function (a
# cast to one of these types, or to any array type).
PARSING_FUNCTIONS: Final = frozenset(
    {
        "to_tsvector",
        "json_to_tsvector",
        "jsonb_to_tsvector",
        "ts_headline",
        "to_tsquery",
        "plainto_tsquery",
        "phraseto_tsquery",
        "websearch_to_tsquery",
    }
)
PARSING_TYPES: Final = frozenset({"tsvector", "tsquery", "json", "jsonb", "path", "polygon"})
PARSING_NODES: Final = frozenset({"JsonParseExpr", "JsonIsPredicate"})

_CONCATENATIONS: Final = frozenset({"array_cat", "concat", "concat_ws"})
# Functions that size their result by an argument, and those that can multiply their input's size
# (a replacement longer than what it replaces): one of them over a stored value is bounded by the
# text, a chain of them doubles per link.
_SIZED: Final = frozenset({"repeat", "lpad", "rpad", "array_fill", "format"})
_AMPLIFYING: Final = _SIZED | {"replace", "regexp_replace", "translate", "overlay"}
_SIZE_BOUND: Final = 1_000_000  # characters or elements a literal-sized call may build
_FORMAT_WIDTH: Final = re.compile(r"%[^a-zA-Z%]*(\*|\d{4,})")
# The aggregates that collect their rows into one value (a count or a sum stays one number).
_COLLECTING: Final = frozenset(name for name in allowlist.AGGREGATE_FUNCTIONS if "agg" in name)
_SLOW_INPUT: Final = frozenset({"path", "polygon"})
_COLLECTING_NODES: Final = frozenset({"JsonArrayAgg", "JsonObjectAgg", "JsonArrayQueryConstructor"})
_OPERATOR_KINDS: Final = frozenset({"AEXPR_OP", "AEXPR_OP_ANY", "AEXPR_OP_ALL"})


@dataclass(frozen=True, slots=True)
class _Scope:
    built_columns: bool  # a column named here may be a value the query built
    ctes: frozenset[str]  # the WITH queries in scope that build (a FROM item by such a name builds)


def first_built(root: dict[str, Any]) -> str | None:
    """The first late-stopping operation of the statement `root` (a SelectStmt node's fields) over
    a built operand, as text for the refusal (`@> over an aggregate`), or None when there is none."""
    pending: list[tuple[Any, _Scope]] = [
        ({"SelectStmt": root}, _Scope(built_columns=False, ctes=frozenset()))
    ]
    while pending:
        node, scope = pending.pop()
        if type(node) is list:
            pending.extend((item, scope) for item in node if type(item) is dict or type(item) is list)
            continue
        for key, value in node.items():
            if key == "SelectStmt":
                pending.extend(_select_parts(value, scope))
                continue
            found = _operation(key, value, scope)
            if found is not None:
                return found
            if type(value) is dict or type(value) is list:
                pending.append((value, scope))
    return None


def _select_parts(select: dict[str, Any], outer: _Scope) -> list[tuple[Any, _Scope]]:
    """A SELECT's parts, each with the scope its column names are read in. Its WITH queries see
    the earlier ones by name and the levels outside it; a subquery in its FROM list sees the levels
    outside it too, unless LATERAL; everything else sees this SELECT's FROM list as well."""
    with_clause = select.get("withClause") or {}
    parts: list[tuple[Any, _Scope]] = []
    outside = outer
    for item in with_clause.get("ctes", []):
        cte = item["CommonTableExpr"]
        body = cte.get("ctequery", {})
        parts.append((body, outside))
        # A recursive WITH query grows a value one row at a time (`array_append(a, n)` a million
        # times): each counts as building, as does any other with something in it that builds.
        if with_clause.get("recursive") or _built(body, outside, strict=True) is not None:
            outside = _Scope(built_columns=outside.built_columns, ctes=outside.ctes | {cte["ctename"]})
    from_clause = select.get("fromClause", [])
    inside = _Scope(
        built_columns=outside.built_columns or _builds_from(from_clause, outside), ctes=outside.ctes
    )
    items: list[Any] = list(from_clause)
    while items:
        (kind, value), *_ = items.pop().items()
        if kind == "JoinExpr":
            items.extend((value["larg"], value["rarg"]))
            parts.append((value.get("quals") or {}, inside))
        elif kind == "RangeSubselect" and not value.get("lateral"):
            parts.append((value["subquery"], outside))
        else:
            parts.append(({kind: value}, inside))
    rest = {key: value for key, value in select.items() if key not in ("withClause", "fromClause")}
    parts.append((rest, inside))
    return parts


def _builds_from(from_clause: list[Any], scope: _Scope) -> bool:
    """Whether a FROM list has an item whose columns may be built: a WITH query that builds, or a
    subquery or function with anything in it that builds (judged strictly: a concatenation or a
    sized call counts)."""
    items: list[Any] = list(from_clause)
    while items:
        (kind, value), *_ = items.pop().items()
        if kind == "JoinExpr":
            items.extend((value["larg"], value["rarg"]))
        elif kind == "RangeVar":
            if not value.get("schemaname") and value["relname"] in scope.ctes:
                return True
        elif _built({kind: value}, scope, strict=True) is not None:
            return True
    return False


def _operation(key: str, value: Any, scope: _Scope) -> str | None:
    """`key: value` as a late-stopping operation over a built operand, worded; else None."""
    if key == "A_Expr" and value.get("kind") in _OPERATOR_KINDS:
        operator = value["name"][-1]["String"]["sval"]
        if operator in CONTAINMENT_OPERATORS:
            return _over(operator, [value.get("lexpr"), value.get("rexpr")], scope, strict=True)
    elif key == "SubLink" and value.get("operName"):
        # `x @> ANY (SELECT ...)`: each row of the subquery is an operand.
        operator = value["operName"][-1]["String"]["sval"]
        if operator in CONTAINMENT_OPERATORS:
            return _over(operator, [value.get("testexpr"), value.get("subselect")], scope, strict=True)
    elif key == "FuncCall":
        name = str(value["funcname"][-1]["String"]["sval"]).casefold()
        if name in CONTAINMENT_FUNCTIONS:
            return _over(f"{name}()", value.get("args", []), scope, strict=True)
        if name in PARSING_FUNCTIONS:
            return _over(f"{name}()", value.get("args", []), scope, strict=False)
    elif key == "TypeCast":
        name = str(value["typeName"]["names"][-1]["String"]["sval"]).casefold()
        if name in PARSING_TYPES or value["typeName"].get("arrayBounds"):
            shown = f"::{name}[]" if value["typeName"].get("arrayBounds") else f"::{name}"
            # path and polygon input is the slowest (seconds per 100 MB): judged strictly.
            return _over(shown, [value.get("arg")], scope, strict=name in _SLOW_INPUT)
    elif key in PARSING_NODES:
        return _over(key, [value.get("expr")], scope, strict=False)
    return None


def _over(what: str, operands: list[Any], scope: _Scope, *, strict: bool) -> str | None:
    built = _built([item for item in operands if item is not None], scope, strict=strict)
    return None if built is None else f"{what} over {built}"


def _built(tree: Any, scope: _Scope, *, strict: bool) -> str | None:
    """What in the expression `tree` builds a value of unbounded size, worded; else None."""
    pending: list[Any] = [tree]
    while pending:
        node = pending.pop()
        if type(node) is list:
            pending.extend(item for item in node if type(item) is dict or type(item) is list)
            continue
        for key, value in node.items():
            reason = _builds(key, value, scope, strict=strict)
            if reason is not None:
                return reason
            if type(value) is dict or type(value) is list:
                pending.append(value)
    return None


def _builds(key: str, value: Any, scope: _Scope, *, strict: bool) -> str | None:
    if key in _COLLECTING_NODES:
        return "an aggregate"
    if key == "SubLink":
        return "a subquery's rows" if value.get("subLinkType") == "ARRAY_SUBLINK" else None
    if key == "RangeVar":
        building = not value.get("schemaname") and value["relname"] in scope.ctes
        return "a WITH query that builds" if building else None
    if key == "ColumnRef":
        return (
            "a column the query builds (of a subquery, WITH query or function)"
            if scope.built_columns
            else None
        )
    if key == "A_Expr" and strict and value.get("kind") == "AEXPR_OP":
        return "a concatenation" if value["name"][-1]["String"]["sval"] == "||" else None
    if key != "FuncCall":
        return None
    name = str(value["funcname"][-1]["String"]["sval"]).casefold()
    if name in _COLLECTING:
        return "an aggregate"
    if strict and name in _CONCATENATIONS:
        return "a concatenation"
    if strict and not _postgres_own(value["funcname"], name):
        return f"{name}(), a function of the database"
    if name in _AMPLIFYING and (strict or _amplified(value.get("args", []))):
        return f"{name}() over {name}()" if not strict else f"{name}(), which can multiply a value's size"
    if not _bounded_size(name, value.get("args", [])):
        return f"{name}() sized by its arguments"
    return None


def _amplified(args: list[Any]) -> bool:
    """Whether an amplifying call's arguments hold another amplifying call (a chain)."""
    pending: list[Any] = list(args)
    while pending:
        node = pending.pop()
        if type(node) is list:
            pending.extend(node)
            continue
        if type(node) is not dict:
            continue
        call = node.get("FuncCall")
        if call is not None and str(call["funcname"][-1]["String"]["sval"]).casefold() in _AMPLIFYING:
            return True
        pending.extend(node.values())
    return False


def _postgres_own(parts: list[Any], name: str) -> bool:
    """Whether a call names one of PostgreSQL's own functions (what it builds is known)."""
    schema = str(parts[-2]["String"]["sval"]).casefold() if len(parts) > 1 else ""
    return (not schema or schema in allowlist.SYSTEM_SCHEMAS) and allowlist.classified(name) is not None


def _bounded_size(name: str, args: list[Any]) -> bool:
    """Whether a call of `name` builds at most `_SIZE_BOUND` characters or elements (always true of
    a function that does not size its result by an argument)."""
    if name in ("lpad", "rpad"):
        return len(args) > 1 and _int_literal(args[1]) is not None
    if name == "repeat":
        count = _int_literal(args[1]) if len(args) > 1 else None
        text = _text_literal(args[0]) if args else None
        return count is not None and text is not None and len(text) * count <= _SIZE_BOUND
    if name == "array_fill":
        dims = args[1].get("A_ArrayExpr", {}).get("elements") if len(args) > 1 else None
        sizes = [_int_literal(item) for item in dims or []]
        product = 1
        for size in sizes:
            product *= size if size is not None else _SIZE_BOUND + 1
        return bool(sizes) and product <= _SIZE_BOUND
    if name == "format":
        template = _text_literal(args[0]) if args else None
        return template is not None and _FORMAT_WIDTH.search(template) is None
    return True


def _int_literal(node: Any) -> int | None:
    """An integer literal up to `_SIZE_BOUND`, else None."""
    const = node.get("A_Const", {}) if type(node) is dict else {}
    value = const.get("ival", {}).get("ival", 0) if "ival" in const else None
    return value if isinstance(value, int) and 0 <= value <= _SIZE_BOUND else None


def _text_literal(node: Any) -> str | None:
    const = node.get("A_Const", {}) if type(node) is dict else {}
    text = const.get("sval", {}).get("sval") if "sval" in const else None
    return text if isinstance(text, str) else None
