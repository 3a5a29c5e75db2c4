"""Every sentence the SQL policy refuses a query with, each written once (docs/tools/read_only_sql.md).

Owns: the problems the policy raises (`InvalidArgumentsError`, `QueryViolationError`), their `rule`
metadata and their details, which name the fix. The walks decide; this module only words the answer.
The reasons a denied function is denied are the denylist's (`denylist.py`). Pure: no I/O, no parsers.
"""

from __future__ import annotations

from typing import Final

from mcp_suite.problems import InvalidArgumentsError, QueryViolationError, echo
from mcp_suite.settings import NAME_ECHO_CHARS

# Why a construct that runs where PostgreSQL cannot stop it is refused (a verb phrase's tail).
UNINTERRUPTIBLE: Final = (
    "which PostgreSQL cannot interrupt: a large or crafted document keeps the backend busy past the "
    "statement timeout"
)
FIX_ONE_SELECT: Final = "Send one SELECT (or VALUES / UNION / INTERSECT / EXCEPT) statement"

# PostgreSQL's data-modifying statement kinds (refused wherever they appear, also inside a CTE).
DATA_MODIFYING: Final = frozenset({"InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"})

# The fix for a PostgreSQL statement that is not a query.
_STATEMENT_FIX: Final = {
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


def invalid(detail: str, rule: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(detail, invalid_params=("sql",), metadata={"rule": rule})


def violation(detail: str, rule: str, **extra: str) -> QueryViolationError:
    return QueryViolationError(detail, invalid_params=("sql",), metadata={"rule": rule, **extra})


class UnreadableError(InvalidArgumentsError):
    """sqlglot cannot read the text: PostgreSQL's reading then stands alone (`vet_sql`); where there
    is none to stand in (the executed text), an `unsupported-syntax` refusal."""

    def __init__(self, problem: InvalidArgumentsError) -> None:
        super().__init__(problem.detail, invalid_params=problem.invalid_params, metadata=problem.metadata)


# --- the arguments ----------------------------------------------------------------------------------


def bad_max_rows() -> InvalidArgumentsError:
    return InvalidArgumentsError("max_rows must be a positive integer.", invalid_params=("max_rows",))


def not_a_string() -> InvalidArgumentsError:
    return invalid("sql must be a string holding one SELECT statement.", "type")


def empty() -> InvalidArgumentsError:
    return invalid(f"The query is empty. {FIX_ONE_SELECT}.", "empty")


def too_long(length: int, most: int) -> InvalidArgumentsError:
    return invalid(f"The query has {length:,} characters; at most {most:,} are allowed.", "too-long")


def nul() -> InvalidArgumentsError:
    return invalid("The query contains a NUL character; remove it.", "nul")


def too_deep() -> InvalidArgumentsError:
    return invalid(
        "The query is nested too deeply to be checked; flatten it (fewer nested parentheses, "
        "brackets, NOTs, CASEs or casts, at most 64 array subscripts), for example with a CTE "
        "(WITH ...).",
        "too-deep",
    )


# --- reading the text -------------------------------------------------------------------------------


def syntax_error(message: str) -> InvalidArgumentsError:
    """PostgreSQL's own parser refused the caller's text with `message`."""
    return invalid(
        f"PostgreSQL cannot parse the query: {echo(message, 160)}. Fix the syntax; "
        f"{FIX_ONE_SELECT[0].lower()}{FIX_ONE_SELECT[1:]}.",
        "syntax",
    )


def no_statement() -> InvalidArgumentsError:
    return invalid(f"The query holds no statement, only comments or semicolons. {FIX_ONE_SELECT}.", "empty")


def multiple_statements(count: int) -> QueryViolationError:
    return violation(
        f"The query holds {count} statements; only one is allowed. "
        "Remove the extra statements (and the semicolons between them).",
        "multiple-statements",
    )


def multiple_statements_as_read(count: int) -> QueryViolationError:
    """sqlglot counted `count` statements where PostgreSQL counted one (fail closed)."""
    return violation(
        f"The query holds {count} statements as read by the validator; only one is "
        "allowed. Remove semicolons and any text after the statement.",
        "multiple-statements",
    )


def unsupported() -> InvalidArgumentsError:
    """The validator cannot read the text (or sqlglot's second opinion failed on it)."""
    return invalid(
        "The query uses syntax the validator does not support. Rewrite that part in "
        "plain PostgreSQL syntax: a function call instead of special syntax, or VALUES with "
        "ORDER BY / LIMIT wrapped in a subquery (FROM (VALUES ...) AS v(x)).",
        "unsupported-syntax",
    )


def limit_rewrite() -> InvalidArgumentsError:
    return invalid(
        "The query's row limit could not be applied safely; put the LIMIT on the outermost "
        "SELECT, or wrap the query: SELECT * FROM (<query>) AS q.",
        "limit-rewrite",
    )


# --- what the query does ----------------------------------------------------------------------------


def not_a_query(kind: str | None = None) -> QueryViolationError:
    """The root is not a SELECT, VALUES or set operation; `kind` is PostgreSQL's statement kind."""
    lead = "Only SELECT, VALUES and set operations are allowed"
    if kind is None:
        return violation(f"{lead}. {FIX_ONE_SELECT}.", "root-not-select")
    fix = _STATEMENT_FIX.get(kind, FIX_ONE_SELECT)
    return violation(
        f"{lead}, not {kind.removesuffix('Stmt')} statements. {fix}.", "root-not-select", node=kind
    )


def data_modifying(statement: str, **extra: str) -> QueryViolationError:
    return violation(
        f"The query is not allowed: data-modifying statements ({statement}) are not allowed, "
        "also not inside a CTE.",
        "data-modifying",
        **extra,
    )


def select_into(**extra: str) -> QueryViolationError:
    return violation(
        "The query is not allowed: SELECT ... INTO creates a table; remove the INTO clause.",
        "select-into",
        **extra,
    )


def row_lock(**extra: str) -> QueryViolationError:
    return violation(
        "The query is not allowed: row locks (FOR UPDATE / FOR SHARE) are not allowed; remove them.",
        "row-lock",
        **extra,
    )


def bind_parameter(forms: str, **extra: str) -> QueryViolationError:
    """`forms`: the spellings of a parameter the parser that found it reads ("$1", ...)."""
    return violation(
        f"The query is not allowed: bind parameters ({forms}) are not supported; "
        "write the values inline as literals.",
        "bind-parameter",
        **extra,
    )


def opaque_command(command: str) -> QueryViolationError:
    return violation(
        f"The query is not allowed: {echo(command.upper(), 32)} is a command the "
        f"validator cannot inspect. {FIX_ONE_SELECT}.",
        "opaque-command",
    )


def refused_node(kind: str) -> QueryViolationError:
    """PostgreSQL's node `kind`, outside the allowlist: with its own reason when it has one."""
    if kind in DATA_MODIFYING:
        return data_modifying(kind.removesuffix("Stmt").upper(), node=kind)
    if kind == "ParamRef":
        return bind_parameter("$1", node=kind)
    if kind == "IntoClause":
        return select_into(node=kind)
    if kind == "LockingClause":
        return row_lock(node=kind)
    return violation(
        f"The query contains a construct that is not allowed ({kind}). {FIX_ONE_SELECT} that only reads.",
        "forbidden-node",
        node=kind,
    )


def forbidden_construct(kind: str) -> QueryViolationError:
    """sqlglot's expression class `kind` is refused."""
    return violation(
        f"The query is not allowed: it contains a {kind.upper()} construct. "
        f"{FIX_ONE_SELECT} that only reads.",
        "forbidden-node",
    )


def denied_function(name: str, reason: str) -> QueryViolationError:
    """`reason`: the denylist's, for `name` as the caller wrote it (schema included)."""
    return violation(
        f"The function {echo(name, NAME_ECHO_CHARS)}() is not allowed: {reason}. Remove it from the query.",
        "denied-function",
        function=echo(name, NAME_ECHO_CHARS),
    )


def oversized_value(name: str, size: int, most: int) -> QueryViolationError:
    return violation(
        f"{name}() with a length of {size:,} would build a huge value in the "
        f"server's memory; use a length of at most {most:,}.",
        "oversized-value",
        function=echo(name, NAME_ECHO_CHARS),
    )


def catalogue(what: str, reason: str) -> QueryViolationError:
    """The catalogue rule (`catalogue`): `what` is refused because it `reason` (a verb phrase)."""
    return violation(
        f"The query is not allowed: {echo(what, NAME_ECHO_CHARS)} {reason}. Read the tables, columns "
        "and comments the role may read with the sql_schema tool, or in information_schema, which "
        "PostgreSQL filters by the role's privileges.",
        "catalogue",
        object=echo(what, NAME_ECHO_CHARS),
    )


def unlisted_function(name: str, reason: str) -> QueryViolationError:
    """The function allow-list (`allowlist`): `name` (as written) is refused because it `reason`."""
    return violation(
        f"The function {echo(name, NAME_ECHO_CHARS)}() is not allowed: it {reason}. Remove it from "
        "the query; docs/tools/read_only_sql.md lists the families of functions a query may call.",
        "function-allow-list",
        function=echo(name, NAME_ECHO_CHARS),
    )


def unlisted_type(name: str, reason: str) -> QueryViolationError:
    """The type allow-list (`allowlist`): the type `name` (as written) is refused because it `reason`."""
    return violation(
        f"The type {echo(name, NAME_ECHO_CHARS)} is not allowed: it {reason}. Cast to an ordinary type, "
        "or name a table or column type the role may read: sql_schema lists them.",
        "type-allow-list",
        type=echo(name, NAME_ECHO_CHARS),
    )


def attribute_call(name: str, reason: str) -> QueryViolationError:
    """`x.name` / `(x).name`: PostgreSQL reads it as `name(x)` (or `x::name`) when `name` is not a
    column there, and that call `reason` (a verb phrase about `name`)."""
    shown = echo(name, NAME_ECHO_CHARS)
    return violation(
        f"The query is not allowed: .{shown} in attribute notation (x.{shown}, (x).{shown}) is, "
        f"where {shown} is not a column, PostgreSQL's call {shown}(x), and {shown} {reason}. Name "
        "the column without its qualifier, or rename it in a subquery (SELECT ... AS other_name).",
        "attribute-call",
        function=shown,
    )


def uninterruptible(what: str) -> QueryViolationError:
    """XML (`what`: the construct, function or type) runs in libxml2, which PostgreSQL cannot stop."""
    shown = echo(what, NAME_ECHO_CHARS)
    return violation(
        f"The query is not allowed: {shown} is XML, which PostgreSQL hands to libxml2, "
        f"{UNINTERRUPTIBLE}. The operator may allow XML for this source (MCP_SQL_ALLOW_XML).",
        "uninterruptible",
        object=shown,
    )


def built_operand(what: str) -> QueryViolationError:
    """Containment or parsing (`what`: the operation and what it is over) of a value the query
    builds, which PostgreSQL cannot interrupt until it ends (`policy.built`)."""
    shown = echo(what, NAME_ECHO_CHARS * 2)
    return violation(
        f"The query is not allowed: {shown}. A value the query builds can be hundreds of MB, and "
        "PostgreSQL does not interrupt this work on one value until it ends, so it keeps the backend "
        "busy past the statement timeout. Apply it to stored columns and literals (filter rows rather "
        "than build one large value), or the operator may allow it for this source "
        "(MCP_SQL_ALLOW_UNINTERRUPTIBLE).",
        "uninterruptible",
        object=shown,
    )


def newer_syntax(construct: str, needs: int, server: int) -> QueryViolationError:
    """The construct `construct` is read as syntax from release `needs` (server_version_num) on;
    the server, release `server`, reads the same words as a function call the policy never saw."""
    return violation(
        f"The query is not allowed: it uses SQL/JSON syntax ({construct}) that PostgreSQL reads as "
        f"such from version {needs // 10000} on; this server is version {server // 10000}, which "
        "reads the same words as a call of whatever function of that name its search path finds. "
        "Use the json/jsonb functions instead (json_build_object, jsonb_path_exists, ...).",
        "newer-syntax",
        node=construct,
    )


def identifier_by_value(name: str) -> QueryViolationError:
    """`name`'s text search configuration or dictionary is not a string literal: a number there picks
    one in any schema, whatever the role's privileges."""
    shown = echo(name, NAME_ECHO_CHARS)
    return violation(
        f"The function {shown}() is not allowed with that first argument: its text search "
        "configuration (or dictionary) must be written as a string literal, such as "
        f"{shown}('english', ...); a number or a computed value there picks one in any schema, "
        "whatever the role's privileges.",
        "identifier-argument",
        function=shown,
    )
