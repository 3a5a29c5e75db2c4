"""Curated tools' declarations, read and checked (issue 55): pure, no I/O.

Owns: a source's `[[sources.tools]]` tables as `CuratedTool`s (every problem named with the file,
the source and the tool, never a value: `parse_tools`), the name a tool is served under
(`<source>_<name>`), the text the SQL policy judges for a statement (`judged_text`: each `$n`, as
PostgreSQL's own scanner finds it, replaced by a NULL of its declared type), the input schema a
declaration advertises (`input_schema`), and the values a call binds (`bound_values`: the caller's
arguments in their declared types as text, and the parameters bound to the caller's verified
claims, which no argument can set). Parameters are bound values, never spliced into the text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pglast import parser as pg_parser

from mcp_suite.problems import AccessDeniedError

__all__ = [
    "PG_TYPES",
    "CuratedTool",
    "Parameter",
    "PgType",
    "bound_values",
    "input_schema",
    "judged_text",
    "parse_tools",
    "placeholders",
]

_NAME: Final = re.compile(r"[a-z][a-z0-9_]{0,39}")
_CLAIM: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
_SCOPE: Final = re.compile(r"[A-Za-z0-9_.:-]{1,80}")
_DESCRIPTION_CHARS: Final = 250
_STATEMENT_CHARS: Final = 8000
_MAX_PARAMETERS: Final = 16
# What a pattern may not hold: a group other than (?:...) and (?P<name>...), or a backreference.
# The arguments' checker is a linear-time matcher without them, and JSON Schema's dialect lacks them.
_UNSUPPORTED: Final = re.compile(r"\(\?(?![:]|P<)|\\[1-9]|\\g<")
# A string argument's bound when the declaration sets none: every field is bounded.
_TEXT_CHARS: Final = 1000
# The most groups a group claim may list (a longer list is refused, never cut).
_MAX_GROUPS: Final = 1000


@dataclass(frozen=True, slots=True)
class PgType:
    """A PostgreSQL type a parameter may have: its OID (built-in, fixed), its JSON Schema, and the
    integer range PostgreSQL accepts (for the integer types)."""

    name: str  # as PostgreSQL names it (format_type)
    oid: int
    json: str  # string, integer, number, boolean; array (text[], a group binding's only)
    low: int | None = None
    high: int | None = None
    pattern: str | None = None  # what PostgreSQL's input accepts, checked before any database work
    format: str | None = None


_DATE: Final = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIMESTAMP: Final = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?"
    r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"
)
_UUID: Final = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

# The types a parameter may be declared with (and their usual aliases): those a JSON Schema can say.
PG_TYPES: Final[Mapping[str, PgType]] = {
    "text": PgType("text", 25, "string"),
    "varchar": PgType("character varying", 1043, "string"),
    "smallint": PgType("smallint", 21, "integer", -(2**15), 2**15 - 1),
    "integer": PgType("integer", 23, "integer", -(2**31), 2**31 - 1),
    "bigint": PgType("bigint", 20, "integer", -(2**63), 2**63 - 1),
    "numeric": PgType("numeric", 1700, "number"),
    "boolean": PgType("boolean", 16, "boolean"),
    "date": PgType("date", 1082, "string", pattern=_DATE, format="date"),
    "timestamptz": PgType("timestamp with time zone", 1184, "string", pattern=_TIMESTAMP, format="date-time"),
    "uuid": PgType("uuid", 2950, "string", pattern=_UUID, format="uuid"),
    # A parameter bound to a group claim only (`bind = "group:<claim>"`): the caller's groups.
    "text[]": PgType("text[]", 1009, "array"),
}
_ALIASES: Final = {
    "character varying": "varchar",
    "int": "integer",
    "int4": "integer",
    "int2": "smallint",
    "int8": "bigint",
    "bool": "boolean",
    "timestamp with time zone": "timestamptz",
}


@dataclass(frozen=True, slots=True)
class Parameter:
    """One `$n` of a statement (n is its place in the declaration, from 1)."""

    name: str
    type: PgType
    description: str = ""
    required: bool = True
    default: Any = None
    enum: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    max_length: int | None = None
    # "sub" (the token's subject) or a claim's name: bound to the caller, never an argument. A
    # text[] parameter's claim is a group claim (`bind = "group:<claim>"`): a list of strings.
    bind: str | None = None


@dataclass(frozen=True, slots=True)
class CuratedTool:
    """One declared question: served as `served_name`, on the source `source`."""

    source: str
    name: str
    title: str
    description: str
    statement: str
    parameters: tuple[Parameter, ...]
    max_rows: int
    max_result_bytes: int
    scope: str
    served_name: str = field(default="")

    @property
    def arguments(self) -> tuple[Parameter, ...]:
        """The parameters a caller gives (those not bound to a claim)."""
        return tuple(p for p in self.parameters if p.bind is None)

    @property
    def bound(self) -> bool:
        """Whether a parameter is bound to the caller's claims (served to a verified caller only)."""
        return any(p.bind is not None for p in self.parameters)


def served_name(source: str, name: str) -> str:
    """The MCP name of a source's tool: the source's name first, so two sources cannot collide."""
    return f"{source.replace('-', '_')}_{name}"


_TOOL_KEYS: Final = frozenset(
    {"name", "title", "description", "statement", "parameters", "max_rows", "max_result_bytes", "scope"}
)
_PARAMETER_KEYS: Final = frozenset(
    {
        "name",
        "type",
        "description",
        "required",
        "default",
        "enum",
        "minimum",
        "maximum",
        "pattern",
        "max_length",
        "bind",
    }
)


def parse_tools(
    tables: object,
    *,
    source: str,
    family_scope: str,
    max_rows: int,
    max_result_bytes: int,
    where: str,
    problems: list[str],
) -> tuple[CuratedTool, ...]:
    """A source's `tools` (a list of tables) as `CuratedTool`s; each problem appended to `problems`
    naming the tool. `max_rows` and `max_result_bytes`: the source's own limits, a tool's defaults
    and ceilings. A tool's scope is its own, or `<family_scope>:<source>` by default."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        problems.append(f"{where}: tools: a list of [[sources.tools]] tables")
        return ()
    tools: list[CuratedTool] = []
    seen: set[str] = set()
    for index, table in enumerate(tables):
        name = table.get("name")
        here = f"{where}: tool {index + 1}" + (f" ({name})" if isinstance(name, str) else "")
        tool = _tool(table, source, family_scope, max_rows, max_result_bytes, here, problems)
        if tool is None:
            continue
        if tool.name in seen:
            problems.append(f"{here}: name: another tool of this source has the name {tool.name!r}")
            continue
        seen.add(tool.name)
        tools.append(tool)
    return tuple(tools)


def _tool(
    table: dict[str, Any],
    source: str,
    family_scope: str,
    max_rows: int,
    max_result_bytes: int,
    where: str,
    problems: list[str],
) -> CuratedTool | None:
    before = len(problems)
    problems += [f"{where}: {key}: unknown key" for key in sorted(set(table) - _TOOL_KEYS)]
    name = table.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(f"{where}: name: required, lower-case letters, digits and _ (at most 40)")
    title = table.get("title", name)
    if not isinstance(title, str) or not title.strip() or "\n" in title or len(title) > 80:
        problems.append(f"{where}: title: one line of at most 80 characters")
    description = table.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{where}: description: required, what the tool answers, for the model")
    elif len(description) > _DESCRIPTION_CHARS:
        problems.append(f"{where}: description: at most {_DESCRIPTION_CHARS} characters")
    statement = table.get("statement")
    if not isinstance(statement, str) or not statement.strip():
        problems.append(f"{where}: statement: required, one SELECT with $1..$n for its parameters")
    elif len(statement) > _STATEMENT_CHARS or "\x00" in statement:
        problems.append(f"{where}: statement: at most {_STATEMENT_CHARS} characters, no NUL")
    rows = _limit(table, "max_rows", max_rows, where, problems)
    size = _limit(table, "max_result_bytes", max_result_bytes, where, problems)
    scope = table.get("scope", f"{family_scope}:{source}")
    if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
        problems.append(f"{where}: scope: one OAuth scope (letters, digits, _ . : -)")
    elif scope.split(":")[:2] == family_scope.split(":") and scope != f"{family_scope}:{source}":
        # The family's scope grants per source through its `source` argument, which a curated
        # tool has not: `sql:read` would list it to a holder of any one source's scope.
        problems.append(
            f"{where}: scope: its own scope, or {family_scope}:{source} (its source's); "
            f"not {family_scope} nor another source's"
        )
    raw = table.get("parameters", [])
    parameters: list[Parameter] = []
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw) or len(raw) > _MAX_PARAMETERS:
        problems.append(f"{where}: parameters: a list of at most {_MAX_PARAMETERS} tables, $1 first")
        raw = []
    names: set[str] = set()
    for place, item in enumerate(raw, start=1):
        pname = item.get("name")
        here = f"{where}: parameter ${place}" + (f" ({pname})" if isinstance(pname, str) else "")
        parameter = _parameter(item, here, problems)
        if parameter is None:
            continue
        if parameter.name in names:
            problems.append(f"{here}: name: another parameter has the name {parameter.name!r}")
        names.add(parameter.name)
        parameters.append(parameter)
    if isinstance(statement, str) and len(problems) == before:
        found = placeholders(statement)
        if found is None:
            problems.append(f"{where}: statement: PostgreSQL's scanner cannot read it")
        elif found != set(range(1, len(raw) + 1)):
            problems.append(
                f"{where}: statement: its placeholders are {_dollars(found)}, its parameters "
                f"declare {_dollars(set(range(1, len(raw) + 1)))}: each parameter is one $n, in order"
            )
    if len(problems) > before:
        return None
    if not (
        isinstance(name, str)
        and isinstance(title, str)
        and isinstance(description, str)
        and isinstance(statement, str)
        and isinstance(scope, str)
    ):  # pragma: no cover  # each was checked above, with its problem
        return None
    return CuratedTool(
        source=source,
        name=name,
        title=title.strip(),
        description=description.strip(),
        statement=statement.strip(),
        parameters=tuple(parameters),
        max_rows=rows,
        max_result_bytes=size,
        scope=scope,
        served_name=served_name(source, name),
    )


def _dollars(places: set[int]) -> str:
    return ", ".join(f"${n}" for n in sorted(places)) or "none"


def _limit(table: dict[str, Any], key: str, ceiling: int, where: str, problems: list[str]) -> int:
    value = table.get(key, ceiling)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling:
        problems.append(f"{where}: {key}: an integer from 1 to the source's own {ceiling}")
        return ceiling
    return value


def _parameter(item: dict[str, Any], where: str, problems: list[str]) -> Parameter | None:
    before = len(problems)
    problems += [f"{where}: {key}: unknown key" for key in sorted(set(item) - _PARAMETER_KEYS)]
    name = item.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(f"{where}: name: required, lower-case letters, digits and _ (at most 40)")
    raw_type = item.get("type")
    pg_type = PG_TYPES.get(_ALIASES.get(raw_type, raw_type)) if isinstance(raw_type, str) else None
    if pg_type is None:
        problems.append(
            f"{where}: type: one of {', '.join(PG_TYPES)} (a value, never an identifier: a table or "
            "column name cannot be a parameter)"
        )
        return None
    description = item.get("description", "")
    if not isinstance(description, str) or len(description) > _DESCRIPTION_CHARS:
        problems.append(f"{where}: description: at most {_DESCRIPTION_CHARS} characters")
    bind = item.get("bind")
    if bind is None and pg_type.json == "array":
        problems.append(f'{where}: type: text[] is for a parameter bound to a group (bind = "group:<claim>")')
    if bind is not None:
        group = isinstance(bind, str) and bind.startswith("group:")
        claim = bind.removeprefix("group:" if group else "claim:") if isinstance(bind, str) else None
        if bind != "sub" and (claim is None or claim == bind or not _CLAIM.fullmatch(claim)):
            problems.append(
                f'{where}: bind: "sub", "claim:<name>" or "group:<name>" (a claim of the caller\'s token)'
            )
        elif group != (pg_type.json == "array"):
            problems.append(f"{where}: bind: a group binds a text[] parameter, and only a group does")
        elif pg_type.json not in ("string", "integer", "array"):
            problems.append(f"{where}: bind: a claim binds a text or integer parameter")
        shaped = sorted(set(item) & {"default", "enum", "minimum", "maximum", "pattern", "required"})
        if shaped:
            problems.append(
                f"{where}: {', '.join(shaped)}: a bound parameter takes its value from the token alone"
            )
        bind = "sub" if bind == "sub" else claim
    enum = item.get("enum", [])
    if not isinstance(enum, list) or not all(_fits(value, pg_type) for value in enum) or len(enum) > 64:
        problems.append(f"{where}: enum: a list of at most 64 values of its type")
        enum = []
    bounds: dict[str, float | None] = {}
    for key in ("minimum", "maximum"):
        value = item.get(key)
        if value is not None and (pg_type.json not in ("integer", "number") or not _fits(value, pg_type)):
            problems.append(f"{where}: {key}: a number of its type (integer and numeric parameters only)")
            value = None
        bounds[key] = value
    pattern = item.get("pattern")
    if pattern is not None:
        if pg_type.json != "string" or not isinstance(pattern, str) or len(pattern) > 200:
            problems.append(f"{where}: pattern: a regular expression of at most 200 characters (text only)")
        else:
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append(f"{where}: pattern: not a regular expression ({exc.msg})")
            else:
                if _UNSUPPORTED.search(pattern):
                    problems.append(
                        f"{where}: pattern: no look-around, backreference or inline group: a JSON "
                        "Schema pattern that every client and the server's linear-time matcher read alike"
                    )
    max_length = item.get("max_length")
    if max_length is not None and (
        pg_type.json != "string"
        or isinstance(max_length, bool)
        or not isinstance(max_length, int)
        or not 1 <= max_length <= _TEXT_CHARS
    ):
        problems.append(f"{where}: max_length: an integer from 1 to {_TEXT_CHARS} (text only)")
    required = item.get("required", "default" not in item)
    if not isinstance(required, bool):
        problems.append(f"{where}: required: true or false")
    default = item.get("default")
    if "default" in item and (
        required is True or not _fits(default, pg_type) or (enum and default not in enum)
    ):
        problems.append(f"{where}: default: a value of its type (of its enum), for a parameter not required")
    if len(problems) > before:
        return None
    assert isinstance(name, str)  # checked above
    return Parameter(
        name=name,
        type=pg_type,
        description=description.strip(),
        required=bool(required) if bind is None else True,
        default=default,
        enum=tuple(enum),
        minimum=bounds["minimum"],
        maximum=bounds["maximum"],
        pattern=pattern,
        max_length=max_length,
        bind=bind,
    )


def _fits(value: object, pg_type: PgType) -> bool:
    """Whether a declared value (an enum's, a bound, a default) is one of the type's JSON values."""
    if pg_type.json == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if pg_type.json == "integer":
        return (
            isinstance(value, int) and pg_type.low is not None and pg_type.low <= value <= (pg_type.high or 0)
        )
    if pg_type.json == "number":
        return isinstance(value, int | float)
    return isinstance(value, str) and (
        pg_type.pattern is None or re.match(pg_type.pattern, value) is not None
    )


def placeholders(statement: str) -> set[int] | None:
    """The `$n` a statement holds, as PostgreSQL's own scanner reads it (not inside a string, a
    quoted name or a comment); None when the scanner cannot read it."""
    try:
        tokens = pg_parser.scan(statement)
    except Exception:  # noqa: BLE001  # pglast's ParseError, or any failure to read: not readable
        return None
    found = set()
    for token in tokens:
        if token.name == "PARAM":
            found.add(int(statement[token.start + 1 : token.end + 1]))
    return found


def judged_text(tool: CuratedTool) -> str:
    """The statement as the SQL policy judges it: each `$n` replaced by a NULL cast to its declared
    type, so the policy reads the same tree with a typed value where each parameter goes (the
    policy refuses bind parameters in free SQL, where no declaration types them)."""
    text = tool.statement
    pieces: list[str] = []
    done = 0
    # pglast's token positions count characters (not bytes) of the text it was given.
    for token in pg_parser.scan(text):
        if token.name != "PARAM":
            continue
        place = int(text[token.start + 1 : token.end + 1])
        pieces += [text[done : token.start], f"(NULL::{tool.parameters[place - 1].type.name})"]
        done = token.end + 1
    pieces.append(text[done:])
    return "".join(pieces)


def _property(parameter: Parameter) -> dict[str, Any]:
    pg = parameter.type
    # Allowed values say their type: `enum` alone is the exact set (JSON Schema compares each value
    # with its JSON type), so `type` beside it would repeat it at every turn's cost.
    schema: dict[str, Any] = {} if parameter.enum else {"type": pg.json}
    if parameter.description:
        schema["description"] = parameter.description
    if parameter.enum:
        schema["enum"] = list(parameter.enum)
    low = parameter.minimum if parameter.minimum is not None else pg.low
    high = parameter.maximum if parameter.maximum is not None else pg.high
    if pg.json in ("integer", "number") and (parameter.minimum is not None or parameter.maximum is not None):
        if low is not None:
            schema["minimum"] = low
        if high is not None:
            schema["maximum"] = high
    if parameter.pattern is not None:
        schema["pattern"] = parameter.pattern
    elif pg.format is not None:
        schema["format"] = pg.format
    if parameter.max_length is not None:
        schema["maxLength"] = parameter.max_length
    if parameter.default is not None:
        schema["default"] = parameter.default
    return schema


def input_schema(tool: CuratedTool) -> dict[str, Any]:
    """The `inputSchema` the tool advertises: its arguments (never a bound parameter), each with
    its type and the declared bounds (a range, allowed values, a pattern, a length). Like every
    tool's schema it leaves out `additionalProperties`: an unknown argument (a bound parameter's
    name among them) is refused by the tool's strict model before any database work, and the
    keyword would cost every turn what the refusal already says."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: _property(p) for p in tool.arguments},
    }
    required = [p.name for p in tool.arguments if p.required]
    if required:
        schema["required"] = required
    return schema


def bound_values(
    tool: CuratedTool, arguments: Mapping[str, Any], subject: str | None, claims: Mapping[str, Any]
) -> Sequence[bytes | None]:
    """The values of $1..$n, as PostgreSQL's text input of their declared types reads them:
    arguments already validated by the tool's model; bound parameters from the verified caller.

    Raises `AccessDeniedError` naming the claim when the caller has no usable value for one (no
    verified caller, a missing claim, a claim that is not one string or integer)."""
    values: list[bytes | None] = []
    for parameter in tool.parameters:
        if parameter.bind is None:
            value = arguments.get(parameter.name, parameter.default)
        else:
            value = _claim(tool, parameter, subject, claims)
        values.append(None if value is None else _text(value))
    return values


def _claim(tool: CuratedTool, parameter: Parameter, subject: str | None, claims: Mapping[str, Any]) -> object:
    bind = parameter.bind
    value: object = subject if bind == "sub" else claims.get(bind or "") if subject is not None else None
    ok = _word(value)
    if parameter.type.json == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool) and _fits(value, parameter.type)
    elif parameter.type.json == "array":
        # Fail closed: a missing claim, one string, an empty list or a list holding anything but
        # strings is refused, never bound as NULL or as no group.
        ok = isinstance(value, list) and 0 < len(value) <= _MAX_GROUPS and all(_word(v) for v in value)
    if not ok:
        what = "subject" if bind == "sub" else f"claim {bind!r}"
        shape = {"string": "a string", "integer": "an integer"}.get(
            parameter.type.json, f"a list of 1 to {_MAX_GROUPS} strings"
        )
        raise AccessDeniedError(
            f"The tool {tool.served_name} binds its parameter {parameter.name!r} to the caller's "
            f"verified {what}, and this call has no usable one (a verified token that holds it, "
            f"{shape}); the call was refused.",
            metadata={"tool": tool.served_name, "bound": parameter.name, "retryable": False},
        )
    return value


def _word(value: object) -> bool:
    """A claim's string fit to bind: not empty, no NUL, within the text bound."""
    return isinstance(value, str) and bool(value) and "\x00" not in value and len(value) <= _TEXT_CHARS


def _text(value: object) -> bytes:
    if isinstance(value, list):  # a group claim's strings, as an array literal of PostgreSQL
        quoted = ('"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"' for v in value)
        return ("{" + ",".join(quoted) + "}").encode()
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, float):
        return repr(value).encode()  # the shortest text that reads back as the same float
    return str(value).encode()
